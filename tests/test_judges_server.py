"""A real OpenAI-compatible server on loopback: ``transformers serve`` with the embedded SmolLM2-135M checkpoint,
two ``openai_compatible`` judges of the example arena pointed at it (one in ``output = "json_schema"`` mode, one
with tools), and ``review`` run on an example submission through it.

What it proves is the wire path: requests real servers accept (``content: ""``, ``max_tokens``, the per-judge
timeout, ``max_context`` cutting the prompt), answers read back, and — a 135M model rarely writes a schema-valid
verdict, and ``transformers serve`` ignores ``response_format`` — whatever the model wrote recorded per judge:
a verdict when it managed one, else the judge's error with the invalid outputs that were sent back.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import run_review

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server():
    from transformers.utils.import_utils import is_serve_available

    if not is_serve_available():
        pytest.skip("transformers serve needs fastapi and uvicorn (pip install -e '.[dev]')")
    from harness.model import embedded_checkpoint

    try:
        model = str(embedded_checkpoint())
    except FileNotFoundError as e:
        pytest.skip(f"no embedded checkpoint: {e}")
    exe = Path(sys.executable).with_name("transformers")
    port = free_port()
    proc = subprocess.Popen([str(exe), "serve", model, "--host", "127.0.0.1", "--port", str(port), "--device", "cpu",
                             "--dtype", "float32"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 180
    while time.time() < deadline:
        if proc.poll() is not None:
            pytest.skip(f"transformers serve exited {proc.returncode}: {(proc.stderr.read() if proc.stderr else '')[-300:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            time.sleep(1)
    else:
        proc.kill()
        pytest.skip("transformers serve did not answer /health within 180 s")
    yield f"http://127.0.0.1:{port}/v1", model
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.mark.heavy  # a 135M model generating on CPU behind `transformers serve` (80 s): `make test-all`
def test_review_through_a_real_openai_compatible_server(server, arena):
    base_url, model = server
    # the boards' starting bars are not what this test is about (and need a benchmark run): drop them
    toml = "".join(line for line in (arena / "arena.toml").read_text().splitlines(keepends=True)
                   if not line.startswith("bars ="))
    head = toml[:toml.index("[[panel.judges]]")]
    tail = toml[toml.index("[points]"):]
    judges = "".join(f'''[[panel.judges]]
family = "{family}"
provider = "openai_compatible"
model = "{model}"
base_url = "{base_url}"
output = "{output}"
web_search = false
max_tokens = 96
max_context = 3072
timeout = 240
max_steps = 2

''' for family, output in (("huggingface", "json_schema"), ("meta", "tools")))
    (arena / "arena.toml").write_text(head + judges + tail)
    t0 = time.time()
    env = {**os.environ, "REVIEWBENCH_OFFLINE": "1"}
    r = subprocess.run([sys.executable, "-m", "reviewbench", "submit/agent1-003", "--json", "--skip",
                        "evidence,harness,benchmark"], cwd=arena, capture_output=True, text=True, timeout=900,
                       env=env)
    seconds = time.time() - t0
    assert r.stdout, r.stderr[-2000:]
    report = json.loads(r.stdout)
    # a 135M model mostly writes no schema-valid verdict: then the headline says no judge ran, and why
    assert report["headline"].startswith(("Judged by the configured API panel: openai_compatible:", "No judges ran"))
    judges = next(s for s in report["stages"] if s["name"] == "judges")
    outcomes = (judges.get("data") or {}).get("outcomes")
    if outcomes is None:  # every judge failed: the stage reports each judge's error in its reason
        reason = judges["reason"] or ""
        assert "huggingface" in reason and "meta" in reason, judges
        assert "Connection" not in reason and ("steps" in reason or "invalid" in reason)  # the server answered
        print(f"review through transformers serve: {seconds:.0f} s; no verdict: {reason[:400]}")
        return
    assert [o["family"] for o in outcomes[:2]] == ["huggingface", "meta"]
    for o in outcomes[:2]:
        assert o["usage"]["calls"] >= 1 and o["usage"]["input_tokens"] > 0  # the server answered, tokens counted
        assert (o["verdict"] is not None) != bool(o["error"])  # a verdict, or the recorded reason there is none
        if o["verdict"] is None:
            assert o["invalid_outputs"] or "steps" in o["error"]
    print(f"review through transformers serve: {seconds:.0f} s; "
          + "; ".join(f"{o['judge_id']}: {o['usage']['calls']} calls, {o['usage']['input_tokens']} in / "
                      f"{o['usage']['output_tokens']} out, {o['seconds']} s, "
                      f"{'verdict' if o['verdict'] else 'error: ' + o['error'][:120]}" for o in outcomes))
