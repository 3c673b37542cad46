"""JavaScript, Ruby, Perl, PHP, R, Julia and Lua: a light lexer that folds literals and judges each folded
string by the call it is passed to."""

from __future__ import annotations

import ast
import base64
import binascii
import posixpath
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Literal

from reviewbench.logs.static.common import (analyse_shell, Access, FILE_EXTENSIONS, Facts, HF_JS_CALLS, MAX_DEPTH, MAX_SCRIPT,
    URL_RE, _CHILD_PROCESS, _CONNECT_CALLS, _HOSTNAME, _NET_API, _WALKERS, _WRITE_CALL, _WRITE_MODES,
    _classify_strings, _is_print, decode_payloads, resolve, shell_join)



_CODE_TOKEN = re.compile(r"""
   (?P<s>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  |(?P<t>`(?:[^`\\]|\\.)*`)
  |(?P<c>//[^\n]*|/\*.*?\*/|\#[^\n]*|--[^\n]*)
  |(?P<id>[A-Za-z_$@][\w$]*(?:(?:\.|::|->)[A-Za-z_$][\w$]*)*)
  |(?P<p>\.\.|[(),;=+.{}\[\]\n:*])
""", re.X | re.S)
_ESCAPES = re.compile(r"\\(?:x([0-9a-fA-F]{2})|u\{?([0-9a-fA-F]{4,6})\}?|(.))", re.S)
_CODE_ENV = re.compile(
    r"""(?:process\.env|ENV|\$ENV|Deno\.env|os\.environ)(?:\.(\w+)|\[\s*['"](\w+)['"]\s*\]|\{\s*['"]?(\w+)['"]?\s*\})"""
    r"""\s*=\s*(['"])(.*?)\4|Sys\.setenv\(\s*(\w+)\s*=\s*(['"])(.*?)\7|putenv\(\s*['"](\w+)=(.*?)['"]""")
_SHELL_LITERALS = re.compile(r"%x\((.*?)\)|%x\{(.*?)\}|qx\{(.*?)\}|qx\((.*?)\)|qx/(.*?)/", re.S)
_KEYWORDS = {"return", "new", "await", "const", "let", "var", "my", "our", "local", "if", "elsif", "unless", "and",
             "or", "not", "in", "of", "typeof", "yield", "when", "then", "do", "else", "use", "require", "import"}


def _unescape(body: str) -> str:
    if "\\" not in body:
        return body

    def sub(m: re.Match[str]) -> str:
        if m.group(1):
            return chr(int(m.group(1), 16))
        if m.group(2):
            v = int(m.group(2), 16)
            return chr(v) if v < 0x110000 else ""
        c = m.group(3)
        return {"n": "\n", "t": "\t", "r": "\r", "0": "\0"}.get(c, c)

    return _ESCAPES.sub(sub, body)


class _Call:
    __slots__ = ("callee", "strings", "recursive", "write_mode")

    def __init__(self, callee: str | None) -> None:
        self.callee = callee
        self.strings: list[str] = []
        self.recursive = False
        self.write_mode = False


def analyse_code(code: str, lang: str, cwd: str | None, files: Mapping[str, str] | None = None,
                 depth: int = 0) -> Facts:
    """What a JavaScript/Ruby/Perl/PHP/R/Julia/Lua snippet touches: a light lexer, not a parser. Literals are
    unescaped and concatenation chains (``+``, ``.``, ``..``) folded, with variables assigned from literals;
    each folded string is judged by the call it is passed to (print, network, file write, walk, child
    process)."""
    facts = Facts()
    code = code[:MAX_SCRIPT]
    hash_comment = lang != "js"
    dash_comment = lang == "lua"
    tokens: list[tuple[str, str]] = []  # (kind, value): s (string), id, p (punctuation), x (shell command)
    for m in _CODE_TOKEN.finditer(code):
        kind = m.lastgroup or ""
        text = m.group(0)
        if kind == "c":
            if (text[0] == "#" and not hash_comment) or (text.startswith("--") and not dash_comment):
                if text[0] == "-":
                    tokens.append(("p", "-"))
                continue
            continue
        if kind == "s":
            tokens.append(("s", _unescape(text[1:-1])))
        elif kind == "t":
            body = text[1:-1]
            if lang == "js":  # a template literal: its static parts
                tokens.append(("s", _unescape(re.sub(r"\$\{[^}]*\}", "", body))))
            else:  # Ruby/Perl/PHP backticks run a shell command
                tokens.append(("x", body))
        else:
            tokens.append((kind, text))
    for m in _SHELL_LITERALS.finditer(code):
        tokens.append(("x", next(g for g in m.groups() if g is not None)))
    names: dict[str, str] = {}
    stack: list[_Call] = []
    folded: list[tuple[str, _Call | None, str | None]] = []  # (value, enclosing call, direct callee)
    shell_cmds: list[str] = [v for k, v in tokens if k == "x"]
    i, n = 0, len(tokens)
    while i < n:
        kind, val = tokens[i]
        if kind in ("s", "id") and (kind == "s" or val in names):
            # a concatenation chain: operand (op operand)*
            parts = [val if kind == "s" else names[val]]
            j = i + 1
            while j + 1 < n and tokens[j][0] == "p" and tokens[j][1] in ("+", ".", "..") and (
                    tokens[j + 1][0] == "s" or (tokens[j + 1][0] == "id" and tokens[j + 1][1] in names)):
                nxt = tokens[j + 1]
                parts.append(nxt[1] if nxt[0] == "s" else names[nxt[1]])
                j += 2
            value = "".join(parts)
            prev = tokens[i - 1] if i else ("", "")
            if prev == ("p", "=") and i >= 2 and tokens[i - 2][0] == "id" and \
                    (j >= n or tokens[j] in (("p", ";"), ("p", "\n"), ("p", ","), ("p", ")"))):
                names[tokens[i - 2][1].lstrip("$@")] = value
                names[tokens[i - 2][1]] = value
                if not stack:  # const URL = "..."; data until a call is handed it (folded again there)
                    i = j
                    continue
            direct = prev[1] if prev[0] == "id" and prev[1] not in _KEYWORDS else None
            call = stack[-1] if stack else None
            if call is not None:
                call.strings.append(value)
                if value in _WRITE_MODES:
                    call.write_mode = True
            folded.append((value, call, direct))
            i = j
            continue
        if kind == "p" and val in ("(", "["):
            callee = tokens[i - 1][1] if val == "(" and i and tokens[i - 1][0] == "id" else None
            if val == "[" and stack:
                callee = stack[-1].callee  # an array argument belongs to the call around it
            stack.append(_Call(callee))
        elif kind == "p" and val in (")", "]") and stack:
            done = stack.pop()
            if stack:
                stack[-1].strings += done.strings
                stack[-1].recursive |= done.recursive
                stack[-1].write_mode |= done.write_mode
            last = (done.callee or "").replace("::", ".").replace("->", ".").rsplit(".", 1)[-1]
            if last in _CHILD_PROCESS and done.strings and val == ")":  # exec("cmd line") or spawn("cmd", [args])
                shell_cmds.append(done.strings[0] if len(done.strings) == 1 else shell_join(done.strings))
        elif kind == "id" and stack and val in ("recursive", "recursively", "TRUE") and \
                (val != "TRUE" or "recursive" in code):
            stack[-1].recursive = True
        i += 1
    net = bool(_NET_API.search(code))
    hf_module = "@huggingface/hub" in code or "huggingface_hub" in code
    for value, call, direct in folded:
        callee = (call.callee if call is not None else None) or direct
        last = (callee or "").replace("::", ".").replace("->", ".").rsplit(".", 1)[-1]
        if callee and _is_print(callee.replace("::", ".").replace("->", ".")):
            facts.mentioned_urls += URL_RE.findall(value)
            continue
        if "://" in value:
            for u in URL_RE.findall(value):
                (facts.urls if net or callee else facts.mentioned_urls).append(u)
        elif net and last in _CONNECT_CALLS and _HOSTNAME.match(value) and \
                value.rsplit(".", 1)[-1].lower() not in FILE_EXTENSIONS:
            facts.urls.append(f"tcp://{value.lower()}")  # net.connect(443, "host"), TCPSocket.new("host", 80)
        if direct and direct.rsplit(".", 1)[-1] in _CHILD_PROCESS and depth < MAX_DEPTH:
            shell_cmds.append(value)  # Ruby/Perl: system "curl ..." without parentheses
        if value.startswith(("/", "./", "../", "~")) and "\n" not in value and len(value) < 400:
            write = bool(callee and _WRITE_CALL.match(last)) or bool(call and call.write_mode)
            recursive = last in _WALKERS or bool(call and call.recursive) or "**" in value
            mode: Literal["read", "write", "list"] = "write" if write and not recursive else (
                "list" if recursive else "read")
            facts.accesses.append(Access(resolve(value, cwd), mode, recursive, f"{lang} {callee or ''}({value[:200]!r})"))
        if hf_module and last in HF_JS_CALLS:
            facts.hf_calls.append(f"{callee}({value[:200]!r})")
        if depth < MAX_DEPTH and len(value) >= 12:
            for dec in decode_payloads(value):
                facts.urls += URL_RE.findall(dec)
                _classify_strings([dec], cwd, facts, f"{lang} (decoded)", True, depth + 1)
    for m in _CODE_ENV.finditer(code):
        g = m.groups()
        if g[4] is not None:
            facts.env[g[0] or g[1] or g[2]] = g[4]
        elif g[7] is not None:
            facts.env[g[5]] = g[7]
        elif g[8] is not None:
            facts.env[g[8]] = g[9]
    if depth < MAX_DEPTH:
        for cmd in shell_cmds:
            facts.extend(analyse_shell(cmd, cwd, None, files, depth + 1))
    return facts


