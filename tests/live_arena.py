"""A live copy of the example arena for end-to-end runs that take minutes, not hours: board A with one test item
of 512 tokens and two budgets, the Overall without the CPU-time term (so two runs of the same review give the
same points), and two judges on a loopback OpenAI-compatible server that always submits the same verdict."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from conftest import EXAMPLE_ARENA, ROOT
from test_judges_api import chat_completion, verdict_input

ARENA_TOML = """[arena]
name = "small"

[[boards]]
name = "A"
setting = "query-aware prefill"
budgets = [0.05, 0.10]
query_aware = true
phase = "prefill"
items = 1
length = 512
weights = {{ accuracy = 0.7, memory = 0.15, speed = 0.15, overhead = 0.0 }}

[[agents]]
id = "agent1"
family = "anthropic"

[[agents]]
id = "agent2"
family = "anthropic"

[harness]
claim_items = 1
{harness}
[panel]
rubric = "default"

[[panel.judges]]
family = "qwen"
provider = "openai_compatible"
model = "fixed-a"
base_url = "http://127.0.0.1:{port}/v1"
web_search = false
timeout = 60

[[panel.judges]]
family = "meta"
provider = "openai_compatible"
model = "fixed-b"
base_url = "http://127.0.0.1:{port}/v1"
web_search = false
timeout = 60
"""


def env() -> dict[str, str]:
    return {**os.environ, "REVIEWBENCH_OFFLINE": "1", "PYTHONPATH": str(ROOT)}


def review_cli(*args: str, timeout: float = 1800) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reviewbench", *args], capture_output=True, text=True,
                          timeout=timeout, env=env())


def make_small_arena(dst: Path, port: int, submissions: tuple[str, ...] = ("agent1-002", "agent2-002"),
                     harness: str = "") -> Path:
    """The arena at ``dst`` with its hidden test split written by ``review harness split`` (1 item)."""
    (dst / "submit").mkdir(parents=True)
    (dst / "reviews").mkdir()
    shutil.copytree(EXAMPLE_ARENA / "logs", dst / "logs")
    for s in submissions:
        shutil.copytree(EXAMPLE_ARENA / "submit" / s, dst / "submit" / s)
    (dst / "arena.toml").write_text(ARENA_TOML.format(port=port, harness=harness))
    r = review_cli("harness", "split", "--arena", str(dst), "--board", "A", "--items", "1", timeout=600)
    assert r.returncode == 0, r.stderr
    return dst


@contextmanager
def fixed_judges() -> Iterator[int]:
    """A loopback OpenAI-compatible server whose every answer submits the same verdict; yields its port."""
    body = json.dumps(chat_completion([("submit_verdict", verdict_input())])).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's name)
            self.rfile.read(int(self.headers.get("content-length", 0)))
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_port
    finally:
        server.shutdown()
