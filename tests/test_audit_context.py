"""Whose log it is, and what the audit says it could not see.

The agent comes from the log itself when it is not under the arena's logs/<agent>/ (Claude Code ``cwd``,
Codex ``session_meta.cwd``, matched against ``[rules] agent_home``); sub-agent transcripts are looked for where
Claude Code 2.x keeps them, and a missing one is reported; so are unknown record types and absent network logs.
"""

import json
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest

from reviewbench.arena import Rules
from reviewbench.logs.arena_audit import audit_agent, audit_paths
from reviewbench.logs.audit import run_audit
from reviewbench.logs.synth import ClaudeSession, CodexRollout, Step, connlog_line
from tests.conftest import ROOT, run_review

SAMPLES = ROOT.parent / "shared" / "samples" / "logs"
T0 = datetime(2026, 11, 3, 10, tzinfo=timezone.utc)
RULES = Rules(agent_home="/arena/agents/{agent}")
AGENTS = ["agent1", "agent2", "agent3"]


def claude_log(path: Path, cwd: str, *steps: Step, session: str = "9b2d4f6a-1c3e-4a5b-8d7f-0e1f2a3b4c5d") -> Path:
    s = ClaudeSession(session=session, cwd=cwd, start=T0, version="2.1.214")
    for st in steps:
        s.step(st, T0)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(s.text())
    return path


def read(p: str) -> Step:
    return Step("Read", {"file_path": p}, "...")


def kinds(report) -> dict[str, object]:
    return {b.kind: b for b in report.blind_spots}


# --- the agent from the log ------------------------------------------------------------------------------------------
def test_claude_log_outside_the_arena_is_attributed_by_its_cwd(tmp_path):
    p = claude_log(tmp_path / "downloads" / "s.jsonl", "/arena/agents/agent1",
                   read("/arena/agents/agent2/kvprior/DESCRIPTION.md"), read("/arena/agents/agent1/notes.md"))
    r = run_audit([p], RULES, agent_ids=AGENTS)
    (f,) = r.findings
    assert f.category == "other_agent" and f.agent == "agent1" and "agent2" in f.rule
    assert r.files[0].agent == "agent1" and r.files[0].agent_from == "recorded cwd /arena/agents/agent1"
    assert "agent_unknown" not in kinds(r)


def test_codex_rollout_is_attributed_by_session_meta_cwd(tmp_path):
    r = CodexRollout(session="019f51c7-0000-7000-8000-b8b8b8b8b8b8", cwd="/arena/agents/agent3/work", start=T0)
    r.call("exec_command", {"cmd": "cat /arena/agents/agent1/notes.md", "workdir": "/arena/agents/agent3/work"},
           "Process exited with code 0", T0)
    p = tmp_path / "rollout.jsonl"
    p.write_text(r.text())
    rep = run_audit([p], RULES, agent_ids=AGENTS)
    assert [(f.category, f.agent) for f in rep.findings] == [("other_agent", "agent3")]


def test_cli_audit_of_a_file_with_arena_needs_no_agent(arena, tmp_path):
    p = claude_log(tmp_path / "s.jsonl", "/arena/agents/agent1", read("/arena/agents/agent2/headprobe/method.py"))
    r = run_review("audit", str(p), "--arena", str(arena), "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert [(f["category"], f["agent"]) for f in out["findings"] if f["category"] != "quota"] == [("other_agent", "agent1")]
    assert out["files"][0]["agent_from"] == "recorded cwd /arena/agents/agent1"
    text = run_review("audit", str(p), "--arena", str(arena))
    assert "agent1 (recorded cwd /arena/agents/agent1)" in text.stdout and "pass --agent" not in text.stdout


def test_unknown_agent_is_said_not_skipped_silently(tmp_path):
    p = claude_log(tmp_path / "s.jsonl", "/home/someone/project", read("/arena/agents/agent2/notes.md"),
                   read("/arena/data/test/niah_single.jsonl"))
    r = run_audit([p], RULES, agent_ids=AGENTS)
    assert [f.category for f in r.findings] == ["test_split"]  # rules that need no agent still apply
    spot = kinds(r)["agent_unknown"]
    assert "other_agent rule was not applied to 1 access" in spot.message and "/home/someone/project" in spot.message
    assert not spot.strict and r.files[0].agent is None
    text = run_review("audit", str(p))
    assert "agent unknown" in text.stdout and "other_agent rule was not applied" in text.stdout


def test_a_cwd_that_is_not_a_known_agent_names_nobody(tmp_path):
    p = claude_log(tmp_path / "s.jsonl", "/arena/agents/intruder", read("/arena/agents/agent2/notes.md"))
    r = run_audit([p], RULES, agent_ids=AGENTS)
    assert r.findings == [] and r.files[0].agent is None and "agent_unknown" in kinds(r)


def test_a_log_in_one_agents_folder_that_started_in_anothers_home_is_noted(tmp_path):
    p = claude_log(tmp_path / "logs" / "agent1" / "s.jsonl", "/arena/agents/agent2", read("/arena/agents/agent2/x"))
    r = run_audit([tmp_path / "logs"], RULES, logs_root=tmp_path / "logs", agent_ids=AGENTS)
    assert [(f.category, f.agent) for f in r.findings] == [("other_agent", "agent1")]  # the folder decides
    assert any("agent2's folder" in n for n in r.notes)


# --- sub-agents ----------------------------------------------------------------------------------------------------
def _session_with_task(root: Path, agent_id: str | None, sub_text: str | None) -> Path:
    """A 2.x session whose Task result names its sub-agent, and (optionally) that sub-agent's transcript."""
    session = "5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9"
    result = None if agent_id is None else {
        "status": "completed", "prompt": "Compare with the other agents", "agentId": agent_id,
        "agentType": "general-purpose", "content": [{"type": "text", "text": "done"}], "totalDurationMs": 5118,
        "totalTokens": 17824, "totalToolUseCount": 1}
    main = claude_log(root / "-arena-agents-agent1" / f"{session}.jsonl", "/arena/agents/agent1",
                      Step("Task", {"description": "compare", "prompt": "Compare with the other agents",
                                    "subagent_type": "general-purpose"}, "done", result=result), session=session)
    if sub_text is not None:
        sub = root / "-arena-agents-agent1" / session / "subagents" / f"agent-{agent_id}.jsonl"
        sub.parent.mkdir(parents=True)
        sub.write_text(sub_text)
        (sub.parent / f"agent-{agent_id}.meta.json").write_text(json.dumps({"agentType": "general-purpose"}))
    return main


def _subagent_text(agent_id: str) -> str:
    s = ClaudeSession(session="5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9", cwd="/arena/agents/agent1", start=T0,
                      sidechain=True, agent_id=agent_id, version="2.1.214")
    s.prompt("Compare with the other agents", T0)
    s.step(read("/arena/agents/agent2/kvprior/DESCRIPTION.md"), T0)
    return s.text()


def test_the_sub_agent_transcript_next_to_a_session_is_audited_with_it(tmp_path):
    main = _session_with_task(tmp_path, "a96cf8a57447af436", _subagent_text("a96cf8a57447af436"))
    r = run_audit([main], RULES, agent="agent1")  # only the main file named
    assert [(f.category, Path(f.source.rsplit(":", 1)[0]).name) for f in r.findings] == [
        ("other_agent", "agent-a96cf8a57447af436.jsonl")]
    assert [fo.agent_from for fo in r.files] == ["--agent", "parent session"]
    assert "subagent_transcript_missing" not in kinds(r) and not r.incomplete()


def test_a_missing_sub_agent_transcript_is_reported_and_fails_strict(tmp_path):
    main = _session_with_task(tmp_path, "a96cf8a57447af436", None)
    r = run_audit([main], RULES, agent="agent1")
    spot = kinds(r)["subagent_transcript_missing"]
    assert spot.strict and spot.count == 1 and "agent-a96cf8a57447af436.jsonl" in spot.message
    assert spot.sources == [f"{main}:1"] and r.incomplete()  # the Task call
    assert run_review("audit", str(main), "--agent", "agent1", "--strict").returncode == 1


def test_a_failed_task_call_expects_no_transcript(tmp_path):
    session = ClaudeSession(session="s", cwd="/arena/agents/agent1", start=T0)
    session.step(Step("Task", {"description": "x", "prompt": "y", "subagent_type": "nope"},
                      "<tool_use_error>Agent type 'nope' not found</tool_use_error>", is_error=True), T0)
    p = tmp_path / "s.jsonl"
    p.write_text(session.text())
    assert "subagent_transcript_missing" not in kinds(run_audit([p], RULES, agent="agent1"))


@pytest.mark.skipif(not SAMPLES.is_dir(), reason="shared samples not present")
def test_inline_sidechains_of_claude_code_1_0_are_the_task_transcripts():
    r = run_audit([SAMPLES / "claude-code" / "claude-code-viewer_v1.0.98_interactive_fe5e1c67.jsonl"], Rules())
    assert "subagent_transcript_missing" not in kinds(r)  # 5 Task calls, 5 inline sidechain conversations
    assert r.files[0].client == "Claude Code 1.0.98"


@pytest.mark.skipif(not SAMPLES.is_dir(), reason="shared samples not present")
def test_sidechains_cut_from_a_1_0_session_are_missed(tmp_path):
    src = SAMPLES / "claude-code" / "claude-code-viewer_v1.0.98_interactive_fe5e1c67.jsonl"
    kept = [line for line in src.read_text().splitlines() if '"isSidechain":true' not in line]
    p = tmp_path / "s.jsonl"
    p.write_text("\n".join(kept) + "\n")
    spot = kinds(run_audit([p], Rules()))["subagent_transcript_missing"]
    assert spot.count == 5


# --- records, network logs, Codex sub-agents ------------------------------------------------------------------------
def test_unknown_record_types_are_counted_and_reported(tmp_path):
    s = ClaudeSession(session="s", cwd="/arena/agents/agent1", start=T0)
    s.step(Step("Bash", {"command": "ls"}, "ok"), T0)
    extra = [{"type": "agent-memory", "uuid": f"m{i}", "sessionId": "s", "content": "tool_use later"} for i in range(3)]
    p = tmp_path / "s.jsonl"
    p.write_text(s.text() + "".join(json.dumps(e) + "\n" for e in extra))
    spot = kinds(run_audit([p], RULES, agent="agent1"))["unknown_records"]
    assert spot.count == 3 and "agent-memory x3" in spot.message and not spot.strict


def test_codex_unknown_items_are_reported_known_ones_are_not(tmp_path):
    r = CodexRollout(session="019f51c7-0000-7000-8000-c9c9c9c9c9c9", cwd="/arena/agents/agent1", start=T0)
    for t in ("reasoning", "ghost_snapshot", "quantum_call"):
        r.lines.append(json.dumps({"timestamp": "2026-11-03T10:00:00Z", "type": "response_item",
                                   "payload": {"type": t, "id": "x"}}))
    r.lines.append(json.dumps({"timestamp": "2026-11-03T10:00:00Z", "type": "team_sync", "payload": {}}))
    p = tmp_path / "r.jsonl"
    p.write_text(r.text())
    spot = kinds(run_audit([p], RULES, agent="agent1"))["unknown_records"]
    assert spot.sources == ["item:quantum_call", "team_sync"]


def test_absent_network_logs_are_reported_per_agent(tmp_path):
    logs = tmp_path / "logs"
    claude_log(logs / "agent1" / "s.jsonl", "/arena/agents/agent1", Step("Bash", {"command": "ls"}, "ok"))
    claude_log(logs / "agent2" / "s.jsonl", "/arena/agents/agent2", Step("Bash", {"command": "ls"}, "ok"),
               session="other")
    (logs / "agent1" / "conn.jsonl").write_text(connlog_line(T0, "agent1", "github.com", "140.82.121.3") + "\n")
    r = run_audit([logs], RULES, logs_root=logs, agent_ids=AGENTS)
    spot = kinds(r)["network_log_absent"]
    assert spot.sources == ["agent2"] and "no network log for agent2" in spot.message


def test_codex_spawned_agents_are_reported(tmp_path):
    r = CodexRollout(session="019f51c7-0000-7000-8000-d0d0d0d0d0d0", cwd="/arena/agents/agent1", start=T0)
    r.call("spawn_agent", {"message": "Profile the eviction kernel", "agent_type": "worker"}, "agent_id: 7", T0)
    p = tmp_path / "r.jsonl"
    p.write_text(r.text())
    assert kinds(run_audit([p], RULES, agent="agent1"))["codex_subagents"].count == 1


def test_pipeline_audit_keeps_its_interface_and_carries_the_blind_spots(arena):
    from reviewbench.arena import load_arena

    rep = audit_agent(load_arena(arena), "agent2")
    assert rep is not None and rep.stats.events == 8
    assert [b.kind for b in rep.blind_spots] == ["network_log_absent"]
    data = rep.model_dump(mode="json", by_alias=True)
    assert {"findings", "stats", "warnings", "notes", "files", "skipped_files", "blind_spots"} <= set(data)


def test_example_arena_audit_names_every_file_and_client(arena):
    r = audit_paths([arena / "logs"])
    clients = {Path(f.path).name: (f.client, f.agent, f.agent_from) for f in r.files}
    assert clients["agent-a3f9e21.jsonl"] == ("Claude Code 2.1.144", "agent1", "logs folder")
    assert all(a for _, a, _ in clients.values())


@pytest.mark.skipif(not SAMPLES.is_dir(), reason="shared samples not present")
def test_real_samples_report_their_client_versions(tmp_path):
    versions = {p.name: run_audit([p], Rules()).files[0].client for p in sorted(SAMPLES.rglob("*.jsonl"))}
    assert versions == {
        "claude-code-viewer_v1.0.98_interactive_fe5e1c67.jsonl": "Claude Code 1.0.98",
        "hive-mind_v2.1.214_sdk-cli_bypassPermissions_head14.jsonl": "Claude Code 2.1.214",
        "agent-history_codex-exec_0.135.0_redacted-by-source.jsonl": "Codex CLI 0.135.0",
        "codex-session-viewer_legacy-2025-09_rollout.jsonl":  # the older format names no version
            "Codex CLI (bare rollout format, before Oct 2025: no version recorded)",
        "hive-mind_codex-exec_0.144.1_rollout.jsonl": "Codex CLI 0.144.1",
    }
    shutil.rmtree(tmp_path)
