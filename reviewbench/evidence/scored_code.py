"""The code that was scored: method.py as it ran on the board benchmark's calls.

A method can hold two rules and choose between them by where it thinks it runs (the sandbox's files, its
services, its signals, the order or shape of its calls): the rule the benchmark scores, and another shown to
whoever reads or probes it elsewhere. Reading the whole file, the code evidence sees both and takes the pair for
a new combination. The benchmark's method host reports which lines of method.py ran on the scored calls
(``harness.methodhost.LineTrace``); here every statement of which no line ran there is set aside (replaced by
``pass``, line numbers kept, so quotes still point at the file), and the readers of the code — retrieval by
computation, code similarity, the prior-art flags — read what was scored.

The record comes from the method's own process, so it is trusted only where the method cannot have reached the
trace: no tracing, frame or interpreter introspection, no threads or processes of its own, no code built at run
time (``untraced_reasons``). Otherwise, or where the trace was lost, the whole file is read, as before, and the
report says why. The description's check (MISSTATED_METHOD) still reads the whole file: a fallback the offline
benchmark's short items never reach is no misstatement.
"""

from __future__ import annotations

import ast

from pydantic import BaseModel, ConfigDict

# names through which a method could stop, steer or forge its own line record, or run code the trace cannot see
_TRACE_REACH = frozenset({
    "settrace", "setprofile", "gettrace", "getprofile", "_getframe", "f_trace", "f_trace_lines", "f_back",
    "currentframe", "monitoring", "inspect", "gc", "ctypes", "cffi", "_thread", "threading", "Thread",
    "start_new_thread", "ThreadPoolExecutor", "ProcessPoolExecutor", "concurrent", "Process", "Pool", "fork",
    "forkpty", "Popen", "subprocess", "system", "execv", "execve", "spawnv", "exec", "eval", "compile",
    "__import__", "import_module", "importlib", "marshal", "CodeType", "FunctionType", "__code__", "jit",
    "numba", "__builtins__", "builtins", "globals", "vars", "sys.modules", "__dict__", "attrgetter", "methodcaller",
    "methodhost", "LineTrace", "__subclasses__"})
# of those, the ones no honest code spells as a string: counted wherever a string holds them (``x.__dict__["settrace"]``)
_TRACE_WORDS = frozenset({"settrace", "setprofile", "gettrace", "getprofile", "_getframe", "f_trace", "f_trace_lines",
                          "f_back", "currentframe", "monitoring", "methodhost", "LineTrace", "__code__"})


class SetAside(BaseModel):
    """A statement of which no line ran on the scored calls."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    first: int
    last: int


class ScoredCode(BaseModel):
    """What the code readers read: ``source`` with ``set_aside`` replaced by ``pass`` (``read`` "as scored"), or
    the whole file (``read`` "whole") and why."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: str
    read: str  # "as scored" | "whole"
    reason: str  # one line: what was set aside, or why the whole file is read
    set_aside: list[SetAside] = []


def untraced_reasons(tree: ast.AST) -> list[str]:
    """The names in the code through which it could have reached its own line trace (sorted, distinct)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in _TRACE_REACH:
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            if node.attr in _TRACE_REACH:
                found.add(node.attr)
            if node.attr == "modules" and isinstance(node.value, ast.Name) and node.value.id == "sys":
                found.add("sys.modules")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            mods = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            for part in [*mods, *(a.name for a in node.names)]:
                found.update(p for p in part.split(".") if p in _TRACE_REACH)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in _TRACE_WORDS:
            found.add(node.value)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("getattr", "setattr", "hasattr") and len(node.args) >= 2):
            name = node.args[1]
            if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
                found.add(f"{node.func.id} with a computed name")
            elif name.value in _TRACE_REACH:  # an attribute named by a string is the attribute
                found.add(name.value)
    return sorted(found)


def _blocks(node: ast.AST) -> list[list[ast.stmt]]:
    out = []
    for name in ("body", "orelse", "finalbody"):
        block = getattr(node, name, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            out.append(block)
    for h in getattr(node, "handlers", ()) or ():
        out.append(h.body)
    for c in getattr(node, "cases", ()) or ():
        out.append(c.body)
    return out


def _span(s: ast.stmt) -> tuple[int, int, int]:
    """(first line, last line, column) of a statement, its decorators included."""
    decorators = getattr(s, "decorator_list", None) or []
    first = min([s.lineno, *(d.lineno for d in decorators)])
    return first, s.end_lineno or s.lineno, s.col_offset


def _unrun(block: list[ast.stmt], ran: set[int], out: list[ast.stmt]) -> None:
    for s in block:
        first, last, _ = _span(s)
        if not any(n in ran for n in range(first, last + 1)):
            out.append(s)
        else:
            for inner in _blocks(s):
                _unrun(inner, ran, out)


def scored_code(source: str, executed: list[int] | None, trace_lost: bool = False) -> ScoredCode:
    """``source`` as it ran on the scored calls, where ``executed`` (the benchmark's line record) can be trusted."""
    if executed is None:
        why = ("the method stopped its line trace on the scored calls (the whole file is read)" if trace_lost else
               "no line record of the scored calls (the whole file is read)")
        return ScoredCode(source=source, read="whole", reason=why)
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return ScoredCode(source=source, read="whole", reason="method.py does not parse (the whole file is read)")
    reach = untraced_reasons(tree)
    if reach:
        return ScoredCode(source=source, read="whole", reason="the code could reach its own line trace ("
                          + ", ".join(reach[:4]) + "): the whole file is read")
    ran = set(executed)
    if not ran:
        return ScoredCode(source=source, read="whole", reason="no line of method.py ran on the scored calls "
                                                              "(the whole file is read)")
    unrun: list[ast.stmt] = []
    _unrun(tree.body, ran, unrun)
    # what cannot matter: no bytecode of its own (pass, docstrings and other constants, global, bare annotations)
    unrun = [s for s in unrun if not (isinstance(s, (ast.Pass, ast.Global, ast.Nonlocal))
                                     or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
                                     or (isinstance(s, ast.AnnAssign) and s.value is None))]
    if not unrun:
        return ScoredCode(source=source, read="as scored", reason="every statement ran on the scored calls")
    lines = source.splitlines(keepends=True)
    for s in sorted(unrun, key=lambda s: -_span(s)[0]):
        first, last, col = _span(s)
        end_col = s.end_col_offset if s.end_col_offset is not None else len(lines[last - 1])
        head, tail = lines[first - 1][:col], lines[last - 1][end_col:]
        lines[first - 1:last] = [head + "pass" + tail] + ["\n"] * (last - first)
    text = "".join(lines)
    try:
        ast.parse(text)
    except SyntaxError:  # a layout this cannot rewrite in place: read whole rather than guess
        return ScoredCode(source=source, read="whole", reason="the statements that never ran could not be set "
                                                              "aside in place (the whole file is read)")
    spans = [SetAside(first=a, last=b) for a, b in sorted((_span(s)[0], _span(s)[1]) for s in unrun)]
    n = sum(s.last - s.first + 1 for s in spans)
    return ScoredCode(source=text, read="as scored", set_aside=spans,
                      reason=f"{len(spans)} statement(s) that never ran on the scored calls set aside ({n} lines: "
                             + ", ".join(f"{s.first}-{s.last}" if s.last > s.first else str(s.first)
                                         for s in spans[:6]) + (", ..." if len(spans) > 6 else "") + ")")
