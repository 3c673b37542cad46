"""Codex code-mode cells: a ``custom_tool_call`` named ``exec`` whose input is a small JavaScript program that
calls ``tools.exec_command({...})``, ``tools.apply_patch(...)``, ``tools.write_stdin({...})`` and other tools.

The program is evaluated just far enough to know each tool call's arguments: string, template and number
literals, ``+`` concatenation, arrays and ``.join``, objects (also shorthand ``{cmd}`` and spreads of known
objects), ``JSON.stringify``, ``String.raw`` and ``const``/``let``/``var`` bindings and reassignments, in
program order. A command that depends on anything else (a loop variable, a function result, input read at run
time) is reported as unresolved, never guessed. Patch text handed to ``apply_patch`` is written content: it
is not code the cell runs, and URLs in it are not contacted. What the cell does outside tool calls is
returned with the tool calls' arguments blanked out, for the JavaScript analyser.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from reviewbench.logs.static.common import MAX_SCRIPT

_TOKEN = re.compile(r"""
   (?P<ws>\s+|//[^\n]*|/\*.*?\*/)
  |(?P<s>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  |(?P<t>`)
  |(?P<n>\d+(?:\.\d+)?)
  |(?P<id>[A-Za-z_$][\w$]*)
  |(?P<p>\.\.\.|=>|===|!==|==|!=|<=|>=|&&|\|\||\?\?|\?\.|[-+*/%=<>!?:;,.(){}\[\]&|^~])
""", re.X | re.S)
_ESC = re.compile(r"\\(?:x([0-9a-fA-F]{2})|u\{([0-9a-fA-F]{1,6})\}|u([0-9a-fA-F]{4})|(\n)|(.))", re.S)
_SIMPLE_ESC = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "b": "\b", "f": "\f", "v": "\v"}


class Unresolved:
    """A value the cell computes at run time; ``why`` says from what."""

    __slots__ = ("why",)

    def __init__(self, why: str) -> None:
        self.why = why

    def __repr__(self) -> str:
        return f"<unresolved: {self.why}>"


@dataclass(slots=True)
class ToolCall:
    tool: str  # exec_command, apply_patch, write_stdin, ...
    args: Any  # the evaluated argument (dict, str, ...), possibly holding Unresolved values
    span: tuple[int, int]  # character range of the argument list in the source


@dataclass(slots=True)
class Cell:
    calls: list[ToolCall] = field(default_factory=list)
    rest: str = ""  # the source with tool-call arguments blanked out


def _unescape(body: str) -> str:
    if "\\" not in body:
        return body

    def sub(m: re.Match[str]) -> str:
        if m.group(1) or m.group(2) or m.group(3):
            v = int(m.group(1) or m.group(2) or m.group(3), 16)
            return chr(v) if v < 0x110000 else ""
        if m.group(4):
            return ""  # a line continuation
        c = m.group(5)
        return _SIMPLE_ESC.get(c, c)

    return _ESC.sub(sub, body)


def _template_end(src: str, i: int) -> tuple[int, list[tuple[str, str]]]:
    """From just after an opening backtick: (index after the closing one, [(kind, text)]) with kind "s" for a
    literal chunk (raw, still escaped) and "e" for a ``${...}`` expression's source."""
    parts: list[tuple[str, str]] = []
    buf: list[str] = []
    n = len(src)
    while i < n:
        c = src[i]
        if c == "\\" and i + 1 < n:
            buf.append(src[i:i + 2])
            i += 2
        elif c == "`":
            parts.append(("s", "".join(buf)))
            return i + 1, parts
        elif c == "$" and src.startswith("${", i):
            parts.append(("s", "".join(buf)))
            buf = []
            depth, j = 1, i + 2
            while j < n and depth:
                ch = src[j]
                if ch in "\"'":
                    m = _TOKEN.match(src, j)
                    j = m.end() if m and m.lastgroup == "s" else j + 1
                    continue
                if ch == "`":
                    j, _ = _template_end(src, j + 1)
                    continue
                depth += 1 if ch == "{" else -1 if ch == "}" else 0
                j += 1
            parts.append(("e", src[i + 2:j - 1]))
            i = j
        else:
            buf.append(c)
            i += 1
    parts.append(("s", "".join(buf)))
    return n, parts


def _tokens(src: str) -> list[tuple[str, Any, int, int]]:
    out: list[tuple[str, Any, int, int]] = []
    i, n = 0, len(src)
    while i < n:
        m = _TOKEN.match(src, i)
        if m is None:
            i += 1
            continue
        kind = m.lastgroup
        if kind == "ws":
            i = m.end()
            continue
        if kind == "t":
            end, parts = _template_end(src, m.end())
            out.append(("t", parts, i, end))
            i = end
            continue
        text = m.group(0)
        out.append((kind or "p", _unescape(text[1:-1]) if kind == "s" else text, i, m.end()))
        i = m.end()
    return out


class _Parser:
    def __init__(self, src: str, env: dict[str, Any]) -> None:
        self.src = src
        self.toks = _tokens(src)
        self.i = 0
        self.env = env
        self.calls: list[ToolCall] = []

    # --- helpers --------------------------------------------------------------------------------------------
    def peek(self, k: int = 0) -> tuple[str, Any, int, int]:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else ("eof", None, len(self.src), len(self.src))

    def take(self) -> tuple[str, Any, int, int]:
        t = self.peek()
        self.i += 1
        return t

    def at(self, value: str) -> bool:
        t = self.peek()
        return t[0] in ("p", "id") and t[1] == value

    def skip_balanced(self) -> None:
        """Skip one token, or a whole bracketed group when it opens one."""
        depth = 0
        while self.peek()[0] != "eof":
            _, v, _, _ = self.take()
            if v in ("(", "[", "{"):
                depth += 1
            elif v in (")", "]", "}"):
                depth -= 1
            if depth <= 0:
                return

    # --- program --------------------------------------------------------------------------------------------
    def program(self) -> None:
        while self.peek()[0] != "eof":
            start = self.i
            kind, v, _, _ = self.peek()
            if kind == "id" and v in ("const", "let", "var") and self.peek(1)[0] == "id" and self.peek(2)[1] == "=":
                name = self.peek(1)[1]
                self.i += 3
                self.env[name] = self.expr()
            elif kind == "id" and self.peek(1)[1] == "=" and not self._member_before():
                self.i += 2
                self.env[v] = self.expr()
            elif kind == "id" and self.peek(1)[1] == "+=" and v in self.env:
                self.i += 2
                self.env[v] = _plus(self.env[v], self.expr())
            elif kind == "id" and v in ("for", "while") and self.peek(1)[1] == "(":
                self._loop_header()
            elif kind == "p" and v in ("{", "}", ";", ",", ")", "]"):
                self.i += 1  # blocks are read as flat statements
            else:
                self.expr()
            if self.i == start:
                self.i += 1

    def _member_before(self) -> bool:
        return self.i > 0 and self.toks[self.i - 1][1] in (".", "?.")

    def _loop_header(self) -> None:
        """``for (const x of xs)``: x takes values the audit does not enumerate (unresolved in the body)."""
        self.i += 2
        depth = 1
        names = []
        while self.peek()[0] != "eof" and depth:
            kind, v, _, _ = self.take()
            if v == "(":
                depth += 1
            elif v == ")":
                depth -= 1
            elif kind == "id" and self.peek()[1] in ("of", "in", "=") and v not in ("const", "let", "var"):
                names.append(v)
        for name in names:
            self.env[name] = Unresolved(f"loop variable {name}")

    # --- expressions ----------------------------------------------------------------------------------------
    def expr(self) -> Any:
        val = self.binary()
        if self.at("?"):
            self.take()
            a = self.expr()
            if self.at(":"):
                self.take()
            b = self.expr()
            return a if a == b else Unresolved("a conditional")
        return val

    def binary(self) -> Any:
        val = self.unary()
        while True:
            kind, v, _, _ = self.peek()
            if kind != "p" or v not in ("+", "-", "*", "/", "%", "&&", "||", "??", "==", "===", "!=", "!==", "<",
                                        ">", "<=", ">=", "&", "|", "^"):
                return val
            self.take()
            rhs = self.unary()
            if v == "+":
                val = _plus(val, rhs)
            elif v in ("||", "??") and not isinstance(val, Unresolved) and val not in ("", None, 0, False):
                val = val
            else:
                val = Unresolved(f"operator {v}")

    def unary(self) -> Any:
        kind, v, _, _ = self.peek()
        if kind in ("id", "p") and v in ("await", "typeof", "void", "!", "-", "+", "new", "yield", "delete"):
            self.take()
            inner = self.unary()
            return inner if v == "await" else Unresolved(v)
        return self.postfix(self.primary())

    def primary(self) -> Any:
        kind, v, start, end = self.take()
        if kind == "s":
            return v
        if kind == "n":
            return float(v) if "." in v else int(v)
        if kind == "t":
            return self._template(v)
        if kind == "p" and v == "(":
            if self._arrow_ahead():
                return self._skip_function()
            val = self.expr()
            while self.at(","):
                self.take()
                val = self.expr()
            if self.at(")"):
                self.take()
            return val
        if kind == "p" and v == "[":
            items: list[Any] = []
            while not self.at("]") and self.peek()[0] != "eof":
                if self.at("..."):
                    self.take()
                    spread = self.expr()
                    items += spread if isinstance(spread, list) else [Unresolved("a spread")]
                else:
                    items.append(self.expr())
                if self.at(","):
                    self.take()
            self.take()
            return items
        if kind == "p" and v == "{":
            return self._object()
        if kind == "id":
            if v in ("function", "async", "class"):
                self.i -= 1
                return self._skip_function()
            if v in ("true", "false"):
                return v == "true"
            if v in ("null", "undefined"):
                return None
            if self.at("=>"):
                self.i -= 1
                return self._skip_function()
            if v == "tools" and self.at("."):
                return Unresolved("a tool result")  # (a call: the postfix step records it)
            if v in self.env:
                return self.env[v]
            return Unresolved(f"{v}")
        return Unresolved(f"{v!r}")

    def _arrow_ahead(self) -> bool:
        depth, j = 1, self.i
        while j < len(self.toks) and depth:
            t = self.toks[j][1]
            depth += 1 if t == "(" else -1 if t == ")" else 0
            j += 1
        return j < len(self.toks) and self.toks[j][1] == "=>"

    def _skip_function(self) -> Unresolved:
        """Skip a function or arrow: its body's tool calls are still found (parsed where they stand)."""
        while self.peek()[0] != "eof" and not self.at("{") and not self.at("=>"):
            self.skip_balanced()
        if self.at("=>"):
            self.take()
            if not self.at("{"):
                self.expr()
                return Unresolved("a function")
        if self.at("{"):
            self.take()
            depth_start = self.i
            saved = dict(self.env)
            depth = 1
            while self.peek()[0] != "eof" and depth:
                if self.at("{"):
                    depth += 1
                    self.take()
                elif self.at("}"):
                    depth -= 1
                    self.take()
                else:
                    before = self.i
                    self._statement_in_body()
                    if self.i == before:
                        self.take()
            del depth_start
            self.env = {**saved, **{k: v for k, v in self.env.items() if k in saved}}
        return Unresolved("a function")

    def _statement_in_body(self) -> None:
        kind, v, _, _ = self.peek()
        if kind == "id" and v in ("const", "let", "var") and self.peek(1)[0] == "id" and self.peek(2)[1] == "=":
            name = self.peek(1)[1]
            self.i += 3
            self.env[name] = self.expr()
        elif kind == "id" and v in ("for", "while") and self.peek(1)[1] == "(":
            self._loop_header()
        elif kind == "p" and v in (";", ",", ")", "]"):
            self.take()
        else:
            self.expr()

    def _object(self) -> Any:
        obj: dict[str, Any] = {}
        while not self.at("}") and self.peek()[0] != "eof":
            kind, v, _, _ = self.peek()
            if v == "...":
                self.take()
                spread = self.expr()
                if isinstance(spread, dict):
                    obj.update(spread)
                else:
                    obj["..."] = Unresolved("a spread")
            elif kind in ("id", "s", "n") and self.peek(1)[1] == ":":
                self.i += 2
                obj[str(v)] = self.expr()
            elif kind == "id" and self.peek(1)[1] in (",", "}"):
                self.take()
                obj[v] = self.env.get(v, Unresolved(v))
            elif v == "[":  # a computed key
                self.skip_balanced()
                if self.at(":"):
                    self.take()
                    self.expr()
                obj["[computed]"] = Unresolved("a computed key")
            else:
                self.skip_balanced()
            if self.at(","):
                self.take()
        self.take()
        return obj

    def _template(self, parts: list[tuple[str, str]]) -> Any:
        out: list[str] = []
        for kind, text in parts:
            if kind == "s":
                out.append(_unescape(text))
                continue
            sub = _Parser(text, self.env)
            val = sub.expr()
            self.calls += sub.calls
            if isinstance(val, (str, int, float)) and not isinstance(val, bool):
                out.append(str(val))
            else:
                return val if isinstance(val, Unresolved) else Unresolved(f"${{{text}}}")
        return "".join(out)

    def postfix(self, val: Any) -> Any:
        while True:
            kind, v, start, _ = self.peek()
            if v in (".", "?."):
                self.take()
                name = self.take()[1]
                if self.at("("):
                    val = self._method(val, str(name), start)
                elif name == "length" and isinstance(val, (str, list)):
                    val = len(val)
                else:
                    val = val.get(name, Unresolved(str(name))) if isinstance(val, dict) else Unresolved(str(name))
            elif v == "(":
                self._args()
                val = Unresolved("a call")
            elif v == "[":
                self.take()
                key = self.expr()
                if self.at("]"):
                    self.take()
                if isinstance(val, list) and isinstance(key, int) and 0 <= key < len(val):
                    val = val[key]
                elif isinstance(val, dict) and isinstance(key, str):
                    val = val.get(key, Unresolved(key))
                else:
                    val = Unresolved("an index")
            elif kind == "t":  # String.raw`...` and other tags
                self.take()
                val = "".join(t for k, t in v if k == "s") if all(k == "s" for k, _ in v) else Unresolved("a tag")
            else:
                return val

    def _args(self) -> tuple[list[Any], tuple[int, int]]:
        open_tok = self.take()
        args: list[Any] = []
        while not self.at(")") and self.peek()[0] != "eof":
            if self.at("..."):
                self.take()
            args.append(self.expr())
            if self.at(","):
                self.take()
            elif not self.at(")"):
                self.skip_balanced()
        close = self.take()
        return args, (open_tok[3], close[2])

    def _method(self, base: Any, name: str, start: int) -> Any:
        # tools.<name>(...) is the call the audit is after: the base token is the identifier "tools"
        prev = self.toks[self.i - 3] if self.i >= 3 else None
        is_tool = prev is not None and prev[0] == "id" and prev[1] == "tools" and (
            self.i < 4 or self.toks[self.i - 4][1] not in (".", "?."))
        args, span = self._args()
        if is_tool:
            self.calls.append(ToolCall(name, args[0] if len(args) == 1 else args, span))
            return Unresolved(f"the result of tools.{name}")
        if isinstance(base, list) and name == "join":
            sep = args[0] if args else ","
            if isinstance(sep, str) and all(isinstance(x, (str, int, float)) for x in base):
                return sep.join(str(x) for x in base)
            return Unresolved("a join")
        if isinstance(base, str) and name in ("trim", "trimEnd", "trimStart", "toString") and not args:
            return {"trim": base.strip(), "trimEnd": base.rstrip(), "trimStart": base.lstrip()}.get(name, base)
        if isinstance(base, str) and name == "concat" and all(isinstance(a, str) for a in args):
            return base + "".join(args)
        if isinstance(base, str) and name in ("replace", "replaceAll") and len(args) == 2 and \
                all(isinstance(a, str) for a in args):
            return base.replace(args[0], args[1], -1 if name == "replaceAll" else 1)
        if isinstance(base, Unresolved) and base.why == "JSON" and name == "stringify" and args:
            return json.dumps(args[0]) if _known(args[0]) else Unresolved("JSON.stringify of a run-time value")
        return Unresolved(f".{name}()")


def _known(v: Any) -> bool:
    if isinstance(v, Unresolved):
        return False
    if isinstance(v, list):
        return all(_known(x) for x in v)
    if isinstance(v, dict):
        return all(_known(x) for x in v.values())
    return True


def _plus(a: Any, b: Any) -> Any:
    if isinstance(a, Unresolved):
        return a
    if isinstance(b, Unresolved):
        return b
    if isinstance(a, str) or isinstance(b, str):
        return f"{_js_str(a)}{_js_str(b)}"
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a + b
    return Unresolved("a sum")


def _js_str(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if isinstance(v, list):
        return ",".join(_js_str(x) for x in v)
    return str(v)


def analyse_cell(js: str) -> Cell:
    """The tool calls of one code-mode cell with their arguments evaluated, and the rest of its source."""
    js = js[:MAX_SCRIPT]
    p = _Parser(js, {"JSON": Unresolved("JSON")})
    try:
        p.program()
    except RecursionError:  # hostile nesting: what was found so far
        pass
    rest = list(js)
    for call in p.calls:
        a, b = call.span
        rest[a:b] = " " * (b - a)
    return Cell(calls=p.calls, rest="".join(rest))


def unresolved(value: Any) -> str | None:
    """Why a value is not known before the cell runs (None when it is fully known)."""
    if isinstance(value, Unresolved):
        return value.why
    if isinstance(value, list):
        return next((w for w in map(unresolved, value) if w), None)
    if isinstance(value, dict):
        return next((w for w in map(unresolved, value.values()) if w), None)
    return None
