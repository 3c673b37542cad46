"""A stage's version, derived from the source of the code that decides its output (never bumped by hand).

``source_version(("reviewbench.stages.evidence", "reviewbench.evidence", "harness", "reviewbench/data/*.json"))``
hashes the files those names stand for, read from disk: a module is its file, a package every ``.py`` file under
it, a name with a ``/`` a glob of data files from the repository root. Python source is hashed as the code it
compiles to (instructions, names, constants; no line numbers, docstrings or asserts), so a comment, a docstring or
a reformatting changes no version and reruns nothing; any change of code does. Each file is compiled once per
process, and again only when its size or modification time changes: a full review's stages cost one pass over
the ~100 files they name (a few tenths of a second), a stage selected alone only its own.

Names are resolved without importing anything: ``reviewbench.*`` and ``harness.*`` from the folder these packages
live in, any other module (a stage added from outside, e.g. a test's) from ``sys.modules``.
"""

from __future__ import annotations

import hashlib
import sys
import types
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the folder holding reviewbench/ and harness/
PACKAGES = ("reviewbench", "harness")


def _module_files(name: str) -> list[Path]:
    if "/" in name:
        return sorted(p for p in ROOT.glob(name) if p.is_file())
    if name.split(".")[0] in PACKAGES:
        base = ROOT.joinpath(*name.split("."))
        if base.with_suffix(".py").is_file():  # a module (harness/results.py beside the data folder harness/results/)
            return [base.with_suffix(".py")]
        if (base / "__init__.py").is_file():  # a package: every module under it
            return sorted(p for p in base.rglob("*.py") if "__pycache__" not in p.parts)
        return []
    mod = sys.modules.get(name)
    file = getattr(mod, "__file__", None)
    return [Path(file)] if file else []


def stage_files(names: tuple[str, ...]) -> list[Path]:
    """The files a stage's version covers (an unknown name covers none: a test checks the built-in stages')."""
    return sorted({p for n in names for p in _module_files(n)})


def _const(c: object, h: "hashlib._Hash") -> None:
    if isinstance(c, types.CodeType):
        _code(c, h)
    elif isinstance(c, frozenset):  # `x in {"a", "b"}`: its order follows the process's hash seed
        h.update(b"{" + "\0".join(sorted(repr(x) for x in c)).encode() + b"}")
    elif isinstance(c, tuple):
        h.update(b"(")
        for x in c:
            _const(x, h)
        h.update(b")")
    else:
        h.update(repr(c).encode() + b"\0")


def _code(co: types.CodeType, h: "hashlib._Hash") -> None:
    """A code object's instructions, names and constants: no line numbers, so comments and blank lines are not in it."""
    h.update(co.co_code + co.co_exceptiontable)
    h.update(repr((co.co_name, co.co_names, co.co_varnames, co.co_freevars, co.co_cellvars, co.co_argcount,
                   co.co_posonlyargcount, co.co_kwonlyargcount, co.co_flags)).encode())
    for c in co.co_consts:
        _const(c, h)


@lru_cache(maxsize=None)
def _digest(path: str, size: int, mtime_ns: int) -> str:
    data = Path(path).read_bytes()
    h = hashlib.sha256()
    if path.endswith(".py"):
        try:  # compiled as ``python -OO`` does: without docstrings and asserts (type narrowing here, not behaviour)
            _code(compile(data, path, "exec", dont_inherit=True, optimize=2), h)
            return h.hexdigest()
        except (SyntaxError, ValueError):
            pass  # hashed as it is: a broken file is a change too
    h.update(data)
    return h.hexdigest()


def file_digest(path: Path) -> str:
    st = path.stat()
    return _digest(str(path), st.st_size, st.st_mtime_ns)


def source_version(names: tuple[str, ...]) -> str:
    """A short hash of the code ``names`` stand for (their files' paths, relative where possible, and contents)."""
    h = hashlib.sha256()
    for p in stage_files(names):
        rel = p.relative_to(ROOT).as_posix() if p.is_relative_to(ROOT) else p.name
        h.update(f"{rel}\0{file_digest(p)}\n".encode())
    return h.hexdigest()[:16]
