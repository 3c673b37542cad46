"""Run the audit over files and folders: detect each file's format by reading its records, stream its events
through the rules, and say what the audit could not see.

Network logs go first so that their IP -> host pairs are known when tool calls connect to raw IPs. A file's
agent is --agent, else its folder under the arena's logs/, else the working directory its log records
matched against ``[rules] agent_home``. The same code serves ``review audit`` and the pipeline's audit stage.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from reviewbench.arena import Rules
from reviewbench.errors import UserError
from reviewbench.logs.claude import KNOWN_TYPES, parse_claude
from reviewbench.logs.codex import BARE_ITEM_TYPES, ENVELOPE_TYPES, EXEC_JSON_TYPES, parse_codex
from reviewbench.logs.events import Event, FileInfo, ParseStats, SubagentCall
from reviewbench.logs.generic import parse_generic
from reviewbench.logs.network import SQUID_LINE, parse_connlog, parse_har, parse_squid
from reviewbench.logs.reader import Layout, first_byte, json_records, raw_lines, sample_layout
from reviewbench.logs.rules import AuditFinding, Auditor, quota_findings
from reviewbench.logs.trajectories import TRAJECTORY_FORMATS, classify_trajectory, is_aider, parse_trajectory

Format = Literal["claude", "codex", "jsonl", "squid", "har", "connlog", "gemini", "openhands", "sweagent", "aider"]
FORMATS: tuple[Format, ...] = ("claude", "codex", "jsonl", "squid", "har", "connlog", "gemini", "openhands",
                               "sweagent", "aider")
NETWORK_FORMATS = {"squid", "har", "connlog"}
AUDIT_SCHEMA: Literal["reviewbench.audit/1"] = "reviewbench.audit/1"
# files in a logs folder that are not logs: skipped without a warning
NOT_LOGS = {".md", ".txt.meta", ".py", ".toml", ".png", ".jpg", ".jpeg", ".gif", ".svg", ".sqlite", ".db", ".lock"}
COMPRESSED = {".gz", ".zip", ".zst", ".xz", ".bz2", ".tgz", ".7z"}
# the clients' own side files when a whole ~/.claude or ~/.codex is copied in: prompt history, settings, todo
# lists, shell snapshots, credentials. Not tool-call logs: ignored (and counted), not warned about.
SIDE_FILES = {"history.jsonl", "sessions-index.json", "settings.json", "settings.local.json", "config.toml",
              "config.json", "auth.json", ".credentials.json", "version.json", "internal_storage.json"}
SIDE_DIRS = {"todos", "statsig", "shell-snapshots", "file-history", "session-env"}
PROBE_RECORDS = 50


class AuditStats(BaseModel):
    files: int
    events: int
    parse_warnings: int
    bytes: int
    seconds: float
    lines: int = 0
    duplicates: int = 0
    unread_records: int = 0
    overlong_records: int = 0
    ignored_files: int = 0  # not logs by their names (notes, images, the clients' settings and prompt history)
    skipped_records: dict[str, int] = Field(default_factory=dict)
    by_format: dict[str, int] = Field(default_factory=dict)
    events_by_tool: dict[str, int] = Field(default_factory=dict)


class WarningOut(BaseModel):
    source: str
    message: str


class FileOut(BaseModel):
    """One audited file: what it is and whose."""

    path: str
    format: str
    layout: str
    client: str | None = None  # "Claude Code 2.1.214", "Claude Code 2.0.46 (stream-json)", "Codex CLI 0.144.1"
    agent: str | None = None
    agent_from: str = ""  # "--agent", "logs folder", "recorded cwd ...", "parent session"; "" when unknown
    session_cwd: str | None = None
    events: int = 0


class SkippedFile(BaseModel):
    path: str
    reason: str


class BlindSpot(BaseModel):
    """Something the audit cannot see. ``strict``: part of the given input went unread (``--strict`` fails)."""

    kind: Literal["skipped_files", "unread_records", "subagent_transcript_missing", "unknown_records",
                  "network_log_absent", "agent_unknown", "codex_subagents", "unresolved_commands"]
    message: str
    count: int
    sources: list[str] = Field(default_factory=list)
    strict: bool = False


class AuditReport(BaseModel):
    schema_: Literal["reviewbench.audit/1"] = Field(default=AUDIT_SCHEMA, alias="schema")
    findings: list[AuditFinding]
    stats: AuditStats
    warnings: list[WarningOut] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    files: list[FileOut] = Field(default_factory=list)
    skipped_files: list[SkippedFile] = Field(default_factory=list)
    blind_spots: list[BlindSpot] = Field(default_factory=list)

    model_config = {"populate_by_name": True}

    def violations(self) -> list[AuditFinding]:
        return [f for f in self.findings if f.severity == "violation"]

    def incomplete(self) -> list[str]:
        """Why the audit did not read all of its input (empty when it did): what ``--strict`` fails on."""
        return [b.message for b in self.blind_spots if b.strict]


# --- format detection --------------------------------------------------------------------------------------------
def classify(rec: dict) -> Format | None:
    """The format one record belongs to, or None when it says nothing."""
    t = rec.get("type")
    if "payload" in rec and t in ENVELOPE_TYPES:
        return "codex"
    if "record_type" in rec or ("instructions" in rec and "id" in rec and "type" not in rec):
        return "codex"
    if isinstance(rec.get("session"), dict) and "items" in rec:
        return "codex"
    if isinstance(t, str):
        if t in BARE_ITEM_TYPES and t != "message" and ("call_id" in rec or "id" in rec or "summary" in rec
                                                        or "action" in rec):
            return "codex"
        if t == "message" and isinstance(rec.get("content"), list) and any(
                isinstance(c, dict) and str(c.get("type", "")).endswith(("input_text", "output_text"))
                for c in rec["content"]):
            return "codex"
        if t in EXEC_JSON_TYPES and t != "error":
            return "codex"
        if t in KNOWN_TYPES and any(k in rec for k in ("sessionId", "session_id", "uuid", "parentUuid", "message",
                                                        "leafUuid", "subtype")):
            return "claude"
    if isinstance(rec.get("log"), dict) or (isinstance(rec.get("request"), dict) and "response" in rec):
        return "har"
    traj = classify_trajectory(rec)
    if traj is not None:
        return traj  # type: ignore[return-value]
    if "tool" in rec:
        return "jsonl"
    if any(k in rec for k in ("host", "dst_host", "sni", "dst_ip")):
        return "connlog"
    return None


def detect(path: Path) -> tuple[Format | None, Layout, str]:
    """(format, layout, why not) of a file, decided by reading its first records whole (up to the record
    cap), not a byte window: a Codex rollout's first record can hold 100 KB of instructions."""
    if path.suffix.lower() == ".har":
        return "har", "json", ""
    fb = first_byte(path)
    if not fb:
        return None, "lines", "empty or unreadable"
    if is_aider(path):
        return "aider", "lines", ""
    if fb not in (b"{", b"["):
        for n, (_, raw) in enumerate(raw_lines(path, ParseStats(), 1 << 16)):
            line = raw.strip()
            if line and not line.startswith(b"#") and SQUID_LINE.match(line):
                return "squid", "lines", ""
            if n >= PROBE_RECORDS:
                break
        return None, "lines", "not JSON and not a Squid access.log"
    layout = sample_layout(path)
    for n, (_, rec) in enumerate(json_records(path, ParseStats(), layout)):
        fmt = classify(rec)
        if fmt is not None:
            return fmt, layout, ""
        if n >= PROBE_RECORDS:
            break
    return None, layout, f"no record of a known log format in its first {PROBE_RECORDS} records"


def sniff(path: Path) -> Format | None:
    """The format of a file, None when it is none of ours."""
    return detect(path)[0]


def collect_files(paths: Iterable[Path], fmt: str, stats: ParseStats,
                  skipped: list[SkippedFile]) -> list[tuple[Path, Format, Layout]]:
    """Files to audit with their formats and layouts. An explicitly named unusable file is an error; one found
    in a folder is skipped with a warning that names it (and ``--strict`` fails)."""
    out: list[tuple[Path, Format, Layout]] = []

    def one(p: Path) -> tuple[Format | None, Layout, str]:
        if fmt == "auto":
            return detect(p)
        forced: Format = fmt  # type: ignore[assignment]
        layout: Layout = "json" if forced == "har" or first_byte(p) == b"[" else (
            "lines" if forced == "squid" else sample_layout(p))
        return forced, layout, ""

    for p in paths:
        if not p.exists():
            raise UserError(p, "no such file or folder")
        if p.is_file():
            f, layout, why = one(p)
            if f is None:
                raise UserError(p, f"not a log format reviewbench reads ({', '.join(FORMATS)}): {why}; use "
                                   f"--format to force one")
            out.append((p, f, layout))
            continue
        for child in sorted(p.rglob("*")):
            rel = child.relative_to(p)
            aider = child.name.endswith(".aider.chat.history.md")  # (a dot file, in .md: Aider's chat history)
            if not child.is_file() or any(part.startswith(".") for part in rel.parts[:-1]) or (
                    rel.parts[-1].startswith(".") and not aider):
                continue
            suffix = child.suffix.lower()
            if aider:
                out.append((child, "aider", "lines"))
                continue
            if suffix in NOT_LOGS or child.name.endswith((".meta.json", ".txt.meta")) or child.name in SIDE_FILES \
                    or any(part in SIDE_DIRS for part in rel.parts[:-1]):
                stats.ignored_files += 1
                continue
            if suffix in COMPRESSED:
                why = "compressed; decompress it to audit it"
            else:
                f, layout, why = one(child)
                if f is not None:
                    out.append((child, f, layout))
                    continue
            stats.warn(str(child), f"file skipped: {why}")
            skipped.append(SkippedFile(path=str(child), reason=why))
    # network logs first (their IP -> host pairs), stream-json captures after the session files of the same runs
    # (a call in both is kept where the client itself wrote it)
    out.sort(key=lambda pf: (pf[1] not in NETWORK_FORMATS, pf[1] == "claude" and is_capture(pf[0]), str(pf[0])))
    return out


def is_capture(path: Path) -> bool:
    """A ``claude -p --output-format stream-json`` capture: its init record names the CLI version."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(1 << 16)
    except OSError:
        return False
    return b'"claude_code_version"' in head and b'"subtype":"init"' in head.replace(b'": "', b'":"')


def _events(info: FileInfo, stats: ParseStats, seen_claude: dict[int, tuple[int, str]],
            seen_codex: dict[int, tuple[int, str]]) -> Iterator[Event]:
    if info.fmt == "claude":
        return parse_claude(info, stats, seen_claude)
    if info.fmt == "codex":
        return parse_codex(info, stats, seen_codex)
    if info.fmt == "jsonl":
        return parse_generic(info, stats)
    if info.fmt == "squid":
        return parse_squid(info, stats)
    if info.fmt in TRAJECTORY_FORMATS:
        return parse_trajectory(info, stats)
    if info.fmt == "har":
        return parse_har(info, stats)
    return parse_connlog(info, stats)


# --- the audit --------------------------------------------------------------------------------------------------
def run_audit(
    paths: list[Path],
    rules: Rules = Rules(),
    *,
    fmt: str = "auto",
    agent: str | None = None,
    logs_root: Path | None = None,
    agent_ids: Iterable[str] = (),
    submissions: Iterable[tuple[str, str, datetime, str]] = (),
    only_agent: str | None = None,
) -> AuditReport:
    """Audit logs. A file's agent is ``agent``, else its folder under ``logs_root`` (logs/<agent>/...), else
    the one whose ``agent_home`` holds the working directory the log records."""
    if fmt not in ("auto", *FORMATS):
        raise UserError(None, f"unknown format {fmt!r} (auto, {', '.join(FORMATS)})")
    gc_was_on = gc.isenabled()
    gc.disable()  # the audit makes millions of short-lived dicts and no reference cycles: no cyclic collector
    try:
        return _run_audit(paths, rules, fmt, agent, logs_root, agent_ids, submissions, only_agent)
    finally:
        if gc_was_on:
            gc.enable()


def _run_audit(paths: list[Path], rules: Rules, fmt: str, agent: str | None, logs_root: Path | None,
               agent_ids: Iterable[str], submissions: Iterable[tuple[str, str, datetime, str]],
               only_agent: str | None) -> AuditReport:
    t0 = time.perf_counter()
    stats = ParseStats()
    skipped: list[SkippedFile] = []
    files = collect_files(paths, fmt, stats, skipped)
    root = logs_root.resolve() if logs_root else None
    auditor = Auditor(rules, agent_ids)

    def folder_agent(path: Path) -> str | None:
        if root is None:
            return None
        try:
            return path.resolve().relative_to(root).parts[0]
        except (ValueError, IndexError):
            return None

    infos: list[FileInfo] = []
    for path, f, layout in files:
        info = FileInfo(path=path, fmt=f, layout=layout, identify=auditor.identify)
        if agent:
            info.agent, info.agent_from = agent, "--agent"
        elif (who := folder_agent(path)) is not None:
            info.agent, info.agent_from = who, "logs folder"
        infos.append(info)

    findings: list[AuditFinding] = []
    seen: set[tuple[str, str, str]] = set()
    by_format: dict[str, int] = {}
    by_tool: dict[str, int] = {}
    seen_claude: dict[int, tuple[int, str]] = {}  # call/record id -> (content hash, first source)
    seen_codex: dict[int, tuple[int, str]] = {}
    audited = {str(i.path.resolve()) for i in infos}
    net_agents: set[str | None] = set()
    k = 0
    while k < len(infos):
        info = infos[k]
        k += 1
        stats.files += 1
        by_format[info.fmt] = by_format.get(info.fmt, 0) + 1
        before = auditor.skipped_other_agent
        check, tools_get, n = auditor.check, by_tool.get, 0
        for ev in _events(info, stats, seen_claude, seen_codex):
            n += 1
            by_tool[ev.tool] = tools_get(ev.tool, 0) + 1
            if ev.kind == "net":
                net_agents.add(ev.agent)
            elif ev.unresolved is not None:
                info.unresolved.append(f"{ev.source}: {ev.unresolved}")
            found = check(ev)
            if found:
                for finding in found:
                    if only_agent and finding.agent not in (only_agent, None):
                        continue
                    key = (finding.category, finding.source, finding.rule)
                    if key not in seen:
                        seen.add(key)
                        findings.append(finding)
        info.events = n
        info.unjudged_agent_paths = auditor.skipped_other_agent - before
        for edit in info.edited:
            where, _, what = edit.partition(": ")
            findings.append(AuditFinding(category="log_edited", severity="warning", agent=info.agent, source=where,
                                         tool="log", evidence=what[:300], rule="a record's id repeats with other "
                                         "content: the log was edited after the fact (both versions audited)"))
        if info.fmt in NETWORK_FORMATS:
            net_agents.add(info.agent)
        for sub in _subagent_files(info, audited):  # a session's sub-agents are part of it
            audited.add(str(sub.resolve()))
            infos.append(FileInfo(path=sub, fmt="claude", layout=sample_layout(sub), agent=info.agent,
                                  agent_from="parent session" if info.agent else "", identify=auditor.identify))
    subs = [s for s in submissions if not only_agent or s[0] == only_agent]
    findings += quota_findings(subs, rules.submissions_per_24h)
    notes = []
    if not subs:
        notes.append("quota not checked: no official submissions known (needs --arena)")
    for info in infos:
        if info.agent and info.cwd_agent and info.cwd_agent != info.agent:
            notes.append(f"{info.path}: attributed to {info.agent} ({info.agent_from}) but the session started in "
                         f"{info.session_cwd}, {info.cwd_agent}'s folder")
    report = AuditReport(
        findings=findings,
        stats=AuditStats(files=stats.files, events=sum(i.events for i in infos), parse_warnings=stats.warnings_total,
                         bytes=stats.bytes, seconds=round(time.perf_counter() - t0, 3), lines=stats.lines,
                         duplicates=stats.duplicates, unread_records=stats.unread_records,
                         overlong_records=stats.overlong_records, ignored_files=stats.ignored_files,
                         skipped_records=dict(sorted(
                             stats.skipped_records.items())), by_format=by_format,
                         events_by_tool=dict(sorted(by_tool.items()))),
        warnings=[WarningOut(source=w.source, message=w.message) for w in stats.warnings],
        notes=notes,
        files=[FileOut(path=str(i.path), format=i.fmt, layout=i.layout, client=i.client, agent=i.agent,
                       agent_from=i.agent_from, session_cwd=i.session_cwd, events=i.events) for i in infos],
        skipped_files=skipped,
        blind_spots=blind_spots(infos, stats, skipped, net_agents, rules.agent_home),
    )
    return report


def _subagent_files(info: FileInfo, audited: set[str]) -> list[Path]:
    """Transcripts of this session's sub-agents that sit next to it but were not given: Claude Code 2.x keeps
    them in ``<session>/subagents/agent-<id>.jsonl``, older versions in ``agent-<id>.jsonl`` beside it."""
    out: list[Path] = []
    for call in info.subagent_calls:
        if call.agent_id is None or call.failed:
            continue
        for cand in (info.path.parent / info.path.stem / "subagents" / f"agent-{call.agent_id}.jsonl",
                     info.path.parent / f"agent-{call.agent_id}.jsonl"):
            if cand.is_file() and str(cand.resolve()) not in audited and cand not in out:
                out.append(cand)
                break
    return out


def _sources(items: Iterable[str], limit: int = 10) -> list[str]:
    out: list[str] = []
    for s in items:
        if len(out) >= limit:
            break
        out.append(s)
    return out


def blind_spots(infos: list[FileInfo], stats: ParseStats, skipped: list[SkippedFile], net_agents: set[str | None],
                agent_home: str) -> list[BlindSpot]:
    """What this audit cannot see, each with a count and where."""
    out: list[BlindSpot] = []
    if skipped:
        out.append(BlindSpot(kind="skipped_files", count=len(skipped), strict=True, sources=_sources(
            s.path for s in skipped), message=f"{len(skipped)} file(s) skipped, not audited: " + "; ".join(
            f"{s.path} ({s.reason})" for s in skipped[:5]) + (" ..." if len(skipped) > 5 else "")))
    if stats.unread_records:
        over = f", {stats.overlong_records} of them over the size cap" if stats.overlong_records else ""
        out.append(BlindSpot(kind="unread_records", count=stats.unread_records, strict=True,
                             sources=_sources(w.source for w in stats.warnings),
                             message=f"{stats.unread_records} line(s)/record(s) could not be read{over}: any tool "
                                     f"call in them is not audited (see the warnings)"))
    out += _missing_subagents(infos)
    unknown = {k.removeprefix("unknown:"): v for k, v in stats.skipped_records.items() if k.startswith("unknown:")}
    if unknown:
        n = sum(unknown.values())
        out.append(BlindSpot(kind="unknown_records", count=n, sources=sorted(unknown), message=(
            f"{n} record(s) of types this audit does not know were not read: " + ", ".join(
                f"{t} x{c}" for t, c in sorted(unknown.items(), key=lambda kv: -kv[1])[:8]))))
    tool_files = [i for i in infos if i.fmt not in NETWORK_FORMATS]
    unknown_agent = [i for i in tool_files if i.agent is None]
    if unknown_agent:
        n_paths = sum(i.unjudged_agent_paths for i in unknown_agent)
        cwds = sorted({i.session_cwd for i in unknown_agent if i.session_cwd})
        out.append(BlindSpot(kind="agent_unknown", count=len(unknown_agent), sources=_sources(
            str(i.path) for i in unknown_agent), message=(
            f"agent unknown for {len(unknown_agent)} file(s) (no --agent, not under the arena's logs/<agent>/, "
            f"recorded cwd {', '.join(cwds[:3]) or 'none'} not in {agent_home}): the other_agent rule was not "
            f"applied" + (f" to {n_paths} access(es) to agents' folders" if n_paths else ""))))
    tool_agents = {i.agent for i in tool_files if i.events}
    if tool_agents and None not in net_agents:  # (a network log of unknown agent may cover anyone)
        missing = sorted(a for a in tool_agents if a is not None and a not in net_agents)
        if None in tool_agents and not net_agents:
            missing.append("the agent of these logs")
        if missing:
            out.append(BlindSpot(kind="network_log_absent", count=len(missing), sources=missing, message=(
                f"no network log for {', '.join(missing)}: connections that its tool calls do not show (a "
                f"program's own downloads, a background process) cannot be checked")))
    unresolved = [u for i in infos for u in i.unresolved]
    if unresolved:
        out.append(BlindSpot(kind="unresolved_commands", count=len(unresolved), strict=True,
                             sources=_sources(u.partition(": ")[0] for u in unresolved), message=(
                                 f"{len(unresolved)} command(s) unresolved: computed when the code-mode cell ran "
                                 f"(not from literals), so not audited: " + "; ".join(unresolved[:3]))))
    spawned = sum(i.spawned_agents for i in infos)
    if spawned:
        out.append(BlindSpot(kind="codex_subagents", count=spawned, sources=_sources(
            str(i.path) for i in infos if i.spawned_agents), message=(
            f"{spawned} Codex spawn_agent call(s): each sub-agent writes its own rollout, audited only if its "
            f"file is among the audited ones")))
    return out


def _missing_subagents(infos: list[FileInfo]) -> list[BlindSpot]:
    """Claude Task/Agent calls whose sub-agent transcript is not among the audited files."""
    seen_ids: set[str] = set().union(*(i.subagent_ids for i in infos)) if infos else set()
    claimed = {c.agent_id for i in infos for c in i.subagent_calls if c.agent_id}
    unclaimed = len(seen_ids - claimed)
    missing: list[SubagentCall] = []
    for info in infos:
        anonymous = [c for c in info.subagent_calls if not c.failed and c.agent_id is None]
        missing += [c for c in info.subagent_calls if not c.failed and c.agent_id and c.agent_id not in seen_ids]
        extra = max(0, len(anonymous) - info.inline_sidechains)
        take = min(extra, unclaimed)
        unclaimed -= take
        missing += anonymous[len(anonymous) - (extra - take):] if extra - take else []
    if not missing:
        return []
    ids = [c.agent_id for c in missing if c.agent_id]
    return [BlindSpot(kind="subagent_transcript_missing", count=len(missing), strict=True,
                      sources=_sources(c.source for c in missing), message=(
                          f"{len(missing)} sub-agent run(s) (Task/Agent) whose own transcript is not among the "
                          f"audited files" + (f" (agent-{', agent-'.join(ids[:5])}.jsonl)" if ids else "") +
                          ": their tool calls are not audited"))]

