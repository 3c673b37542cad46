"""Streaming JSONL reading shared by the parsers: constant memory, bad lines become warnings, never errors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson

from reviewbench.logs.events import ParseStats


def _last_byte(line: bytes) -> bytes:
    """The last non-newline byte, without copying the line (it may be megabytes)."""
    end = len(line)
    while end and line[end - 1 : end] in (b"\n", b"\r", b" ", b"\t"):
        end -= 1
    return line[end - 1 : end]


def check_unparsed(line: bytes, stats: ParseStats, path: Path, lineno: int) -> bool:
    """Shape and UTF-8 checks for a line that is not parsed; False when it is broken (and warned about).
    Blank lines pass."""
    first = line[:1]
    if first in (b" ", b"\t", b"\r", b"\n"):
        line = line.strip()
        if not line:
            return True
        first = line[:1]
    if first != b"{" or _last_byte(line) != b"}":
        stats.warn(f"{path}:{lineno}", "truncated or non-JSON line" if line[:1] == b"{" else "non-JSON line")
        return False
    if not line.isascii():
        try:
            line.decode("utf-8")
        except UnicodeDecodeError as e:
            stats.warn(f"{path}:{lineno}", f"invalid UTF-8 at byte {e.start}")
            return False
    return True


def parse_line(line: bytes, stats: ParseStats, path: Path, lineno: int) -> dict | None:
    """One JSON object line, or None with a warning. Bad UTF-8 is replaced so the call is still audited."""
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as e:
        msg = str(e)
        src = f"{path}:{lineno}"
        if "utf-8" in msg.lower() or "surrogate" in msg.lower():
            stats.warn(src, "invalid UTF-8")
            obj = _lenient(line)
            if obj is None:
                return None
        else:
            stats.warn(src, "truncated line" if line[:1] == b"{" and line[-1:] != b"}" else f"not JSON: {msg[:80]}")
            return None
    if not isinstance(obj, dict):
        stats.warn(f"{path}:{lineno}", "JSON line is not an object")
        return None
    return obj


def json_lines(path: Path, stats: ParseStats) -> Iterator[tuple[int, dict]]:
    """(line number, object) for each JSON-object line; bad lines become warnings and are skipped."""
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            stats.lines += 1
            stats.bytes += len(raw)
            line = raw.strip()
            if line:
                obj = parse_line(line, stats, path, lineno)
                if obj is not None:
                    yield lineno, obj


def _lenient(line: bytes) -> dict | None:
    """A line with bad UTF-8: decode with replacement so its tool call is still audited."""
    try:
        obj = orjson.loads(line.decode("utf-8", "replace"))
    except orjson.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None
