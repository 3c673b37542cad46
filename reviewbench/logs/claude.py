"""Claude Code session transcripts (``~/.claude/projects/<cwd>/<session>.jsonl`` and ``subagents/agent-*.jsonl``).

``tool_use`` blocks in assistant lines are paired with ``tool_result`` blocks in user lines by id. Lines
with neither are not parsed at all (only checked), which keeps a transcript full of long tool outputs
cheap to audit. Lines are deduplicated by ``uuid`` (resumed sessions copy earlier lines).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path

import orjson

from reviewbench.logs.events import OUTPUT_LIMIT, Event, ParseStats, string_values, trim
from reviewbench.logs.reader import check_unparsed, parse_line

_RESULT_KEY = b'"tool_use_id":"'
_CONTENT_START = re.compile(rb'"(?:content|text)":\s*"')
MESSAGE_TYPES = {"user", "assistant"}
KNOWN_TYPES = {"user", "assistant", "system", "summary", "attachment", "progress", "file-history-snapshot",
               "queue-operation", "last-prompt", "custom-title", "ai-title", "agent-name", "pr-link",
               "permission-mode", "agent-setting", "bridge-session", "worktree-state", "mode"}
_BASH_INPUT = re.compile(r"<bash-input>(.*?)</bash-input>", re.S)
MAX_PENDING = 5000


def tool_event(name: str, inp: dict, source: str, cwd: str | None, time: str | None, agent: str | None) -> Event:
    """Map one Claude Code tool call to an Event."""
    inp = inp if isinstance(inp, dict) else {"input": inp}
    ev = Event(source=source, tool=name, kind="other", agent=agent, time=time, cwd=cwd)
    if name == "Bash":
        ev.kind, ev.command = "shell", str(inp.get("command", ""))
    elif name in ("Read", "NotebookRead"):
        ev.kind, ev.paths = "read", [str(inp.get("file_path") or inp.get("notebook_path") or "")]
    elif name in ("Write", "Edit", "MultiEdit", "NotebookEdit"):
        ev.kind = "write"
        ev.paths = [str(inp.get("file_path") or inp.get("notebook_path") or "")]
        ev.content = inp.get("content") if isinstance(inp.get("content"), str) else inp.get("new_string")
    elif name in ("Glob", "LS"):
        base = str(inp.get("path") or cwd or "")
        pattern = str(inp.get("pattern") or "")
        ev.kind = "list"
        ev.paths = [f"{base.rstrip('/')}/{pattern}" if pattern and not pattern.startswith("/") else pattern or base]
    elif name == "Grep":
        ev.kind = "search"
        ev.paths = [str(inp.get("path") or cwd or ".")]
        ev.query = str(inp.get("pattern", ""))
    elif name in ("WebFetch", "web_fetch"):
        ev.kind, ev.urls, ev.query = "fetch", [str(inp.get("url", ""))], inp.get("prompt")
    elif name in ("WebSearch", "web_search"):
        ev.kind, ev.query = "web_search", str(inp.get("query", ""))
        domains = [*(inp.get("allowed_domains") or []), *(inp.get("blocked_domains") or [])]
        ev.strings = [str(d) for d in inp.get("allowed_domains") or []]
        if domains:
            ev.query += " " + " ".join(f"domain:{d}" for d in inp.get("allowed_domains") or [])
    elif name.startswith("mcp__"):
        ev.kind = "mcp"
        ev.strings = string_values(inp)
    else:
        ev.strings = string_values(inp)
    return ev


def _result_text(block: dict) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
    return ""


def _result_ids(line: bytes) -> Iterator[tuple[str, int]]:
    """(tool_use_id, offset after it) of each result in a raw user line; bytes.find, not a regex scan."""
    pos = line.find(_RESULT_KEY)
    while pos >= 0:
        start = pos + len(_RESULT_KEY)
        end = line.find(b'"', start)
        if end < 0:
            return
        yield line[start:end].decode("utf-8", "replace"), end
        pos = line.find(_RESULT_KEY, end)


def _output_preview(line: bytes, start: int) -> str | None:
    """The first OUTPUT_LIMIT characters of the JSON string that starts at ``start``, without parsing the line."""
    m = _CONTENT_START.search(line, start)
    if not m:
        return None
    chunk = line[m.end() : m.end() + OUTPUT_LIMIT * 2]
    end = chunk.find(b'"')
    while end > 0 and chunk[end - 1 : end] == b"\\" and not chunk[:end].endswith(b"\\\\"):
        end = chunk.find(b'"', end + 1)
    if end >= 0:
        chunk = chunk[:end]
    for cut in range(len(chunk), max(len(chunk) - 8, -1), -1):  # back off a split escape or UTF-8 sequence
        try:
            return trim(orjson.loads(b'"' + chunk[:cut] + b'"'))
        except orjson.JSONDecodeError:
            continue
    return None


def _lines(path: Path, stats: ParseStats) -> Iterator[tuple[int, dict | bytes]]:
    """The hot loop of a transcript audit: tool-call lines come parsed; pure tool-result lines (most of the
    bytes) come as checked raw bytes; every other line is only checked for shape and UTF-8.

    A line's role is read from its first ``"role":"``: quotes inside JSON strings are always escaped, and
    no field before ``message`` holds an object, so that first match is the line's own role.
    """
    n_lines = n_bytes = 0
    try:
        with open(path, "rb") as fh:
            for lineno, line in enumerate(fh, start=1):
                n_lines += 1
                n_bytes += len(line)
                i = line.find(b'"role":"')
                role = line[i + 8 : i + 9] if i >= 0 else b""
                if role == b"a":
                    wanted = b'"tool_use"' in line or b"srvtoolu_" in line
                elif role == b"u":
                    if b'"tool_use_id"' in line:  # results; a typed <bash-input> is never in a result line
                        if check_unparsed(line, stats, path, lineno):
                            yield lineno, line
                        continue
                    wanted = b"<bash-input>" in line
                else:  # not a compact message line: decide on content (spaced JSON, odd writers)
                    wanted = b"tool_use" in line or b"<bash-input>" in line
                if not wanted:
                    check_unparsed(line, stats, path, lineno)
                    continue
                rec = parse_line(line, stats, path, lineno)
                if rec is not None:
                    yield lineno, rec
    finally:
        stats.lines += n_lines
        stats.bytes += n_bytes


def parse_claude(path: Path, stats: ParseStats, agent: str | None, seen: set[int]) -> Iterator[Event]:
    pending: OrderedDict[str, Event] = OrderedDict()
    for lineno, rec in _lines(path, stats):
        if isinstance(rec, bytes):  # a user line with tool results only
            for tool_use_id, end in _result_ids(rec):
                ev = pending.pop(tool_use_id, None)
                if ev is not None:
                    ev.output = _output_preview(rec, end)
                    yield ev
            continue
        rtype = rec.get("type")
        if rtype not in MESSAGE_TYPES:
            stats.skip(str(rtype) if rtype in KNOWN_TYPES else f"unknown:{rtype}")
            continue
        uuid = rec.get("uuid")
        if uuid:
            h = hash(uuid)
            if h in seen:
                stats.duplicates += 1
                continue
            seen.add(h)
        msg = rec.get("message") or {}
        content = msg.get("content")
        src = f"{path}:{lineno}"
        cwd, time = rec.get("cwd"), rec.get("timestamp")
        if isinstance(content, str):
            if rtype == "user":
                for m in _BASH_INPUT.finditer(content):  # a shell command typed by the user, not the agent
                    yield Event(source=src, tool="user-shell", kind="shell", agent=agent, time=time, cwd=cwd,
                                actor="user", command=m.group(1))
            continue
        if not isinstance(content, list):
            continue
        for block in content:
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype in ("tool_use", "server_tool_use") and rtype == "assistant":
                ev = tool_event(str(block.get("name", "")), block.get("input") or {}, src, cwd, time, agent)
                if btype == "server_tool_use":
                    ev.tool = f"server:{ev.tool}"
                if block.get("id") in pending:
                    stats.duplicates += 1
                    continue
                pending[str(block.get("id"))] = ev
                if len(pending) > MAX_PENDING:
                    yield pending.popitem(last=False)[1]
            elif btype == "tool_result":
                ev = pending.pop(str(block.get("tool_use_id")), None)
                if ev is not None:
                    ev.output = trim(_result_text(block))
                    yield ev
            elif isinstance(btype, str) and btype.endswith("_tool_result"):  # server tool results
                ev = pending.pop(str(block.get("tool_use_id")), None)
                if ev is not None:
                    yield ev
    yield from pending.values()
