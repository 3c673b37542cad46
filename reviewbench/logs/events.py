"""The one event stream every log parser produces, and the parse statistics beside it.

Events are slotted dataclasses, not pydantic models: an audit streams millions of them and validation
would dominate the cost. Their sequence fields default to shared empty tuples (parsers assign, nobody
appends): building one is on the audit's hot path. They never leave the audit; findings (pydantic) do.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

EventKind = Literal["shell", "read", "write", "list", "search", "fetch", "web_search", "mcp", "patch", "net",
                    "other"]
OUTPUT_LIMIT = 2000


@dataclass(slots=True)
class Event:
    source: str  # "file:line"
    tool: str  # the tool's own name (Bash, Read, shell, exec_command, web_search_call, squid, ...)
    kind: EventKind
    agent: str | None = None
    time: str | None = None
    actor: Literal["agent", "user", "network"] = "agent"
    command: str | None = None  # shell script, for kind == "shell"
    paths: Sequence[str] = ()
    urls: Sequence[str] = ()
    query: str | None = None
    content: str | None = None  # text written to a file (Write; for patches and edits see ``edits``)
    edits: Sequence[tuple[str, str]] = ()  # (old, new) of an Edit/MultiEdit/patch update
    cwd: str | None = None
    env: Mapping[str, str] | None = None
    output: str | None = None
    host: str | None = None  # network events
    ip: str | None = None
    port: int | None = None
    method: str | None = None
    nbytes: int | None = None
    strings: Sequence[str] = ()  # other string arguments worth scanning (MCP tools)
    unresolved: str | None = None  # a call whose command the audit could not know before it ran: why


@dataclass(slots=True)
class ParseWarning:
    source: str
    message: str


@dataclass(slots=True)
class ParseStats:
    files: int = 0
    events: int = 0
    lines: int = 0
    bytes: int = 0
    skipped_records: dict[str, int] = field(default_factory=dict)
    duplicates: int = 0
    warnings: list[ParseWarning] = field(default_factory=list)
    warnings_total: int = 0
    unread_records: int = 0  # lines/records whose content was not audited (broken, or over the size cap)
    overlong_records: int = 0
    ignored_files: int = 0  # files that are not logs by their names

    def warn(self, source: str, message: str, keep: int = 200) -> None:
        self.warnings_total += 1
        if len(self.warnings) < keep:  # bounded: a corrupt 1 GB file must not fill memory with warnings
            self.warnings.append(ParseWarning(source, message))

    def skip(self, record_type: str) -> None:
        self.skipped_records[record_type] = self.skipped_records.get(record_type, 0) + 1


@dataclass(slots=True)
class SubagentCall:
    """A Claude ``Task``/``Agent`` call: its sub-agent's own transcript must be audited too."""

    source: str
    agent_id: str | None = None  # from the result's toolUseResult.agentId (2.x); None in 1.x (inline sidechains)
    failed: bool = False  # the call returned an error: no sub-agent ran


@dataclass(slots=True)
class FileInfo:
    """What one log file says about itself: its client, its session, whose it is, what it refers to.

    ``agent`` comes from --agent, the arena's logs/<agent>/ folder, or else the working directory the log
    records (Claude Code ``cwd``, Codex ``session_meta.cwd``) matched against ``[rules] agent_home``.
    """

    path: Path
    fmt: str
    layout: str = "lines"
    agent: str | None = None
    agent_from: str = ""
    identify: Callable[[str], str | None] | None = None  # cwd -> agent id
    session_cwd: str | None = None
    cwd_agent: str | None = None  # the agent whose home the recorded cwd is in
    session_id: str | None = None
    client: str | None = None  # "Claude Code 2.1.214", "Codex CLI 0.144.1"
    capture: bool = False  # a headless stdout capture (stream-json), not the client's own session file
    events: int = 0
    subagent_calls: list[SubagentCall] = field(default_factory=list)
    subagent_ids: set[str] = field(default_factory=set)  # sub-agent transcripts this file holds (agentId)
    inline_sidechains: int = 0  # 1.x: sub-agent conversations inline in the session file
    spawned_agents: int = 0  # Codex spawn_agent calls
    unjudged_agent_paths: int = 0  # accesses to agent folders not judged because the agent is unknown
    unresolved: list[str] = field(default_factory=list)  # "source: why" of commands not resolved (code mode)
    edited: list[str] = field(default_factory=list)  # "source: id (first at other source)": same id, new content

    def saw_cwd(self, cwd: object) -> None:
        """The first working directory a log records is where its session started: it names the agent."""
        if self.session_cwd is not None or not isinstance(cwd, str) or not cwd:
            return
        self.session_cwd = cwd
        if self.identify is not None:
            self.cwd_agent = self.identify(cwd)
            if self.agent is None and self.cwd_agent is not None:
                self.agent, self.agent_from = self.cwd_agent, f"recorded cwd {cwd}"


def trim(text: str | None, limit: int = OUTPUT_LIMIT) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return text[:limit] + f"... [{len(text) - limit} more chars]"


def string_values(obj: Any, limit: int = 50) -> list[str]:
    """The string values inside a tool's arguments (MCP and unknown tools): what URL and path rules scan."""
    out: list[str] = []

    def walk(o: Any) -> None:
        if len(out) >= limit:
            return
        if isinstance(o, str):
            out.append(o)
        elif isinstance(o, dict):
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)

    walk(obj)
    return out
