"""`review calibrate` says what it is doing as it goes: a line per case, the stages as they start and end, a line
per judge (plain lines when stdout is not a terminal), and with --json or --format to stdout the progress goes to
stderr so that stdout stays data."""

from __future__ import annotations

import json

import httpx2

from reviewbench.calibrate import command
from reviewbench.cli import main
from reviewbench.judges.providers.anthropic import AnthropicJudge
from reviewbench.judges.providers.openai import OpenAIJudge
from test_calibration import KEY, GenerousGPT, PerfectClaude, _suite_copy


def _mock_panel(monkeypatch):
    claude, gpt = PerfectClaude(), GenerousGPT()
    clients = {"anthropic": AnthropicJudge(api_key="sk-ant-test",
                                           http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(claude))),
               "openai": OpenAIJudge(api_key="sk-test",
                                     http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(gpt)))}
    monkeypatch.setattr(command, "default_provider", lambda spec, inputs: clients[spec.provider])
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


def test_progress_per_case_stage_and_judge_then_json_on_stdout(tmp_path, monkeypatch, capsys):
    root = _suite_copy(tmp_path)
    _mock_panel(monkeypatch)
    codes = [c.code for c in KEY.cases if c.kind == "baseline" and c.method in ("snapkv", "h2o")]
    args = ["calibrate", "--suite", str(root), "--panel", "api", "--no-evidence", *[a for c in codes for a in ("--only", c)]]
    assert main(args) == 0
    out = capsys.readouterr().out.splitlines()
    starts = [i for i, line in enumerate(out) if line.startswith("[")]
    assert [out[i].split()[:3] for i in starts] == [["[1/2]", "case", codes[0]], ["[2/2]", "case", codes[1]]]
    first = out[starts[0]:starts[1]]  # the first case: its stages, then one line per judge, then its total
    stage_lines = [line.split()[0] for line in first if line.startswith("  ") and not line.startswith("    judge")]
    assert "Judges" in " ".join(first) and "Verdict" in " ".join(first) and stage_lines
    judges = [line for line in first if line.startswith("    judge ")]
    assert any("anthropic-claude-sonnet-4-5 (primary): novelty 1" in j for j in judges)
    assert any("openai-gpt-5 (primary): novelty 3" in j for j in judges)
    assert any("(tie_break)" in j for j in judges)  # novelty 1 vs 3 called the third judge
    assert all("tokens" in j for j in judges)  # first run: paid for, not replayed
    assert any(line.startswith(f"  case {codes[0]} done in ") for line in first)
    assert not any("\x1b[" in line for line in out)  # not a terminal: plain lines

    # a rerun replays; --json keeps stdout one JSON document and prints the progress on stderr
    assert main(args + ["--json"]) == 0
    got = capsys.readouterr()
    assert json.loads(got.out)["schema"] == "reviewbench.calibration/1"
    assert f"[1/2] case {codes[0]}" in got.err and "replayed" in got.err


def test_csv_export_on_stdout_keeps_progress_on_stderr(tmp_path, monkeypatch, capsys):
    root = _suite_copy(tmp_path)
    _mock_panel(monkeypatch)
    code = next(c.code for c in KEY.cases if c.kind == "baseline" and c.method == "tova")
    assert main(["calibrate", "--suite", str(root), "--panel", "api", "--no-evidence", "--only", code,
                 "--format", "csv"]) == 0
    got = capsys.readouterr()
    header, *rows = got.out.strip().splitlines()
    assert header.startswith("case,kind,method,judge,") and rows and all(r.startswith(code + ",") for r in rows)
    assert f"[1/1] case {code}" in got.err
