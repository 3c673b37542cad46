"""The audit in an arena's context: its rules, its agents, its official submissions (for the quota)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from reviewbench.arena import Arena, Rules, find_arena, load_arena
from reviewbench.bundle import load_submission
from reviewbench.errors import UserError
from reviewbench.logs.audit import AuditReport, run_audit


def official_submissions(arena: Arena) -> list[tuple[str, str, datetime, str]]:
    """(agent, id, submitted_at, where) of the arena's submissions that say when they were made."""
    out: list[tuple[str, str, datetime, str]] = []
    for sub_id in arena.submission_ids():
        try:
            b = load_submission(arena, arena.submit_dir / sub_id)
        except UserError:
            continue
        if b.submitted_at is not None:
            meta = next((f.path for f in b.files if f.path.startswith("meta.")), "")
            out.append((b.agent, b.id, b.submitted_at, str(arena.submit_dir / sub_id / meta)))
    return out


def audit_paths(paths: list[Path], arena_dir: Path | None = None, agent: str | None = None,
                fmt: str = "auto") -> AuditReport:
    """``review audit``: with an arena (given, or found above the first path) its rules and agents apply: a
    log under its logs/<agent>/ is that agent's, any other is the agent whose home the log's cwd is in."""
    arena = None
    if arena_dir is not None:
        arena = load_arena(arena_dir)
    elif paths:
        try:
            arena = load_arena(find_arena(paths[0] if paths[0].is_dir() else paths[0].parent))
        except UserError:
            arena = None
    if arena is None:
        return run_audit(paths, Rules(), fmt=fmt, agent=agent)
    return run_audit(paths, arena.config.rules, fmt=fmt, agent=agent, logs_root=arena.logs_dir,
                     agent_ids=[a.id for a in arena.config.agents], submissions=official_submissions(arena))


def audit_agent(arena: Arena, agent: str) -> AuditReport | None:
    """The pipeline's audit of one agent: its logs folder, plus the quota over its official submissions."""
    folder = arena.agent_logs(agent)  # resolved, inside logs/ (refused otherwise)
    if not folder.is_dir():
        return None
    return run_audit([folder], arena.config.rules, agent=agent, agent_ids=[a.id for a in arena.config.agents],
                     submissions=official_submissions(arena), only_agent=agent)
