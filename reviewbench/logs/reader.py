"""Streaming JSONL reading shared by the parsers: constant memory, bad lines become warnings, never errors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson

from reviewbench.logs.events import ParseStats


def json_lines(path: Path, stats: ParseStats, want: tuple[bytes, ...] | None = None) -> Iterator[tuple[int, dict]]:
    """(line number, object) for each JSON-object line.

    ``want``: byte markers of the lines the caller needs; other lines are only checked for shape and UTF-8,
    not parsed, which is what makes a multi-GB transcript cheap to audit.
    """
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            stats.lines += 1
            stats.bytes += len(raw)
            line = raw.strip()
            if not line:
                continue
            src = f"{path}:{lineno}"
            if want is not None and not any(m in line for m in want):
                if line[:1] != b"{" or line[-1:] != b"}":
                    stats.warn(src, "truncated or non-JSON line" if line[:1] == b"{" else "non-JSON line")
                    continue
                if not line.isascii():
                    try:
                        line.decode("utf-8")
                    except UnicodeDecodeError as e:
                        stats.warn(src, f"invalid UTF-8 at byte {e.start}")
                continue
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError as e:
                msg = str(e)
                if "utf-8" in msg.lower() or "surrogate" in msg.lower():
                    stats.warn(src, "invalid UTF-8")
                    obj = _lenient(line)
                    if obj is None:
                        continue
                else:
                    stats.warn(src, "truncated line" if line[:1] == b"{" and line[-1:] != b"}" else f"not JSON: {msg[:80]}")
                    continue
            if not isinstance(obj, dict):
                stats.warn(src, "JSON line is not an object")
                continue
            yield lineno, obj


def _lenient(line: bytes) -> dict | None:
    """A line with bad UTF-8: decode with replacement so its tool call is still audited."""
    try:
        obj = orjson.loads(line.decode("utf-8", "replace"))
    except orjson.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None
