"""Reading log records with bounded memory, whatever the layout: JSON lines, a JSON array (compact or
pretty-printed), concatenated pretty-printed objects, or one wrapper object holding the records (HAR
``log.entries``, the TypeScript Codex CLI's ``items``).

Logs are hostile input: no record is held beyond ``MAX_RECORD_BYTES``. A longer line or record is skipped
(its bytes are read through, never kept) and becomes a parse warning with its line number; the audit goes
on. Bad lines become warnings, never errors.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import orjson

from reviewbench.logs.events import ParseStats

Layout = Literal["lines", "json"]
MAX_RECORD_BYTES = 32 << 20  # a real transcript line is at most a few MB; this bounds the parse to ~100 MB
_CHUNK = 1 << 20
# Arrays of records inside a single wrapper object: the TypeScript Codex CLI's {"session", "items"}, HAR's
# {"log": {"entries"}}, and the usual containers of exported transcripts.
WRAPPER_PATHS = {("items",), ("log", "entries"), ("entries",), ("messages",), ("events",)}


def _last_byte(line: bytes) -> bytes:
    """The last non-blank byte, without copying the line (it may be megabytes)."""
    end = len(line)
    while end and line[end - 1 : end] in (b"\n", b"\r", b" ", b"\t"):
        end -= 1
    return line[end - 1 : end]


def check_unparsed(line: bytes, stats: ParseStats, path: Path, lineno: int) -> bool:
    """Shape and UTF-8 checks for a record that is not parsed; False when it is broken (and warned about).
    Blank lines pass."""
    first = line[:1]
    if first in (b" ", b"\t", b"\r", b"\n"):
        line = line.strip()
        if not line:
            return True
        first = line[:1]
    if first != b"{" or _last_byte(line) != b"}":
        stats.unread_records += 1
        stats.warn(f"{path}:{lineno}", "truncated or non-JSON line" if line[:1] == b"{" else "non-JSON line")
        return False
    if not line.isascii():
        try:
            line.decode("utf-8")
        except UnicodeDecodeError as e:
            stats.unread_records += 1
            stats.warn(f"{path}:{lineno}", f"invalid UTF-8 at byte {e.start}")
            return False
    return True


def parse_line(line: bytes, stats: ParseStats, path: Path, lineno: int) -> dict | None:
    """One JSON object, or None with a warning. Bad UTF-8 is replaced so the call is still audited."""
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as e:
        msg = str(e)
        src = f"{path}:{lineno}"
        if "utf-8" in msg.lower() or "surrogate" in msg.lower():
            stats.warn(src, "invalid UTF-8")
            obj = _lenient(line)
            if obj is None:
                stats.unread_records += 1
                return None
        else:
            stats.unread_records += 1
            stripped = line.strip()
            stats.warn(src, "truncated line" if stripped[:1] == b"{" and stripped[-1:] != b"}"
                       else f"not JSON: {msg[:80]}")
            return None
    if not isinstance(obj, dict):
        stats.unread_records += 1
        stats.warn(f"{path}:{lineno}", "JSON record is not an object")
        return None
    return obj


def _lenient(line: bytes) -> dict | None:
    """A record with bad UTF-8: decoded with replacement so its tool call is still audited."""
    try:
        obj = orjson.loads(line.decode("utf-8", "replace"))
    except orjson.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None


def _overlong(stats: ParseStats, path: Path, lineno: int, size: int, cap: int) -> None:
    stats.overlong_records += 1
    stats.unread_records += 1
    stats.warn(f"{path}:{lineno}", f"record of {size / 1e6:.1f} MB is over the {cap >> 20} MiB cap: not read, "
                                   "its tool calls are not audited")


def raw_lines(path: Path, stats: ParseStats, cap: int = MAX_RECORD_BYTES) -> Iterator[tuple[int, bytes]]:
    """(line number, line without its newline) of each line of at most ``cap`` bytes; a longer one is read
    through in 1 MiB pieces and warned about, never held. One ``readline(cap + 1)`` (C) per line: reading
    1 MiB chunks and splitting them in Python cost about what orjson spends parsing the lines."""
    n_lines = n_bytes = 0
    try:
        with open(path, "rb", buffering=1 << 16) as fh:
            readline = fh.readline
            line = readline(cap + 1)
            if line.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte order mark (Windows editors)
                n_bytes += 3
                line = line[3:]
            while line:
                n_lines += 1
                n_bytes += len(line)
                if line[-1:] == b"\n":
                    yield n_lines, line[:-1]
                elif len(line) <= cap:  # the last line, without a newline
                    yield n_lines, line
                else:  # over the cap: read through to its end, keep nothing
                    size = len(line)
                    while True:
                        more = readline(_CHUNK)
                        if not more:
                            break
                        n_bytes += len(more)
                        if more[-1:] == b"\n":
                            size += len(more) - 1
                            break
                        size += len(more)
                    _overlong(stats, path, n_lines, size, cap)
                line = readline(cap + 1)
    finally:
        stats.lines += n_lines
        stats.bytes += n_bytes


# --- a streaming splitter for JSON that is not one object per line --------------------------------------------
# non-structural bytes and whole strings; possessive (*+, ++): an unterminated string must fail in linear time,
# not backtrack through every way of splitting its characters
_PLAIN = re.compile(rb'(?:[^"\[\]{}]++|"(?:[^"\\]++|\\.)*+")*+', re.S)
_STR_REST = re.compile(rb'(?:[^"\\]++|\\.)*+', re.S)
_KEY_BEFORE = re.compile(rb'"((?:[^"\\]|\\.)*)"\s*:\s*$', re.S)


class _Frame:
    __slots__ = ("kind", "path", "record")

    def __init__(self, kind: int, path: tuple[str, ...] | None, record: bool) -> None:
        self.kind = kind  # ord("{") or ord("[")
        self.path = path  # key path from the root object (None once deeper than any wrapper path)
        self.record = record  # elements of this array are records


def json_stream(path: Path, stats: ParseStats, cap: int = MAX_RECORD_BYTES) -> Iterator[tuple[int, bytes]]:
    """(line number, bytes) of each record of a JSON text: the objects of a top-level array or of a stream of
    concatenated objects, or, for a single wrapper object, its record arrays' elements plus a header record
    (the wrapper with those arrays emptied, yielded when the first one opens). The text is scanned once, in
    1 MiB chunks, with the string being read carried over chunk boundaries: at most ``cap`` bytes of a record
    are held, and a longer record is scanned through and warned about."""
    with open(path, "rb") as fh:
        buf = fh.read(_CHUNK)
        base = 0  # absolute offset of buf[0]
        if buf.startswith(b"\xef\xbb\xbf"):
            buf, base = buf[3:], 3
        eof = not buf
        pos = 0
        in_str = False  # pos is inside a string that began earlier
        newlines, nl_at = 0, base  # newlines counted in the absolute bytes before nl_at
        stack: list[_Frame] = []
        start = -1  # absolute offset of the record being captured, -1 when none
        start_depth = 0
        dropped = False  # the record outgrew the cap: scanned through, not kept

        def line_of(abs_pos: int) -> int:
            nonlocal newlines, nl_at
            if abs_pos > nl_at:
                newlines += buf.count(b"\n", nl_at - base, abs_pos - base)
                nl_at = abs_pos
            return newlines + 1

        while True:
            if in_str:
                m = _STR_REST.match(buf, pos)
                j = m.end() if m else pos
                if j < len(buf) and buf[j] == 0x22:
                    pos, in_str = j + 1, False
                    continue
                pos = j  # the string goes on past the data read so far
            else:
                m = _PLAIN.match(buf, pos)
                if m:
                    pos = m.end()
                if pos < len(buf) and buf[pos] == 0x22:  # a string that does not end within the data read
                    pos, in_str = pos + 1, True
                    continue
            if pos >= len(buf) or in_str:
                if eof:
                    if stack or in_str:
                        stats.unread_records += 1
                        stats.warn(f"{path}:{line_of(base + len(buf))}", "JSON ends inside a value (truncated file)")
                    break
                keep = pos if in_str else max(0, pos - 1024)  # (a little context: the key before a bracket)
                if start >= 0 and not dropped:
                    if base + len(buf) - start > cap:
                        dropped = True
                    else:
                        keep = min(keep, start - base)
                line_of(base + keep)
                more = fh.read(_CHUNK)
                eof = not more
                buf = buf[keep:] + more
                base += keep
                pos -= keep
                continue
            c = buf[pos]
            abs_pos = base + pos
            if c == 0x7B or c == 0x5B:  # { or [
                parent = stack[-1] if stack else None
                key_path: tuple[str, ...] | None = None
                if parent is None:
                    key_path = ()
                elif parent.path is not None and parent.kind == 0x7B:
                    km = _KEY_BEFORE.search(buf, max(0, pos - 512), pos)
                    key_path = parent.path + (km.group(1).decode("utf-8", "replace") if km else "",)
                    if not any(w[: len(key_path)] == key_path for w in WRAPPER_PATHS):
                        key_path = None
                wrapper = c == 0x5B and key_path in WRAPPER_PATHS and stack[0].kind == 0x7B
                if wrapper and start >= 0:
                    if not dropped:  # the root so far, with this array emptied, is the header record
                        closers = b"".join(b"}" if f.kind == 0x7B else b"]" for f in reversed(stack))
                        yield line_of(start), bytes(buf[start - base : pos]) + b"[]" + closers
                    start, dropped = -1, False
                is_record = start < 0 and c == 0x7B and (parent is None or parent.record)
                stack.append(_Frame(c, key_path, record=c == 0x5B and (parent is None or wrapper)))
                if is_record:
                    start, start_depth, dropped = abs_pos, len(stack), False
            else:  # } or ]
                if not stack:
                    stats.warn(f"{path}:{line_of(abs_pos)}", "unbalanced bracket")
                    pos += 1
                    continue
                stack.pop()
                if start >= 0 and len(stack) == start_depth - 1:
                    lineno = line_of(start)
                    if dropped or abs_pos + 1 - start > cap:
                        _overlong(stats, path, lineno, abs_pos + 1 - start, cap)
                    else:
                        yield lineno, bytes(buf[start - base : pos + 1])
                    start, dropped = -1, False
            pos += 1
        line_of(base + len(buf))
        size = base + len(buf)
        stats.lines += newlines + (1 if size and not buf.endswith(b"\n") else 0)
        stats.bytes += size


def raw_records(path: Path, stats: ParseStats, layout: Layout = "lines",
                cap: int = MAX_RECORD_BYTES) -> Iterator[tuple[int, bytes]]:
    return raw_lines(path, stats, cap) if layout == "lines" else json_stream(path, stats, cap)


def json_records(path: Path, stats: ParseStats, layout: Layout = "lines",
                 cap: int = MAX_RECORD_BYTES) -> Iterator[tuple[int, dict]]:
    """(line number, object) for each JSON-object record; bad records become warnings and are skipped."""
    for lineno, raw in raw_records(path, stats, layout, cap):
        if raw.isspace():
            continue
        obj = parse_line(raw, stats, path, lineno)
        if obj is not None:
            yield lineno, obj


def first_byte(path: Path) -> bytes:
    """The first non-blank byte of a file (after a UTF-8 BOM), b"" for an empty or unreadable one."""
    try:
        with open(path, "rb") as fh:
            while True:
                chunk = fh.read(1 << 16)
                if not chunk:
                    return b""
                chunk = chunk.lstrip(b"\xef\xbb\xbf").lstrip()
                if chunk:
                    return chunk[:1]
    except OSError:
        return b""


def sample_layout(path: Path, cap: int = MAX_RECORD_BYTES, probe: int = 5) -> Layout:
    """``lines`` when one of the first non-blank lines is a whole JSON value, else ``json`` (pretty-printed,
    an array, a wrapper). Read record by record: a huge first line is read whole (up to the cap), not sniffed."""
    fb = first_byte(path)
    if fb == b"[":
        return "json"
    if fb != b"{":
        return "lines"  # not JSON at all: line by line, each a warning
    tried = 0
    for _, raw in raw_lines(path, ParseStats(), cap):
        line = raw.strip()
        if not line:
            continue
        try:
            orjson.loads(line)
            return "lines"
        except orjson.JSONDecodeError:
            tried += 1
            if tried >= probe:
                break
    return "json"
