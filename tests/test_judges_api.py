"""The API judges through the real ``anthropic`` and ``openai`` SDK clients, with httpx.MockTransport replaying
each API's documented wire format: tool-use loops with web search, a malformed verdict retried, 429/5xx then
success, the third-judge path for both author families, and replay from the store without new requests."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import httpx2  # the anthropic and openai SDKs ship on httpx2 (httpx's API, its own package)
import pytest

from reviewbench.arena import JudgeSpec, Panel
from reviewbench.judges.anthropic_judge import AnthropicJudge
from reviewbench.judges.inputs import EarlierRef, build_inputs
from reviewbench.judges.openai_judge import OpenAIJudge
from reviewbench.judges.panel import PanelRunner, ResolvedPanel, resolve_panel
from reviewbench.judges.tools import ToolBox
from reviewbench.judges.websearch import WebSearch
from reviewbench.store import Store
from reviewbench.verdict import JudgeVerdict, decide

from conftest import EXAMPLE_ARENA

BUNDLE = EXAMPLE_ARENA / "submit" / "agent1-003"
CLAUDE = JudgeSpec(family="anthropic", provider="anthropic", model="claude-sonnet-4-5")
GPT = JudgeSpec(family="openai", provider="openai", model="gpt-5")

ARXIV_ATOM = """<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
  <title>arXiv Query: search_query=all:heavy AND all:hitter</title>
  <entry>
    <id>http://arxiv.org/abs/2306.14048v3</id>
    <published>2023-06-24T05:07:49Z</published>
    <title>H$_2$O: Heavy-Hitter Oracle for Efficient Generative Inference of Large Language Models</title>
    <summary>Large Language Models, despite their recent impressive accomplishments, are notably cost-prohibitive.</summary>
    <author><name>Zhenyu Zhang</name></author>
    <author><name>Ying Sheng</name></author>
  </entry>
</feed>"""


@pytest.fixture
def inputs():
    return build_inputs(
        submission_id="agent1-003", board="C", board_setting="decode-time eviction",
        method_src=(BUNDLE / "method.py").read_text(), description=(BUNDLE / "DESCRIPTION.md").read_text(),
        audit_summary="20 tool calls", audit_findings=[], evidence_lines=["harness: not run"],
        earlier=[EarlierRef(id="agent2-003", agent="agent2", board="C", short_name="kvprior",
                            path=str(EXAMPLE_ARENA / "submit" / "agent2-003"))],
        log_dir=EXAMPLE_ARENA / "logs" / "agent1")


def verdict_input(novelty=2, effectiveness=2, soundness=2, flags=()):
    return {"scores": {"novelty": {"score": novelty, "rationale": "extrapolated trend on top of H2O-style EMA"},
                       "effectiveness": {"score": effectiveness, "rationale": "no verified numbers"},
                       "soundness": {"score": soundness, "rationale": "accurate description"}},
            "flags": list(flags),
            "prior_work": [{"title": "H2O: Heavy-Hitter Oracle", "arxiv_id": "2306.14048", "relation": "base"}],
            "citations_checked": [{"citation": "Zhang et al., 2023, arXiv 2306.14048", "status": "real"}],
            "summary": "An H2O variant with a trend term."}


# --- Anthropic Messages API wire format ---------------------------------------------------------------------
def anthropic_message(content, stop="tool_use", searches=0, i=1200, o=300):
    usage = {"input_tokens": i, "output_tokens": o}
    if searches:
        usage["server_tool_use"] = {"web_search_requests": searches}
    return {"id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5-20250929", "content": content, "stop_reason": stop, "stop_sequence": None,
            "usage": usage}


def tool_use(name, args, uid):
    return {"type": "tool_use", "id": uid, "name": name, "input": args}


class Script:
    """Replays queued responses in order and keeps every request body."""

    def __init__(self, responses):
        self.responses = list(responses)
        self.requests: list[dict] = []

    def __call__(self, request):
        self.requests.append(json.loads(request.content))
        status, body, headers = self.responses.pop(0)
        return httpx2.Response(status, json=body, headers=headers)


def anthropic_client(script):
    return AnthropicJudge(api_key="sk-ant-test", http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(script)))


def openai_client(script):
    return OpenAIJudge(api_key="sk-test", http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(script)))


def runner(inputs, rubric, clients, store=None, author="anthropic", web=None):
    return PanelRunner(inputs=inputs, rubric=rubric, author_family=author, store=store,
                       make_provider=lambda spec, _inputs: clients[spec.provider],
                       make_web=web or (lambda: None))


def test_anthropic_tool_loop_with_server_web_search_and_a_malformed_verdict_retried(inputs, rubric):
    script = Script([
        (200, anthropic_message([
            {"type": "text", "text": "The code keeps an EMA of attention. Searching for prior work."},
            {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search",
             "input": {"query": "attention trend extrapolation KV cache eviction decode"}},
            {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01", "content": [
                {"type": "web_search_result", "url": "https://arxiv.org/abs/2306.14048",
                 "title": "H2O: Heavy-Hitter Oracle for Efficient Generative Inference", "encrypted_content": "Eqg",
                 "page_age": "June 2023"}]},
            tool_use("prior_art_search", {"query": "accumulated attention forgetting factor"}, "toolu_01")],
            searches=1), {}),
        (200, anthropic_message([tool_use("read_author_related_work", {}, "toolu_02")]), {}),
        (200, anthropic_message([tool_use("submit_verdict", verdict_input(novelty=7), "toolu_03")]), {}),
        (200, anthropic_message([tool_use("submit_verdict", verdict_input(novelty=2), "toolu_04")], stop="end_turn"), {}),
    ])
    r = runner(inputs, rubric, {"anthropic": anthropic_client(script)})
    out = asyncio.run(r.run_one(r.task(CLAUDE, "primary", "claude")))
    assert out.verdict is not None and out.verdict.score("novelty") == 2 and out.error is None
    assert out.invalid_outputs and "novelty" in out.invalid_outputs[0]
    names = [c.name for c in out.tool_calls]
    assert names == ["web_search", "prior_art_search", "read_author_related_work"]
    assert out.tool_calls[0].server_side and "2306.14048" in out.tool_calls[0].result
    assert "A2SF" in out.tool_calls[1].result  # the packaged index found the forgetting-factor paper
    assert "H2O (Zhang et al., 2023" in out.tool_calls[2].result  # related work released after the searches
    # wire format: the server tool is declared, results go back as tool_result blocks, the bad verdict as an error
    first = script.requests[0]
    assert {"type": "web_search_20250305", "name": "web_search", "max_uses": 8} in first["tools"]
    assert "Relation to prior work" not in first["messages"][0]["content"]  # withheld from the first prompt
    second = script.requests[1]["messages"][-1]["content"][0]
    assert second["type"] == "tool_result" and second["tool_use_id"] == "toolu_01"
    retry = script.requests[3]["messages"][-1]["content"][0]
    assert retry["is_error"] and "invalid verdict" in retry["content"]
    assert out.usage.calls == 4 and out.usage.web_searches == 1 and out.usage.input_tokens == 4800
    assert out.usage.cost_usd == pytest.approx(4800 * 3e-6 + 1200 * 15e-6 + 0.01)


def test_related_work_is_refused_before_any_search(inputs):
    tools = ToolBox(inputs=inputs)
    text, err = asyncio.run(tools.call("read_author_related_work", {}))
    assert err and "search for prior work first" in text


def test_anthropic_429_is_retried_with_backoff_then_succeeds(inputs, rubric):
    script = Script([
        (429, {"type": "error", "error": {"type": "rate_limit_error", "message": "Number of requests exceeded"}},
         {"retry-after-ms": "5"}),
        (529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, {"retry-after-ms": "5"}),
        (200, anthropic_message([tool_use("submit_verdict", verdict_input(), "toolu_01")]), {}),
    ])
    r = runner(inputs, rubric, {"anthropic": anthropic_client(script)})
    out = asyncio.run(r.run_one(r.task(CLAUDE, "primary", "claude")))
    assert out.verdict is not None and len(script.requests) == 3


def test_anthropic_persistent_errors_give_no_verdict_not_a_zero(inputs, rubric):
    err = (400, {"type": "error", "error": {"type": "invalid_request_error", "message": "bad model"}}, {})
    r = runner(inputs, rubric, {"anthropic": anthropic_client(Script([err]))})
    out = asyncio.run(r.run_one(r.task(CLAUDE, "primary", "claude")))
    assert out.verdict is None and "bad model" in out.error


# --- OpenAI Chat Completions wire format ---------------------------------------------------------------------
def chat_completion(calls=None, content=None, i=1000, o=200):
    msg = {"role": "assistant", "content": content, "refusal": None}
    if calls:
        msg["tool_calls"] = [{"id": f"call_{n}", "type": "function",
                              "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)}}
                             for n, (name, args) in enumerate(calls)]
    return {"id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG", "object": "chat.completion", "created": 1764662400,
            "model": "gpt-5-2025-08-07", "choices": [{"index": 0, "message": msg, "logprobs": None,
                                                      "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": i, "completion_tokens": o, "total_tokens": i + o}}


def test_openai_function_tools_client_web_search_5xx_and_bad_json_retried(inputs, rubric):
    script = Script([
        (500, {"error": {"message": "The server had an error", "type": "server_error"}}, {"retry-after-ms": "5"}),
        (200, chat_completion([("web_search", {"query": "heavy hitter attention eviction"}),
                               ("prior_art_search", {"query": "attention trend extrapolation", "k": 3})]), {}),
        (200, chat_completion([("submit_verdict", '{"scores": {"novelty": ')]), {}),  # truncated JSON
        (200, chat_completion([("submit_verdict", verdict_input(novelty=3))]), {}),
    ])
    arxiv = httpx.MockTransport(lambda req: httpx.Response(200, text=ARXIV_ATOM)
                                if req.url.host == "export.arxiv.org" else httpx.Response(404))
    r = runner(inputs, rubric, {"openai": openai_client(script)},
               web=lambda: WebSearch(client=httpx.AsyncClient(transport=arxiv), use_ddgs=False))
    out = asyncio.run(r.run_one(r.task(GPT, "primary", "gpt")))
    assert out.verdict is not None and out.verdict.score("novelty") == 3
    assert out.invalid_outputs and "not valid JSON" in out.invalid_outputs[0]
    web = out.tool_calls[0]
    assert web.name == "web_search" and not web.error and "Heavy-Hitter Oracle" in web.result
    assert "2306.14048" in web.result
    body = script.requests[1]
    assert "temperature" not in body  # gpt-5 accepts only its default
    assert {t["function"]["name"] for t in body["tools"]} >= {"web_search", "submit_verdict", "search_log"}
    tool_msgs = [m for m in script.requests[2]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_msgs] == ["call_0", "call_1"]


def test_openai_compatible_server_needs_no_key(inputs, rubric, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    script = Script([(200, chat_completion([("submit_verdict", verdict_input())]), {})])
    judge = OpenAIJudge(base_url="http://localhost:8000/v1", compatible=True,
                        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(script)))
    spec = JudgeSpec(family="qwen", provider="openai_compatible", model="Qwen3-32B", base_url="http://localhost:8000/v1")
    r = PanelRunner(inputs=inputs, rubric=rubric, author_family="anthropic", store=None,
                    make_provider=lambda s, i: judge, make_web=lambda: None)
    out = asyncio.run(r.run_one(r.task(spec, "primary", "qwen")))
    assert out.verdict is not None and script.requests[0]["temperature"] == 0.0 and out.usage.cost_usd == 0.0


# --- the panel: third judge and replay ------------------------------------------------------------------------
def split_scripts(claude_novelty, gpt_novelty, tie_novelty):
    claude = Script([(200, anthropic_message([tool_use("submit_verdict", verdict_input(claude_novelty), "t1")]), {}),
                     (200, anthropic_message([tool_use("submit_verdict", verdict_input(tie_novelty), "t2")]), {})])
    gpt = Script([(200, chat_completion([("submit_verdict", verdict_input(gpt_novelty))]), {}),
                  (200, chat_completion([("submit_verdict", verdict_input(tie_novelty))]), {})])
    return claude, gpt


@pytest.mark.parametrize("author, third", [("anthropic", "openai"), ("openai", "anthropic")])
def test_a_split_calls_a_third_judge_of_the_family_that_did_not_write_it(inputs, rubric, tmp_path, author, third):
    claude, gpt = split_scripts(4, 1, 2)
    store = Store(tmp_path / "s.sqlite")
    r = runner(inputs, rubric, {"anthropic": anthropic_client(claude), "openai": openai_client(gpt)}, store, author)
    panel = ResolvedPanel(judges=[CLAUDE, GPT], local=False, note="api")
    result = asyncio.run(r.run(panel))
    assert result.tie_break.needed and result.tie_break.family == third
    assert "novelty" in result.tie_break.reasons[0]
    roles = [(o.family, o.role) for o in result.outcomes]
    assert roles == [("anthropic", "primary"), ("openai", "primary"), (third, "tie_break")]
    assert len((gpt if third == "openai" else claude).requests) == 2
    assert len((claude if third == "openai" else gpt).requests) == 1
    final = decide([o.verdict for o in result.outcomes], rubric, author, corpus=result.corpus)
    assert final.status == "complete" and final.scores["novelty"] == 2  # the middle of 4, 1, 2
    # a rerun replays all three runs from the store: no request reaches either API
    claude2, gpt2 = split_scripts(0, 0, 0)
    r2 = runner(inputs, rubric, {"anthropic": anthropic_client(claude2), "openai": openai_client(gpt2)}, store, author)
    again = asyncio.run(r2.run(panel))
    assert all(o.cached for o in again.outcomes) and not claude2.requests and not gpt2.requests
    assert [o.verdict.score("novelty") for o in again.outcomes] == [4, 1, 2]


def test_a_flag_whose_quote_is_not_in_the_inputs_is_dropped(inputs, rubric):
    real = {"flag": "MISSING_ATTRIBUTION", "quote": "Score = level + 4 * trend", "location": "DESCRIPTION.md:15",
            "explanation": "x"}
    fake = {"flag": "FABRICATED_EVIDENCE", "quote": "we reach 99.9% on RULER", "location": "DESCRIPTION.md:3",
            "explanation": "y"}
    claude = Script([(200, anthropic_message([tool_use("submit_verdict", verdict_input(flags=[real, fake]), "t")]), {})])
    gpt = Script([(200, chat_completion([("submit_verdict", verdict_input(flags=[real, fake]))]), {})])
    r = runner(inputs, rubric, {"anthropic": anthropic_client(claude), "openai": openai_client(gpt)})
    result = asyncio.run(r.run(ResolvedPanel(judges=[CLAUDE, GPT], local=False, note="api")))
    final = decide([o.verdict for o in result.outcomes], rubric, "anthropic", corpus=result.corpus)
    assert [f.flag for f in final.standing_flags] == ["MISSING_ATTRIBUTION"]
    assert {d.claim.flag for d in final.dropped_flags} == {"FABRICATED_EVIDENCE"}


def test_without_keys_the_local_panel_runs_and_says_so():
    panel = Panel()
    local = resolve_panel(panel, env={})
    assert local.local and {j.provider for j in local.judges} == {"local"}
    assert "LOCAL" in local.note and "ANTHROPIC_API_KEY" in local.note and "OPENAI_API_KEY" in local.note
    api = resolve_panel(panel, env={"ANTHROPIC_API_KEY": "a", "OPENAI_API_KEY": "b"})
    assert not api.local and [j.provider for j in api.judges] == ["anthropic", "openai"]


def test_verdict_schema_follows_the_rubric(rubric):
    from reviewbench.judges.schema import verdict_schema

    s = verdict_schema(rubric)
    crit = s["properties"]["scores"]["properties"]
    assert crit["novelty"]["properties"]["score"]["maximum"] == 5 and crit["soundness"]["properties"]["score"]["maximum"] == 3
    assert s["properties"]["flags"]["items"]["properties"]["flag"]["enum"] == [f.id for f in rubric.flags]


def test_prior_submission_and_log_search_tools(inputs):
    tools = ToolBox(inputs=inputs)
    text, err = asyncio.run(tools.call("read_prior_submission", {"submission_id": "agent2-003"}))
    assert not err and "agent2-003/method.py" in text and f"untrusted-{inputs.tag}" in text
    text, err = asyncio.run(tools.call("read_prior_submission", {"submission_id": "agent3-001"}))
    assert err and "agent2-003" in text  # only earlier submissions, and it says which exist
    text, err = asyncio.run(tools.call("search_log", {"text": "huggingface.co"}))
    assert not err and ".jsonl:" in text
    assert JudgeVerdict  # imported for the type; silence linters
