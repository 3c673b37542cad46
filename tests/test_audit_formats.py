"""Reading logs in the layouts real clients and exporters write, with bounded memory.

Every log here is written in a real on-disk shape: Claude Code 2.1 JSONL (the synth writer follows the
real 2.1.214 sample), ``jq .``/``jq -s .`` exports of it, ``claude -p --output-format stream-json``, Codex
rollouts whose first record holds 200 KB of instructions (as 0.144's base_instructions do), the TypeScript
Codex CLI's pretty-printed ``{"session", "items"}`` document, ``codex exec --json`` events, HAR from mitmproxy.
"""

import functools
import json
import random
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from reviewbench.arena import Rules
from reviewbench.errors import UserError
from reviewbench.logs.audit import detect, run_audit
from reviewbench.logs.synth import ClaudeSession, CodexRollout, Step
from tests.conftest import ROOT, run_review

T0 = datetime(2026, 11, 3, 10, tzinfo=timezone.utc)
HOME = "/arena/agents/agent1"


def session(*commands: str, cwd: str = HOME) -> ClaudeSession:
    s = ClaudeSession(session="6a1f0c3e-2b7d-4c1a-9e8f-0d1c2b3a4f5e", cwd=cwd, start=T0, version="2.1.214")
    for c in commands:
        s.step(Step("Bash", {"command": c, "description": "run"}, "ok"), T0)
    return s


def cats(report):
    return sorted({f.category for f in report.findings})


def test_claude_transcript_pretty_printed_by_jq(tmp_path):
    s = session("ls", "cat /arena/data/test/niah_single.jsonl")
    p = tmp_path / "session.json"
    p.write_text("".join(json.dumps(json.loads(line), indent=2) + "\n" for line in s.lines))  # jq . session.jsonl
    assert detect(p)[:2] == ("claude", "json")
    r = run_audit([p], Rules(), agent="agent1")
    assert r.stats.events == 2 and cats(r) == ["test_split"] and r.stats.parse_warnings == 0
    (f,) = r.findings
    line = int(f.source.rsplit(":", 1)[1])  # the line where that record starts in the pretty file
    assert p.read_text().split("\n")[line - 1] == "{" and r.files[0].client == "Claude Code 2.1.214"


@pytest.mark.parametrize("indent", [2, None])
def test_claude_transcript_as_a_json_array(tmp_path, indent):
    s = session("cat /arena/data/test/niah_single.jsonl")
    p = tmp_path / "session.json"
    p.write_text(json.dumps([json.loads(line) for line in s.lines], indent=indent))  # jq -s . / jq -sc .
    r = run_audit([p], Rules(), agent="agent1")
    assert r.stats.events == 1 and cats(r) == ["test_split"]


def test_claude_stream_json_capture(tmp_path):
    """``claude -p --output-format stream-json --verbose``: init record (with cwd), then messages, then result."""
    lines = [
        {"type": "system", "subtype": "init", "cwd": HOME, "session_id": "s-1", "tools": ["Bash", "Read"],
         "model": "claude-opus-4-5", "permissionMode": "bypassPermissions", "apiKeySource": "none"},
        {"type": "assistant", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-opus-4-5",
                                          "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash",
                                                       "input": {"command": "curl -s https://example.org/x"}}],
                                          "stop_reason": None, "usage": {"input_tokens": 3, "output_tokens": 9}},
         "parent_tool_use_id": None, "session_id": "s-1", "uuid": "u-1"},
        {"type": "user", "message": {"role": "user", "content": [{"tool_use_id": "toolu_1", "type": "tool_result",
                                                                   "content": "ok"}]},
         "parent_tool_use_id": None, "session_id": "s-1", "uuid": "u-2"},
        {"type": "result", "subtype": "success", "is_error": False, "duration_ms": 2400, "num_turns": 2,
         "result": "done", "session_id": "s-1", "total_cost_usd": 0.01},
    ]
    p = tmp_path / "stream.jsonl"
    p.write_text("".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines))
    r = run_audit([p], Rules(agent_home="/arena/agents/{agent}"), agent_ids=["agent1"])
    assert cats(r) == ["network"] and r.findings[0].agent == "agent1"  # the agent from the init record's cwd
    assert r.files[0].agent_from == f"recorded cwd {HOME}"


def test_codex_rollout_whose_first_record_is_over_64_kib(tmp_path):
    r = CodexRollout(session="019f51c7-0077-7333-b07a-5e806546ff5c", cwd=HOME, start=T0)
    meta = json.loads(r.lines[0])
    meta["payload"]["base_instructions"] = {"text": "You are Codex. " + "Guidance. " * 20_000}  # ~200 KB
    r.lines[0] = json.dumps(meta, separators=(",", ":"))
    r.call("exec_command", {"cmd": "head -2 /arena/data/test/vt.jsonl", "workdir": HOME}, "ok", T0)
    p = tmp_path / "rollout-2026-11-03T10-00-00-019f51c7-0077-7333-b07a-5e806546ff5c.jsonl"
    p.write_text(r.text())
    assert len(r.lines[0]) > 150_000 and detect(p)[:2] == ("codex", "lines")
    rep = run_audit([tmp_path], Rules(), agent="agent1")  # folder mode: before, such a file was skipped silently
    assert cats(rep) == ["test_split"] and not rep.skipped_files and rep.files[0].client == "Codex CLI 0.144.1"


def test_typescript_codex_cli_json_document(tmp_path):
    """codex-cli (TypeScript, spring 2025) saved one pretty-printed JSON document per session."""
    doc = {"session": {"timestamp": "2025-04-20T10:00:00.000Z", "id": "b1c2", "instructions": "", "model": "o4-mini"},
           "items": [
               {"id": "msg_1", "type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
               {"id": "fc_1", "type": "function_call", "name": "shell", "call_id": "call_1", "status": "completed",
                "arguments": json.dumps({"command": ["bash", "-lc", "wget -q https://example.org/data.json"],
                                         "workdir": HOME})},
               {"type": "function_call_output", "call_id": "call_1",
                "output": json.dumps({"output": "", "metadata": {"exit_code": 0, "duration_seconds": 0.4}})}]}
    p = tmp_path / "rollout-2025-04-20-b1c2.json"
    p.write_text(json.dumps(doc, indent=2))
    assert detect(p)[:2] == ("codex", "json")
    r = run_audit([p], Rules(), agent="agent1")
    assert r.stats.events == 1 and cats(r) == ["network"] and r.files[0].client == "Codex CLI (TypeScript)"


def test_codex_exec_json_event_stream(tmp_path):
    events = [{"type": "thread.started", "thread_id": "0199a213-81c0-7800-8aa1-bbab2a035a53"},
              {"type": "turn.started"},
              {"type": "item.started", "item": {"id": "item_1", "type": "command_execution",
                                                "command": "bash -lc 'ls /arena/data/test'", "aggregated_output": "",
                                                "exit_code": None, "status": "in_progress"}},
              {"type": "item.completed", "item": {"id": "item_1", "type": "command_execution",
                                                  "command": "bash -lc 'ls /arena/data/test'",
                                                  "aggregated_output": "niah_single.jsonl\n", "exit_code": 0,
                                                  "status": "completed"}},
              {"type": "item.completed", "item": {"id": "item_2", "type": "web_search",
                                                  "query": "site:huggingface.co RULER niah"}},
              {"type": "turn.completed", "usage": {"input_tokens": 24763, "cached_input_tokens": 24448,
                                                   "output_tokens": 122}}]
    p = tmp_path / "exec.jsonl"
    p.write_text("".join(json.dumps(e) + "\n" for e in events))
    r = run_audit([p], Rules(), agent="agent1")
    assert r.stats.events == 2  # started + completed is one command
    assert cats(r) == ["huggingface", "test_split"]
    assert next(f for f in r.findings if f.category == "huggingface").rule.startswith("web search")


def test_har_streamed_from_a_pretty_printed_document(tmp_path):
    entries = [{"startedDateTime": "2026-11-03T10:00:0%dZ" % i, "time": 12.5,
                "request": {"method": "GET", "url": url, "httpVersion": "HTTP/2.0", "headers": [], "queryString": [],
                            "headersSize": -1, "bodySize": 0},
                "response": {"status": 200, "statusText": "OK", "headers": [], "content": {"size": 10, "mimeType": "text/html"},
                             "redirectURL": "", "headersSize": -1, "bodySize": 10},
                "serverIPAddress": "18.164.174.23", "timings": {"send": 0, "wait": 10, "receive": 2}}
               for i, url in enumerate(["https://github.com/NVIDIA/RULER", "https://huggingface.co/api/datasets/x"])]
    p = tmp_path / "flows.har"
    p.write_text(json.dumps({"log": {"version": "1.2", "creator": {"name": "mitmproxy", "version": "10.1.5"},
                                     "pages": [], "entries": entries}}, indent=2))
    r = run_audit([p], Rules(), agent="agent1")
    assert r.stats.events == 2 and cats(r) == ["huggingface"]


def test_json_array_log_in_a_folder_is_read(tmp_path):
    (tmp_path / "calls.json").write_text(json.dumps([
        {"tool": "bash", "args": {"command": "ls"}, "time": "2026-11-03T10:00:00Z", "cwd": HOME},
        {"tool": "bash", "args": {"command": "cat /arena/data/test/a.jsonl"}, "time": "2026-11-03T10:01:00Z",
         "cwd": HOME}], indent=2))
    r = run_audit([tmp_path], Rules(), agent="agent1")
    assert r.stats.events == 2 and cats(r) == ["test_split"] and not r.skipped_files


def test_windows_line_endings_and_a_byte_order_mark(tmp_path):
    s = session("cat /arena/data/test/a.jsonl")
    p = tmp_path / "s.jsonl"
    p.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(s.lines).encode() + b"\r\n")
    r = run_audit([p], Rules(), agent="agent1")
    assert cats(r) == ["test_split"]


def test_files_that_cannot_be_read_are_named_and_strict_fails(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "session.jsonl").write_text(session("cat /arena/data/test/a.jsonl").text())
    (logs / "notes.log").write_text("started the run at 10:00\nfinished\n")
    (logs / "old.jsonl.gz").write_bytes(b"\x1f\x8b\x08\x00junk")
    (logs / "README.md").write_text("# not a log\n")  # by its name: not a log at all, no warning
    (logs / "history.jsonl").write_text(json.dumps({"display": "fix the test", "pastedContents": {},
                                                   "timestamp": 1762164000000, "project": HOME}) + "\n")
    (logs / "todos").mkdir()
    (logs / "todos" / "s-agent-s.json").write_text("[]")
    r = run_audit([logs], Rules(), agent="agent1")
    assert {Path(s.path).name for s in r.skipped_files} == {"notes.log", "old.jsonl.gz"}
    assert r.stats.ignored_files == 3  # README.md, the prompt history, the todo list
    assert any("notes.log" in w.source and "skipped" in w.message for w in r.warnings)
    assert r.incomplete() and "notes.log" in r.incomplete()[0]
    ok = run_review("audit", str(logs), "--agent", "agent1")
    assert ok.returncode == 0 and "notes.log" in ok.stdout
    strict = run_review("audit", str(logs), "--agent", "agent1", "--strict")
    assert strict.returncode == 1 and "notes.log" in strict.stderr and "old.jsonl.gz" in strict.stderr
    clean = tmp_path / "clean"
    clean.mkdir()
    (clean / "session.jsonl").write_text(session("ls").text())
    assert run_review("audit", str(clean), "--agent", "agent1", "--strict").returncode == 0


def test_truncated_pretty_json_is_a_warning(tmp_path):
    s = session("cat /arena/data/test/a.jsonl", "ls")
    text = json.dumps([json.loads(line) for line in s.lines], indent=2)
    p = tmp_path / "s.json"
    p.write_text(text[: int(len(text) * 0.8)])  # the writer was killed
    r = run_audit([p], Rules(), agent="agent1")
    assert cats(r) == ["test_split"] and any("truncated" in w.message for w in r.warnings)
    assert r.stats.unread_records == 1


def test_an_unterminated_string_is_scanned_in_linear_time(tmp_path):
    p = tmp_path / "s.json"
    p.write_text('[{"type": "assistant", "message": {"content": "' + "ab\\\"" * 1_500_000)  # 6 MB, never closed
    t = time.perf_counter()
    r = run_audit([p], Rules(), fmt="claude", agent="agent1")
    assert time.perf_counter() - t < 20  # (catastrophic backtracking would take hours)
    assert r.stats.unread_records >= 1


# VmHWM, not ru_maxrss: Linux carries ru_maxrss over fork and exec, so a child of a big pytest process would
# report the parent's size
MEMORY_PROBE = """
import re, sys
from pathlib import Path
from reviewbench.arena import Rules
from reviewbench.logs.audit import run_audit
r = run_audit([Path(sys.argv[1])], Rules(), agent="agent1")
print(int(re.search(r"VmHWM:\\s+(\\d+)", Path("/proc/self/status").read_text()).group(1)) // 1024)
print(r.model_dump_json())
"""


def _audit_in_subprocess(path: Path) -> tuple[int, dict]:
    out = subprocess.run([sys.executable, "-c", MEMORY_PROBE, str(path)], capture_output=True, text=True, check=True,
                         cwd=ROOT, timeout=600)
    peak, report = out.stdout.split("\n", 1)
    return int(peak), json.loads(report)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="peak RSS read from /proc (Linux)")
@pytest.mark.parametrize("layout", ["lines", "json"])
def test_a_64_mb_record_costs_bounded_memory_and_the_audit_goes_on(tmp_path, layout):
    s = session()
    s.step(Step("Bash", {"command": "python dump.py"}, "x" * (64 << 20)), T0)  # its result line: 128 MB
    s.step(Step("Bash", {"command": "cat /arena/data/test/a.jsonl"}, "ok"), T0)
    p = tmp_path / ("s.jsonl" if layout == "lines" else "s.json")
    if layout == "lines":
        p.write_text(s.text())
    else:
        p.write_text(json.dumps([json.loads(line) for line in s.lines], indent=1))
    del s
    peak_mb, report = _audit_in_subprocess(p)
    # the interpreter and reviewbench take ~40 MB; the record cap (32 MiB) bounds the rest
    assert peak_mb < 150, peak_mb
    over = [w for w in report["warnings"] if "over the 32 MiB cap" in w["message"]]
    assert len(over) == 1 and report["stats"]["overlong_records"] == 1
    assert report["stats"]["events"] == 2  # both calls, the big one's result was the skipped record
    assert [f["category"] for f in report["findings"]] == ["test_split"]
    assert any(b["kind"] == "unread_records" and b["strict"] for b in report["blind_spots"])


@functools.cache
def _hostile_files() -> dict[str, bytes]:
    deep = "[" * 200_000 + "]" * 200_000
    odd_claude = [
        {"type": "assistant", "uuid": 5, "cwd": ["x"], "timestamp": 1e308, "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": None, "name": ["Bash"], "input": [1, 2]}]}},
        {"type": "assistant", "uuid": "u2", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t", "name": "Bash", "input": {"command": ["ls"]}}, "str", 5, None]}},
        {"type": "assistant", "uuid": "u3", "message": "tool_use"},
        {"type": "user", "uuid": "u4", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": {"a": 1}}]}, "toolUseResult": []},
        {"type": "assistant", "uuid": "u5", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t5", "name": "Task", "input": {"prompt": 1}}]}},
        {"type": "user", "uuid": "u6", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t5", "is_error": "yes"}]}, "toolUseResult": {"agentId": ["x"]}},
        {"type": "assistant", "uuid": "u7", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t7", "name": "Bash",
             "input": {"command": "python -c \"" + "(" * 5000 + "1" + ")" * 5000 + "\""}}]}},
        {"type": "assistant", "uuid": "u8", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t8", "name": "Bash", "input": {"command": "x=$(" * 3000}}]}},
        {"type": "assistant", "uuid": "u9", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t9", "name": "Bash", "input": {"command": "node -e \"" + "(" * 20000 + "\""}}]}},
        {"type": "assistant", "uuid": "u10", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t10", "name": "Bash", "input": {"command": "bash -c " * 500 + "ls"}}]}},
        {"type": "assistant", "uuid": "u11", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t11", "name": "Bash",
             "input": {"command": "python -c \"x = 'a'\n" + "x = x.replace('a', 'aa')\n" * 60 + "open(x)\""}}]}},
    ]
    return {
        "nested_line.jsonl": (deep + "\n").encode(),
        "nested_pretty.json": ("[" + deep + "]").encode(),
        "codex_deep_args.jsonl": (json.dumps({"timestamp": "t", "type": "response_item", "payload": {
            "type": "function_call", "name": "shell", "call_id": "c", "arguments": "[" * 100_000 + "]" * 100_000}})
            + "\n").encode(),
        "codex_exec_deep.jsonl": (json.dumps({"timestamp": "t", "type": "response_item", "payload": {
            "type": "custom_tool_call", "name": "exec", "call_id": "c",
            "input": "tools.exec_command(" + "{" * 50_000 + "}" * 50_000 + ")"}}) + "\n").encode(),
        "claude_odd.jsonl": "".join(json.dumps(x) + "\n" for x in odd_claude).encode(),
        "binary.jsonl": random.Random(1).randbytes(200_000),
        "nul.jsonl": b'{"type":"assistant"\x00}\n',
        "squid_huge.log": (b"1733131200.123 842 1.2.3.4 TCP_TUNNEL/200 1 CONNECT " + b"a" * 70_000
                           + b":443 - HIER_DIRECT/1.2.3.4 -\n" + b"9" * 400
                           + b".1 842 1.2.3.4 TCP_TUNNEL/200 1 CONNECT x.org:443 - HIER_DIRECT/1.2.3.4 -\n"),
        "conn_odd.jsonl": (json.dumps({"host": ["x"], "port": "99999999999999999999", "ts": 1e300, "bytes_up": "x",
                                       "url": 5}) + "\n").encode(),
        "har_odd.har": json.dumps({"log": {"entries": [{"request": "x"}, 5, {"request": {"url": ["u"]},
                                                                              "response": []}]}}).encode(),
    }


@pytest.mark.parametrize("name", sorted(_hostile_files()))
@pytest.mark.parametrize("fmt", ["auto", "claude", "codex", "jsonl", "connlog", "har", "squid"])
def test_hostile_files_never_raise(tmp_path, name, fmt):
    """Deep nesting, wrong types everywhere, binary data, NULs, huge numbers: warnings, never a traceback."""
    p = tmp_path / name
    p.write_bytes(_hostile_files()[name])
    try:
        r = run_audit([p], Rules(), fmt=fmt, agent="agent1")
    except UserError as e:  # auto-detection refusing a file named on its own: one line naming it
        assert fmt == "auto" and name in str(e)
        return
    assert r.stats.files == 1
