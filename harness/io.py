"""Small file I/O shared by the harness and reviewbench: atomic writes and bounded JSON reads.

Atomic: a reader (another process, or this one after a crash) sees the old file or the new one, never half of
one — the data goes to a private temporary file beside the target, is flushed, then renamed over it.
Bounded: a JSON file from outside (a bundle's claims, a bars file, a result) is refused with a clear error
when it is larger or more deeply nested than any honest one, instead of exhausting memory or the stack.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Callable
from itertools import accumulate
from pathlib import Path
from typing import IO, Any

MAX_JSON_BYTES = 256 * 1024**2
MAX_DEPTH = 64


class JSONLimitError(ValueError):
    """A JSON document too large or too deeply nested to read."""


def atomic_write(path: str | Path, write: Callable[[IO[bytes]], None], mode: int = 0o644) -> Path:
    """Write ``path`` through ``write(fh)`` on a temporary file in the same folder, then rename it into place."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return target


def atomic_write_bytes(path: str | Path, data: bytes, mode: int = 0o644) -> Path:
    def write(fh: IO[bytes]) -> None:
        fh.write(data)

    return atomic_write(path, write, mode)


def atomic_write_text(path: str | Path, text: str, mode: int = 0o644) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"), mode)


def write_json_atomic(path: str | Path, obj: object, indent: int | None = None) -> Path:
    """The parent reads the result only once it is whole."""
    return atomic_write_text(path, json.dumps(obj, indent=indent) + ("\n" if indent is not None else ""))


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_BRACKETS = re.compile(r"[\[\]{}]")


def json_depth(text: str) -> int:
    """Nesting depth of a JSON text, counted outside strings, without parsing it (regexes run in C; the
    Python loop sees only the brackets)."""
    brackets = _BRACKETS.findall(_STRING.sub("", text))
    return max(accumulate(1 if b in "[{" else -1 for b in brackets), default=0)


def loads_bounded(text: str, max_depth: int = MAX_DEPTH) -> Any:
    """json.loads with a nesting limit (deep nesting would otherwise end in a RecursionError)."""
    if json_depth(text) > max_depth:
        raise JSONLimitError(f"nested deeper than {max_depth} levels")
    return json.loads(text)


def read_json(path: str | Path, max_bytes: int = MAX_JSON_BYTES, max_depth: int = MAX_DEPTH) -> Any:
    """A JSON file, size- and depth-limited; OSError/ValueError (JSONLimitError, JSONDecodeError) on trouble."""
    p = Path(path)
    size = p.stat().st_size
    if size > max_bytes:
        raise JSONLimitError(f"{size} bytes, over the {max_bytes}-byte limit")
    return loads_bounded(p.read_text(encoding="utf-8"), max_depth)
