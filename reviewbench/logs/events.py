"""The one event stream every log parser produces, and the parse statistics beside it.

Events are slotted dataclasses, not pydantic models: an audit streams millions of them and validation
would dominate the cost. They never leave the audit; findings (pydantic) do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
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
    paths: list[str] = field(default_factory=list)
    urls: list[str] = field(default_factory=list)
    query: str | None = None
    content: str | None = None  # text written to a file (Write, apply_patch)
    cwd: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    output: str | None = None
    host: str | None = None  # network events
    ip: str | None = None
    port: int | None = None
    method: str | None = None
    nbytes: int | None = None
    strings: list[str] = field(default_factory=list)  # other string arguments worth scanning (MCP tools)


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

    def warn(self, source: str, message: str, keep: int = 200) -> None:
        self.warnings_total += 1
        if len(self.warnings) < keep:  # bounded: a corrupt 1 GB file must not fill memory with warnings
            self.warnings.append(ParseWarning(source, message))

    def skip(self, record_type: str) -> None:
        self.skipped_records[record_type] = self.skipped_records.get(record_type, 0) + 1


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
