"""Python: a constant folder over the AST, and the calls whose arguments resolve to a path, a URL, a shell
command, an environment change or the harness's test split."""

from __future__ import annotations

import ast
import base64
import binascii
import hashlib
import posixpath
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import filterfalse
from typing import Literal

from reviewbench.logs.static.common import (analyse_shell, Access, Facts, HARNESS_MODULES, HF_PY_CALLS, MAX_DEPTH, URL_RE,
    NO_FACTS, Relevance, Workspace, _HEX_ESC, hex_run, make_room, _PY_GLOBS, _PY_WALKERS, _classify_strings, _is_print, b64_runs, has_payload, resolve, shell_join)



MAX_FOLDED = 100_000  # chars of a folded string: x = x.replace("a", "aa") forty times must not fill memory


class _Folder:
    """Folds constant string expressions: literals, +, f-strings, join, os.path.join, chr, [::-1], decoders."""

    def __init__(self) -> None:
        self.names: dict[str, str | list[str]] = {}

    def fold(self, node: ast.AST) -> str | list[str] | None:
        val = self._fold(node)
        if isinstance(val, str) and len(val) > MAX_FOLDED:
            return None
        if isinstance(val, list) and sum(len(v) for v in val) > MAX_FOLDED:
            return None
        return val

    def _fold(self, node: ast.AST) -> str | list[str] | None:  # noqa: C901 - one small interpreter
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                return node.value
            if isinstance(node.value, bytes):
                return node.value.decode("utf-8", "replace")
            return None
        if isinstance(node, ast.Name):
            return self.names.get(node.id)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Div)):
            a, b = self.fold(node.left), self.fold(node.right)
            if isinstance(a, str) and isinstance(b, str):
                return a + b if isinstance(node.op, ast.Add) else posixpath.join(a, b)  # Path / "x"
            if isinstance(a, list) and isinstance(b, list) and isinstance(node.op, ast.Add):
                return a + b
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            a, b = self.fold(node.left), self.fold(node.right)
            if isinstance(a, str) and isinstance(b, str):
                try:
                    return a % b
                except (TypeError, ValueError):
                    return None
        if isinstance(node, ast.JoinedStr):
            parts = []
            for v in node.values:
                f = self.fold(v.value) if isinstance(v, ast.FormattedValue) else self.fold(v)
                if not isinstance(f, str):
                    return None
                parts.append(f)
            return "".join(parts)
        if isinstance(node, (ast.List, ast.Tuple)):
            items = [self.fold(e) for e in node.elts]
            strs = [i for i in items if isinstance(i, str)]
            return strs if len(strs) == len(items) else None
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
            base = self.fold(node.value)
            step = node.slice.step
            if isinstance(base, str) and isinstance(step, ast.UnaryOp) and isinstance(step.op, ast.USub) \
                    and node.slice.lower is None and node.slice.upper is None:
                return base[::-1]
        if isinstance(node, ast.Call):
            return self._fold_call(node)
        return None

    def _fold_call(self, node: ast.Call) -> str | list[str] | None:
        fn = dotted(node.func)
        args = [self.fold(a) for a in node.args]
        sargs = [a for a in args if isinstance(a, str)]
        all_str = bool(args) and len(sargs) == len(args)
        if fn.endswith(".join") and isinstance(node.func, ast.Attribute):
            if fn in ("os.path.join", "posixpath.join", "path.join"):
                return posixpath.join(*sargs) if all_str else None
            sep = self.fold(node.func.value)
            if isinstance(sep, str) and len(args) == 1:
                seq = args[0]
                if seq is None and isinstance(node.args[0], (ast.GeneratorExp, ast.ListComp)):
                    seq = self._fold_chr_comprehension(node.args[0])
                if isinstance(seq, list):
                    return sep.join(seq)
        if fn == "chr" and len(node.args) == 1 and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, int) and 0 <= node.args[0].value < 0x110000:
            return chr(node.args[0].value)
        if fn in ("Path", "pathlib.Path", "PurePosixPath", "PosixPath", "str", "os.fspath") and all_str:
            return posixpath.join(*sargs)
        if fn in ("os.path.expanduser", "os.path.abspath", "os.path.normpath", "os.path.realpath") and all_str:
            return sargs[0]
        if fn.endswith((".decode", ".resolve", ".absolute", ".expanduser")) and isinstance(node.func, ast.Attribute):
            return self.fold(node.func.value)
        if fn in ("bytes.fromhex", "bytearray.fromhex") and sargs:
            try:
                return bytes.fromhex(sargs[0]).decode("utf-8", "replace")
            except ValueError:
                return None
        last = fn.rsplit(".", 1)[-1]
        if last in ("b64decode", "urlsafe_b64decode", "decodebytes", "standard_b64decode") and sargs:
            try:
                return base64.b64decode(sargs[0] + "=" * (-len(sargs[0]) % 4)).decode("utf-8", "replace")
            except (binascii.Error, ValueError):
                return None
        if last == "unhexlify" and sargs:
            try:
                return binascii.unhexlify(sargs[0]).decode("utf-8", "replace")
            except (binascii.Error, ValueError):
                return None
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("replace", "strip", "lower", "upper",
                                                                       "format", "joinpath"):
            base = self.fold(node.func.value)
            if isinstance(base, str) and len(sargs) == len(args):
                if node.func.attr == "joinpath":
                    return posixpath.join(base, *sargs)
                try:
                    return str(getattr(base, node.func.attr)(*sargs))
                except (TypeError, ValueError, IndexError, KeyError):
                    return None
        return None

    def _fold_chr_comprehension(self, comp: ast.AST) -> list[str] | None:
        # "".join(chr(c) for c in [104, 116, ...])
        if isinstance(comp, (ast.GeneratorExp, ast.ListComp)) and len(comp.generators) == 1:
            gen = comp.generators[0]
            if isinstance(comp.elt, ast.Call) and dotted(comp.elt.func) == "chr" and isinstance(gen.iter, (ast.List, ast.Tuple)):
                vals = [e.value for e in gen.iter.elts if isinstance(e, ast.Constant) and isinstance(e.value, int)
                        and 0 <= e.value < 0x110000]
                if len(vals) == len(gen.iter.elts):
                    return [chr(v) for v in vals]
        return None


def dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{dotted(node.value)}.{node.attr}"
    if isinstance(node, ast.Call):
        return dotted(node.func)
    return ""


_STR_LIT = re.compile(r"""(?:'([^'\\\n]*(?:\\.[^'\\\n]*)*)'|"([^"\\\n]*(?:\\.[^"\\\n]*)*)")""")
_PY_SHELL_CALLS = {"os.system", "subprocess.run", "subprocess.call", "subprocess.check_output", "subprocess.Popen",
                   "subprocess.check_call", "os.popen", "subprocess.getoutput", "subprocess.getstatusoutput",
                   "os.execvp", "os.execv", "os.spawnlp", "pty.spawn", "sh", "asyncio.create_subprocess_shell",
                   "asyncio.create_subprocess_exec"}
_SPLIT_FN = re.compile(r"test_?split|split", re.I)
_GENERATOR_FN = re.compile(r"(?:generate|gen|make|write|draw|build|create|sample)(?:_|$)|GENERATORS", re.I)




def _harness_imports(nodes: list[ast.AST], code: str) -> dict[str, str]:
    """Local name -> dotted origin for names imported from the harness package (also via a sys.path edit)."""
    out: dict[str, str] = {}
    via_path = "sys.path" in code or "PYTHONPATH" in code
    for node in nodes:
        if isinstance(node, ast.Import):
            for a in node.names:
                top = a.name.split(".")[0]
                if top == "harness" or (via_path and top in HARNESS_MODULES):
                    origin = a.name if top == "harness" else f"harness.{a.name}"
                    if a.asname:
                        out[a.asname] = origin
                    else:  # import x.y binds x
                        out[top] = "harness" if top == "harness" else f"harness.{top}"
        elif isinstance(node, ast.ImportFrom) and node.module:
            mod = node.module
            if mod == "harness" or mod.startswith("harness.") or (via_path and mod in HARNESS_MODULES):
                origin = mod if mod.startswith("harness") else f"harness.{mod}"
                for a in node.names:
                    out[a.asname or a.name] = f"{origin}.{a.name}"
    return out


def _harness_origin(fn: str, imports: dict[str, str]) -> str | None:
    head, _, rest = fn.partition(".")
    origin = imports.get(head)
    if origin is None:
        return None
    return f"{origin}.{rest}" if rest else origin


def _split_call(origin: str, test_arg: bool) -> str | None:
    """The rule for a call into the harness, when it is about the hidden test split."""
    name = origin.rsplit(".", 1)[-1]
    if re.search(r"test_?split", name, re.I) or (test_arg and (_SPLIT_FN.search(origin) or _GENERATOR_FN.match(name))):
        return "calls the harness's split generator for the hidden test split"
    if test_arg:
        return "calls the harness with the hidden test split"
    return None


# What Python code needs to reach a path, a host, the environment, a shell or the harness. Without any of these
# (and without an encoded payload) no folded string can hold a "/" or "://", so the AST walk finds nothing: the
# common numeric snippet (import torch; print(x.mean())) skips the parse.
_PY_TRIGGERS = re.compile(
    r"[/~\\]|chr|join|sep\b|Path|fromhex|b64|base64|hexlify|decode|codecs|\[::-1\]|environ|putenv|system|subprocess|"
    r"popen|spawn|pty|exec|harness|symlink|hugging|hf[._-]|modelscope|__import__|getattr|importlib|urllib|requests|"
    r"http|socket|open\(|glob|walk|shutil|tarfile|zipfile|rmtree|remove|unlink|rename|mkdir|write|to_csv|to_json|"
    r"to_parquet|" + "|".join(sorted(HF_PY_CALLS)))


# With a relevance test, literals are judged one by one instead of any "/" forcing the parse; these remain
# the constructs whose strings are built from what no literal shows (decoders, chr), or handed to a shell, the
# environment, the harness, the Hub or the network. Building a protected path from plain pieces ("/".join,
# os.path.join, Path / "x") needs a piece holding one of the relevance test's anchors: checked separately.
_PY_CODE_WORDS = ("chr(", "fromhex", "b64", "base64", "hexlify", "codecs", "[::-1]", "environ", "putenv",
                  "os.system", "subprocess", "popen", "spawn", "pty.", "exec(", "eval(", "harness.", "symlink",
                  "sys.path", "PYTHONPATH", "runpy", "run_path", "run_module", "hugging", "hf.", "hf_", "hf-", "modelscope", "__import__", "getattr",
                  "importlib", "socket", "urllib", "requests", "httpx", "aiohttp", "http.client", "pycurl", "wget",
                  "curl", *sorted(HF_PY_CALLS))
_PY_CODE_ESCAPES = re.compile(r"\\[xuUN0-7]")  # escapes that spell a character: text a literal does not show


def _probe_words(words: tuple[str, ...], probes: tuple[str, ...]) -> tuple[tuple[str, ...],
                                                                          tuple[tuple[str, tuple[str, ...]], ...]]:
    """``words`` less those holding another word (a text holding one holds the shorter), as (words looked for
    alone, (probe, the words holding it) ...): a probe covers two words or more, each word is under one probe
    at most."""
    left = [w for w in words if not any(o != w and o in w for o in words)]
    groups = []
    for probe in probes:
        held = tuple(w for w in left if probe in w)
        if len(held) > 1:
            groups.append((probe, held))
            left = [w for w in left if probe not in w]
    return tuple(left), tuple(groups)


# (a text holding a word holds its probe: 25 scans of a text instead of 53, most texts holding none)
_CODE_WORDS_ALONE, _CODE_WORD_PROBES = _probe_words(
    _PY_CODE_WORDS, ("ase", "http", "hf", "sy", "po", "run", "url", "env", "wn", "Hf", "hex", "oc", "co"))


def _has_code_word(text: str) -> bool:
    """``any(w in text for w in _PY_CODE_WORDS)``, with fewer scans of ``text`` (``_probe_words``)."""
    for w in _CODE_WORDS_ALONE:
        if w in text:
            return True
    for probe, held in _CODE_WORD_PROBES:
        if probe in text:
            for w in held:
                if w in text:
                    return True
    return False


_HARNESS_IMPORT = re.compile(r"(?:import|from)\s+harness\b")


_IMPORT_WORD = re.compile(r"(?:import|from)\b")


def _imports_harness(code: str) -> bool:
    """Whether code may import the harness: ``_HARNESS_IMPORT`` matches, or "harness" (a word end after it)
    follows "import" or "from" in its statement (``import os, harness as h``, ``from .harness import x``,
    ``from \\`` continued on the next line), which the AST walk would take for a harness import. Looked for
    from each "harness" backwards (``str.find`` is C; the regex, tried at every position of a 16 KB script,
    cost ~50 us)."""
    i = code.find("harness")
    while i >= 0:
        end = i + 7
        if end >= len(code) or not (code[end].isalnum() or code[end] == "_"):  # \b
            j = i
            while j > 0 and code[j - 1].isspace():
                j -= 1
            if j < i and (code.endswith("import", 0, j) or code.endswith("from", 0, j)):
                return True
            start = code.rfind("\n", 0, i) + 1  # the statement, with the lines a backslash continues
            while start >= 2 and code[start - 2] == "\\":
                start = code.rfind("\n", 0, start - 1) + 1
            if _IMPORT_WORD.search(code, start, i):
                return True
        i = code.find("harness", i + 1)
    return False


def _py_code_trigger(code: str) -> bool:
    """Substring tests (C speed; one alternation regex over a 16 KB script cost ~6 ms), run over the script's
    distinct blank-separated words (no trigger word holds a blank): a third of the text to scan 50 times."""
    words = " ".join(set(code.split()))
    return _has_code_word(words) or ("harness" in words and _imports_harness(code)) \
        or ("\\" in code and bool(_PY_CODE_ESCAPES.search(code)))


_IDENTIFIER = re.compile(r"[A-Za-z]+[0-9]*")  # ScoreBlend98: a name, not base64 (whose digits are spread)
_B64_STRICT = re.compile(r"[A-Za-z0-9+/]*[0-9+/][A-Za-z0-9+/]*={0,2}|[A-Za-z0-9+/]{24,}={0,2}")


def _literal_payload(literals: list[str]) -> bool:
    """A base64/hex payload among string literals. Words and identifiers (ArgumentParser, HeavyHitterPress)
    are not: a base64 token under 24 characters counts when it holds a digit, "+" or "/" (text encodes so)
    and is not a name with a number after it."""
    return has_payload("\n".join(literals)) and _payload_pieces(literals)


def _payload_pieces(literals: list[str]) -> bool:
    """The piece-by-piece part of ``_literal_payload`` (without its cheap test on the whole text): true of
    some literals whenever ``_literal_payload`` is true of any text holding them."""
    text = "\n".join(literals)
    for piece in b64_runs(text):  # (the runs of ``[A-Za-z0-9+/]{12,}={0,2}``, found with ``bytes.find``: the same runs)
        if not (piece.islower() or piece.isupper()) and _B64_STRICT.fullmatch(piece) \
                and not _IDENTIFIER.fullmatch(piece):
            return True
        if len(piece) >= 16 and hex_run(piece):  # (a hex run lies in a base64 run: ``has_payload``)
            return True
    return "\\x" in text and bool(_HEX_ESC.search(text))
_TRIPLE = re.compile(r'"""(.*?)"""|\'\'\'(.*?)\'\'\'', re.S)
_BUILDERS = re.compile(r"join|sep\b|Path|\+|format|%")
_SCHEMES = {"http", "https", "ftp", "hf", "s3", "gs", "ws", "wss", "ssh", "git", "tcp"}


_PLACEHOLDER = re.compile(r"\{[^{}]*\}|%(?:\([^)]*\))?[-#0 +]*\d*(?:\.\d+)?[sdrifgexXoc%]")


def _literal_matters(lit: str, cwd: str | None, relevant: Callable[[str], bool]) -> bool:
    if "/" not in lit and "." not in lit and ":" not in lit and "~" not in lit:
        return False  # a word: no path, no URL piece, no climb
    if "{" in lit or "%" in lit:  # a format string: its fixed text (what fills it is another literal, or unknown)
        lit = _PLACEHOLDER.sub("", lit)
    if not lit:
        return False
    # pieces of a URL ("https:" + "//host"), of a climb ("." + "./"), or a path near a protected folder
    if "//" in lit or lit.endswith(":") and lit[:-1].lower() in _SCHEMES or lit in (".", "..") or \
            lit.startswith("..") or lit.endswith("/.") or lit.endswith("/.."):
        return True
    return ("/" in lit or "~" in lit or ".." in lit) and relevant(resolve(lit, cwd))


# (a text, a later version of it, how many characters at their start and at their end are the same): what the
# edits of a file since a version changed, followed as they are made (``rules.AgentState.edit``)
Changed = tuple[str, str, int, int]


def _python_inert(code: str, cwd: str | None, relevant: Callable[[str], bool] | None, path: str | None = None,
                  changed: Changed | None = None) -> bool:
    """True when the analysis of ``code`` cannot yield a fact a rule uses (so the parse is skipped).

    With a ``Relevance`` (anchors and a memory of inert lines), a script is judged by the lines no earlier
    script showed (a rerun, an edit, a new version of a script cost the lines that changed): every test below
    is local to one line (trigger words, escapes, one-line literals and what they hold) except the harness
    import, the working directory and long strings, which are judged on the whole text each time. A new line
    holding an anchor or what may be a payload is not judged alone: the whole text is (``_whole_inert``).
    Given the script's ``path``, a new version of a script judged inert before is compared with that version
    (``_edited_inert``): only the lines where they differ are looked up, and long strings are judged again only
    when the change may touch them."""
    if relevant is None:
        return not _PY_TRIGGERS.search(code) and not has_payload(code)
    known_lines = getattr(relevant, "inert_lines", None)
    anchors = getattr(relevant, "anchors", None)
    if known_lines is None or anchors is None:
        return _whole_inert(code, cwd, relevant)
    if cwd and cwd.startswith("/") and relevant(cwd.rstrip("/") or "/"):
        return False  # run in or near a protected folder: any relative name may be one of its files
    texts: dict[tuple[str, str | None, bool], str] | None = getattr(relevant, "inert_texts", None)
    known = known_lines.get(cwd)
    if path is not None and texts is not None and known is not None:
        # a text made by edits is compared with the last version judged, one written whole with the last one
        # written whole (a rewrite of a script)
        prev = texts.get((path, cwd, changed is None)) or texts.get((path, cwd, changed is not None))
        if prev is not None:
            return _edited_inert(prev, code, cwd, relevant, anchors, known, path, changed)
    if _imports_harness(code):
        return False
    lines = code.split("\n")
    kept = True
    # (the lines not known, filtered in C: no set of all the lines first)
    new = set(lines) if known is None else set(filterfalse(known.__contains__, lines))
    if new:  # (never empty when nothing is known: a split gives one line at least)
        verdict = _lines_inert("\n".join(new), cwd, relevant, anchors)
        if verdict is None:
            return _whole_inert(code, cwd, relevant)
        if not verdict:
            return False
        kept = relevant.remember_lines(cwd, new)  # type: ignore[attr-defined]
    if not _long_strings_inert(code, cwd, relevant):
        return False
    if path is not None and kept:
        relevant.remember_inert_text(path, cwd, code, changed is None)  # type: ignore[attr-defined]
    return True


def _common_affixes(a: str, b: str) -> tuple[int, int]:
    """The lengths of the longest common start and end of two texts (not overlapping in the shorter one), by
    bisection over slices (C comparisons: about two copies of the text in all)."""
    n = min(len(a), len(b))
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi + 1) >> 1
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    start, la, lb = lo, len(a), len(b)
    lo, hi = 0, n - start
    while lo < hi:
        mid = (lo + hi + 1) >> 1
        if a[la - mid:la - lo] == b[lb - mid:lb - lo]:
            lo = mid
        else:
            hi = mid - 1
    return start, lo


# what a change must hold to make ``_imports_harness`` true of a text it was false of: the word, or what may
# precede it in its statement (a line continued by a backslash, "import"/"from" before blanks and newlines), or
# nothing but blanks (that "import" and "harness" around the change may now meet)
_HARNESS_CONTEXT = ("harness", "import", "from", "\\")


def _edited_inert(prev: str, code: str, cwd: str | None, relevant: Callable[[str], bool], anchors: frozenset[str],
                  known: set[str], path: str, changed: Changed | None = None) -> bool:
    """``_python_inert``'s judgement of ``code`` (past its working-directory test) given ``prev``,
    an earlier version judged inert in ``cwd`` whose lines are all in ``known``. The harness import is looked for
    only if either version's changed lines hold what could make one (``_HARNESS_CONTEXT``). Every line of ``code`` outside
    the lines between their common start and end is a line of ``prev``: the lines not yet known are those
    lines' (the same set the whole text's lines would give). Long strings: when neither version's changed
    lines hold triple quotes (which never span lines), both texts have the same triple quotes on the same
    lines around the change, so every long string is one of ``prev``'s (judged inert) but the one the changed
    lines may lie in, whole: the words on those lines are judged, and only if one may matter is the whole text
    judged again. ``changed``: how ``code`` was made from ``prev``, when it was (the common start and end need
    not be the longest)."""
    if changed is not None and changed[0] is prev and changed[1] is code:
        start, same_end = changed[2], changed[3]  # (known from the edits)
    else:
        start, same_end = _common_affixes(prev, code)
    first = code.rfind("\n", 0, start) + 1  # the changed lines: from the line the change starts in ...
    last = code.find("\n", len(code) - same_end)  # ... to the end of the line it ends in
    seg = code[first:] if last < 0 else code[first:last]
    old_last = prev.find("\n", len(prev) - same_end)
    old_seg = prev[first:] if old_last < 0 else prev[first:old_last]
    if (not seg.strip() or any(w in seg or w in old_seg for w in _HARNESS_CONTEXT)) and _imports_harness(code):
        return False
    lines = seg.split("\n")
    kept = True
    if not known.issuperset(lines):
        new = set(filterfalse(known.__contains__, lines))
        verdict = _lines_inert("\n".join(new), cwd, relevant, anchors)
        if verdict is None:
            return _whole_inert(code, cwd, relevant)
        if not verdict:
            return False
        kept = relevant.remember_lines(cwd, new)  # type: ignore[attr-defined]
    if '"""' in seg or "'''" in seg or '"""' in old_seg or "'''" in old_seg or any(
            ("/" in word or ":" in word) and _literal_matters(word.strip("\"'`(),;"), cwd, relevant)
            for word in seg.split()):
        if not _long_strings_inert(code, cwd, relevant):
            return False
    if kept:
        relevant.remember_inert_text(path, cwd, code, changed is None)  # type: ignore[attr-defined]
    return True


def _lines_inert(text: str, cwd: str | None, relevant: Callable[[str], bool], anchors: frozenset[str]) -> bool | None:
    """The line-local tests of ``_whole_inert`` over some lines (joined): False when one of them makes any
    script holding it worth parsing, None when only the whole text can tell (an anchor with a builder
    elsewhere, a payload-looking piece), True when none of the lines holds anything."""
    if _has_code_word(text) or ("\\" in text and _PY_CODE_ESCAPES.search(text)):
        return False
    literals = [a or b for a, b in _STR_LIT.findall(text)]
    if not literals:
        return True
    for lit in literals:
        if lit and _literal_matters(lit, cwd, relevant):
            return False
    if _payload_pieces(literals) or any(a in lit for lit in literals if " " not in lit for a in anchors):
        return None
    return True


def _long_strings_inert(code: str, cwd: str | None, relevant: Callable[[str], bool]) -> bool:
    """Docstrings and other long strings: a path-like word in them that matters makes the script worth parsing.
    Found by their places in ``code`` (no copy of a long string that holds no "/" and no ":")."""
    find = code.find
    for start, end in _long_string_spans(code):
        if find("/", start, end) < 0 and find(":", start, end) < 0:
            continue
        for word in code[start:end].split():
            if ("/" in word or ":" in word) and _literal_matters(word.strip("\"'`(),;"), cwd, relevant):
                return False
    return True


_SINGLE_TRIPLE = re.compile("\'\'\'")  # (the regex's literal search is twice as fast as ``in`` for this needle)


def _long_strings(code: str) -> Iterator[str]:
    """The texts ``_TRIPLE.findall`` finds (``_long_string_spans``)."""
    return (code[start:end] for start, end in _long_string_spans(code))


def _long_string_spans(code: str) -> Iterator[tuple[int, int]]:
    """Where the texts ``_TRIPLE.findall`` finds lie in ``code`` (the first alternative that matches at the
    leftmost position, up to the nearest closing quotes), found with ``str.find``: the regex's lazy scan cost
    ~30 us per script; one pass for each kind of quotes, and no copies (a split at the quotes copied the text)."""
    pos = 0
    i = k = -2  # the next '"""' and "'''" at or after pos (-1: none left), found again only once passed
    find, single = code.find, _SINGLE_TRIPLE.search
    while True:
        if -1 != i < pos:
            i = find('"""', pos)
        if -1 != k < pos:
            m = single(code, pos)
            k = -1 if m is None else m.start()
        if i < 0 and k < 0:
            return
        at, quote = (i, '"""') if k < 0 or 0 <= i < k else (k, "\'\'\'")
        end = find(quote, at + 3)
        if end < 0:  # no closing quotes: the regex tries the next position
            pos = at + 1
            continue
        yield at + 3, end
        pos = end + 3


def _whole_inert(code: str, cwd: str | None, relevant: Callable[[str], bool]) -> bool:
    """The judgement of a whole script text (what ``_python_inert`` falls back on)."""
    if _py_code_trigger(code):
        return False
    literals = [a or b for a, b in _STR_LIT.findall(code)]
    if _literal_payload(literals):  # (a payload is a string: identifiers like ArgumentParser are not)
        return False
    if cwd and cwd.startswith("/") and relevant(cwd.rstrip("/") or "/"):
        return False  # run in or near a protected folder: any relative name may be one of its files
    anchors = getattr(relevant, "anchors", None)
    # a piece of a path has no blank: "written by the harness" in a docstring builds nothing
    if anchors is None or any(a in lit for lit in literals if " " not in lit for a in anchors):
        if _BUILDERS.search(code):  # (without any anchor, no piece can build a relevant path)
            return False
    for lit in literals:
        if lit and _literal_matters(lit, cwd, relevant):
            return False
    return _long_strings_inert(code, cwd, relevant)


# Analyses by content: agents rerun one script with other arguments, and sessions (and agents) share
# helpers. Only self-contained results are kept (no shell command inside, no file of the workspace read), so a
# hit is exactly what the analysis would give again; bounded by entries and by the text they stand for.
_CACHE: dict[tuple[bytes, str | None, int], Facts] = {}
_CACHE_ENTRIES = 4096
cache_stats = {"hits": 0, "misses": 0}


def digest_of(code: str) -> bytes:
    return hashlib.blake2b(code.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def inert_verdict(code: str, cwd: str | None, relevant: Relevance, path: str | None = None,
                  changed: Changed | None = None) -> bool:
    """``_python_inert``, kept by the script's text and working directory (what ``analyse_python`` decides by);
    ``path``: where the script was written (its earlier versions are compared with it)."""
    inert = relevant.verdict(code, cwd)
    if inert is None:
        # (without a path, the three-argument call that tests replace ``_python_inert`` with)
        inert = _python_inert(code, cwd, relevant) if path is None else _python_inert(code, cwd, relevant, path, changed)
        relevant.remember_verdict(code, cwd, inert)
    return inert


def analyse_python(code: str, cwd: str | None, depth: int = 0, files: Mapping[str, str] | None = None) -> Facts:
    relevant = files.relevant if isinstance(files, Workspace) else None
    if isinstance(relevant, Relevance):  # the same script run again (other arguments): its verdict is known
        inert = inert_verdict(code, cwd, relevant)
    else:
        inert = _python_inert(code, cwd, relevant)
    if inert:
        return NO_FACTS
    facts = Facts()
    digest = digest_of(code)
    key = (digest, cwd, depth)
    hit = _CACHE.get(key)
    if hit is not None:
        cache_stats["hits"] += 1
        return hit  # (callers read facts, never change them)
    cache_stats["misses"] += 1
    try:
        facts, nested = _analyse_python_tree(ast.parse(code), code, cwd, depth, files)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # hostile or broken code: its literals only
        _classify_strings([a or b for a, b in _STR_LIT.findall(code)], cwd, facts, "python", fetched=True)
        nested = False
    if not nested and not facts.consulted:
        make_room(_CACHE, _CACHE_ENTRIES)
        _CACHE[key] = facts
    return facts


def _nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node, like ``ast.walk`` but about twice as fast (no generator per node; leaves not expanded)."""
    out: list[ast.AST] = []
    stack = [tree]
    pop, push, append = stack.pop, stack.append, out.append
    AST, leaves = ast.AST, _LEAVES
    while stack:
        node = pop()
        append(node)
        for name in node._fields:
            v = getattr(node, name, None)
            if v.__class__ is list:
                for x in v:
                    if isinstance(x, AST) and x.__class__ not in leaves:
                        push(x)
            elif isinstance(v, AST) and v.__class__ not in leaves:
                push(v)
    out.reverse()  # (roughly source order: assignments before the calls that use them)
    return out


_LEAVES = frozenset({ast.Load, ast.Store, ast.Del, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Mod, ast.Pow,
                     ast.FloorDiv, ast.And, ast.Or, ast.Eq, ast.NotEq, ast.Lt, ast.Gt, ast.LtE, ast.GtE, ast.Is,
                     ast.IsNot, ast.In, ast.NotIn, ast.Not, ast.USub, ast.UAdd, ast.Invert, ast.BitAnd, ast.BitOr,
                     ast.BitXor, ast.LShift, ast.RShift, ast.MatMult})


# Calls that only compute with text: their string arguments are patterns, separators and messages, never a
# path opened or a URL contacted (``p.replace("/**", "")`` walks nothing).
_TEXT_METHODS = frozenset({"replace", "split", "rsplit", "strip", "lstrip", "rstrip", "startswith", "endswith",
                           "find", "rfind", "index", "rindex", "count", "partition", "rpartition", "removeprefix",
                           "removesuffix", "format", "format_map", "encode", "translate", "maketrans", "center",
                           "ljust", "rjust", "zfill", "casefold", "splitlines", "expandtabs", "__contains__"})
_TEXT_CALLS = frozenset({"re.sub", "re.subn", "re.match", "re.search", "re.fullmatch", "re.findall", "re.finditer",
                         "re.split", "re.compile", "re.escape", "fnmatch.fnmatch", "fnmatch.fnmatchcase",
                         "fnmatch.filter", "fnmatch.translate", "isinstance", "len", "textwrap.dedent",
                         "textwrap.indent", "textwrap.wrap", "textwrap.fill", "sys.exit", "exit", "quit",
                         "warnings.warn", "str", "repr", "hash", "ord", "int", "float", "bool", "setattr",
                         "hasattr", "urllib.parse.quote", "urllib.parse.urlparse", "urlparse", "quote"})
# keyword arguments that are prose (argparse's help, an exception's message)
_TEXT_KWARGS = frozenset({"help", "description", "epilog", "usage", "msg", "message", "title", "label", "desc",
                          "doc", "prog", "metavar", "xlabel", "ylabel", "name"})


def _is_text_op(func: ast.AST, fn: str, last: str) -> bool:
    """A call that only computes with its string arguments (or raises them as a message)."""
    if fn in _TEXT_CALLS:
        return True
    if isinstance(func, ast.Attribute) and last in _TEXT_METHODS:
        if last == "replace" and isinstance(func.value, ast.Call) and dotted(func.value.func).endswith("Path"):
            return False  # Path(a).replace(b) renames a file
        return True
    return last[:1].isupper() and last.endswith(("Error", "Exception", "Warning", "Exit"))


def _analyse_python_tree(tree: ast.AST, code: str, cwd: str | None, depth: int,
                         files: Mapping[str, str] | None) -> tuple[Facts, bool]:
    """The facts of a parsed script, and whether they depend on more than its text (a shell command it runs
    was analysed against the workspace)."""
    facts = Facts()
    folder = _Folder()
    strings: list[str] = []
    write_targets: list[str] = []
    nodes = _nodes(tree)
    imports = _harness_imports(nodes, code) if "harness" in code or "sys.path" in code else {}
    nested = False
    loops: dict[str, list[str]] = {}  # for x in ["a", "b"]: x is each of them
    for node in nodes:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            val = folder.fold(node.value)
            if val is not None:
                folder.names[node.targets[0].id] = val
        elif isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.target, ast.Name):
            seq = folder.fold(node.iter)
            if isinstance(seq, list):
                loops[node.target.id] = seq
    for node in nodes:
        if isinstance(node, ast.Call):
            fn = dotted(node.func)
            last = fn.rsplit(".", 1)[-1]
            folded = [folder.fold(a) for a in node.args]
            kw = {k.arg: folder.fold(k.value) for k in node.keywords}
            kw_true = {k.arg for k in node.keywords if isinstance(k.value, ast.Constant) and k.value.value is True}
            vals = [v for v in folded if isinstance(v, str)]
            if loops:
                for a, v in zip(node.args, folded):
                    if v is None and isinstance(a, ast.Name) and a.id in loops:
                        vals += loops[a.id]
            kw_vals = [v for k, v in kw.items() if isinstance(v, str) and k not in _TEXT_KWARGS]
            if _is_print(fn) or _is_text_op(node.func, fn, last):
                for v in vals + kw_vals:
                    facts.mentioned_urls += URL_RE.findall(v)
                continue
            strings += vals + kw_vals
            if last in HF_PY_CALLS:
                facts.hf_calls.append(f"{fn}({', '.join(repr(v) for v in vals)[:200]})")
            if imports:
                origin = _harness_origin(fn, imports)
                if origin is not None:
                    test_arg = "test" in vals or kw.get("split") == "test"
                    rule = _split_call(origin, test_arg)
                    if rule:
                        facts.split_calls.append(f"{rule}: {fn}({', '.join(repr(v) for v in vals + kw_vals)[:200]})")
            globstar = any("**" in v for v in vals)
            if isinstance(node.func, ast.Attribute) and last in _PY_WALKERS | _PY_GLOBS | {"iterdir", "scandir"}:
                base = folder.fold(node.func.value)  # Path(p).rglob(...), Path(p).glob("**/*")
                if isinstance(base, str):
                    rec = last in _PY_WALKERS or (last in _PY_GLOBS and globstar)
                    facts.accesses.append(Access(resolve(base, cwd), "list", rec, f"python {fn}({base!r})"))
            if vals and (last in _PY_WALKERS or (last in _PY_GLOBS and globstar and "recursive" in kw_true)):
                facts.accesses.append(Access(resolve(vals[0], cwd), "list", True, f"python {fn}({vals[0]!r})"))
            if last == "open" and len(node.args) >= 2:
                mode = folder.fold(node.args[1])
                if isinstance(mode, str) and any(c in mode for c in "wax+") and vals:
                    write_targets.append(vals[0])
            elif last == "open" and isinstance(kw.get("mode"), str) and any(c in str(kw["mode"]) for c in "wax+") \
                    and vals:
                write_targets.append(vals[0])
            if last in ("write_text", "write_bytes", "to_csv", "to_json", "to_parquet", "copy", "copyfile", "move",
                        "rmtree", "remove", "unlink", "copytree", "touch", "mkdir", "rename") \
                    and isinstance(node.func, ast.Attribute):
                base = folder.fold(node.func.value)
                if isinstance(base, str):
                    write_targets.append(base)
                elif last in ("copy", "copyfile", "move", "copytree", "rename") and len(vals) >= 2:
                    write_targets.append(vals[-1])
                elif last in ("rmtree", "remove", "unlink", "mkdir") and vals:
                    write_targets.append(vals[0])
            if fn == "os.symlink" and len(vals) >= 2:
                facts.symlinks.append((resolve(vals[1], cwd), resolve(vals[0], cwd)))
            if fn in ("os.putenv", "os.environ.setdefault", "os.environ.update") and len(vals) >= 2:
                facts.env[vals[0]] = vals[1]
            if fn in _PY_SHELL_CALLS and depth < MAX_DEPTH:
                for arg in folded:
                    script = arg if isinstance(arg, str) else shell_join(arg) if isinstance(arg, list) else None
                    if script:
                        nested = True
                        facts.extend(analyse_shell(script, cwd, None, files, depth + 1))
                        break  # the command is the first argument
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Subscript) and dotted(target.value) == "os.environ":
                    key, value = folder.fold(target.slice), folder.fold(node.value)
                    if isinstance(key, str):
                        facts.env[key] = value if isinstance(value, str) else "<dynamic>"
            # (an assigned string is data: it counts where a call is handed it, folded there)
        elif isinstance(node, ast.Subscript) and imports and isinstance(node.ctx, ast.Load):
            origin = _harness_origin(dotted(node.value), imports)
            if origin is not None and folder.fold(node.slice) == "test":
                facts.split_calls.append(f"calls the harness with the hidden test split: {dotted(node.value)}['test']")
    for w in write_targets:
        facts.accesses.append(Access(resolve(w, cwd), "write", False, f"python write {w}"))
    _classify_strings(strings, cwd, facts, "python", fetched=True, depth=depth)
    return facts, nested


