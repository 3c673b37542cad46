"""One judge's bad response never discards the other judge's verdict: two OpenAI-compatible judges against real
HTTP servers on loopback, one answering properly, the other with an HTML page, a non-UTF-8 body, a truncated JSON
body (all with HTTP 200) or a 500. The error is recorded for that judge alone."""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from reviewbench.arena import JudgeSpec
from reviewbench.judges.inputs import build_inputs
from reviewbench.judges.panel import PanelRunner, ResolvedPanel, default_provider

from conftest import EXAMPLE_ARENA
from test_judges_api import chat_completion, verdict_input

BUNDLE = EXAMPLE_ARENA / "submit" / "agent1-003"
BAD = {
    "html": (200, "text/html", b"<html><body><h1>502 Bad Gateway</h1></body></html>"),
    "not_utf8": (200, "application/json", b"\xff\xfe\x00{\"id\": \x93broken\x94}"),
    "truncated_json": (200, "application/json", b'{"id": "chatcmpl-1", "object": "chat.completion", "choices": [{"ind'),
    "http_500": (500, "application/json", b'{"error": {"message": "model crashed", "type": "server_error"}}'),
}


def serve(reply):
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's name)
            self.rfile.read(int(self.headers.get("content-length", 0)))
            status, ctype, body = reply()
            self.send_response(status)
            self.send_header("content-type", ctype)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.mark.parametrize("kind", sorted(BAD))
def test_a_bad_body_from_one_judge_keeps_the_other_judges_verdict(kind, rubric):
    good_body = json.dumps(chat_completion([("submit_verdict", verdict_input())])).encode()
    good = serve(lambda: (200, "application/json", good_body))
    bad = serve(lambda: BAD[kind])
    try:
        specs = [JudgeSpec(family="qwen", provider="openai_compatible", model="good", web_search=False, timeout=20,
                           base_url=f"http://127.0.0.1:{good.server_port}/v1"),
                 JudgeSpec(family="meta", provider="openai_compatible", model="bad", web_search=False, timeout=20,
                           base_url=f"http://127.0.0.1:{bad.server_port}/v1")]
        inputs = build_inputs(submission_id="agent1-003", board="C", board_setting="",
                              method_src=(BUNDLE / "method.py").read_text(),
                              description=(BUNDLE / "DESCRIPTION.md").read_text(), audit_summary=None,
                              audit_findings=[], evidence_lines=[], earlier=[], log_dir=None, classify=False)
        runner = PanelRunner(inputs=inputs, rubric=rubric, author_family="anthropic", store=None,
                             make_provider=default_provider, make_web=lambda: None)
        result = asyncio.run(runner.run(ResolvedPanel(judges=specs, local=False, note="two servers")))
    finally:
        good.shutdown()
        bad.shutdown()
    ok, failed = result.outcomes[0], result.outcomes[1]
    assert ok.verdict is not None and ok.error is None and ok.verdict.score("novelty") == 2
    assert failed.verdict is None and failed.error and "\n" not in failed.error
    assert result.verdicts == 1 and result.no_verdict is None
    assert "no verdict from meta-bad" in result.tie_break.reasons[0]


def test_when_no_judge_gives_a_verdict_the_panel_result_says_so(rubric):
    bad = serve(lambda: BAD["html"])
    try:
        specs = [JudgeSpec(family=f, provider="openai_compatible", model=f, web_search=False, timeout=20,
                           base_url=f"http://127.0.0.1:{bad.server_port}/v1") for f in ("qwen", "meta")]
        inputs = build_inputs(submission_id="agent1-003", board="C", board_setting="", method_src="x = 1\n",
                              description="# T\n", audit_summary=None, audit_findings=[], evidence_lines=[],
                              earlier=[], log_dir=None, classify=False)
        runner = PanelRunner(inputs=inputs, rubric=rubric, author_family="anthropic", store=None,
                             make_provider=default_provider, make_web=lambda: None)
        result = asyncio.run(runner.run(ResolvedPanel(judges=specs, local=False, note="one bad server")))
    finally:
        bad.shutdown()
    assert result.verdicts == 0 and result.no_verdict and result.no_verdict.startswith("no counted judge")
    assert "qwen-qwen" in result.no_verdict and "meta-meta" in result.no_verdict
