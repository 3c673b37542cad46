"""Static analysis of shell scripts and Python snippets: which paths they touch, which URLs they fetch.

Obfuscation should not help: heredocs, ``python -c``, ``bash -c``/``eval``, scripts written earlier and
run later, shell variables, ``cd``, string concatenation, ``os.path.join``, ``chr`` joins, reversed
strings, base64 and hex payloads are all resolved where that can be done without running anything.
"""

from __future__ import annotations

import ast
import base64
import binascii
import posixpath
import re
import shlex
from dataclasses import dataclass, field
from typing import Literal

URL_RE = re.compile(r"""(?:https?|ftp|git|ssh|hf)://[^\s'"<>`)\]}]+""", re.I)
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")
_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
_B64 = re.compile(r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{12,}={0,2}(?![A-Za-z0-9+/=])")
_HEX = re.compile(r"(?<![0-9a-fA-F])(?:[0-9a-fA-F]{2}){8,}(?![0-9a-fA-F])")
_HEX_ESC = re.compile(r"(?:\\x[0-9a-fA-F]{2}){4,}")
_HOSTNAME = re.compile(r"^(?:[a-z0-9-]+\.)+[a-z]{2,}$", re.I)
_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)

NETWORK_CMDS = {"curl", "wget", "aria2c", "http", "https", "httpie", "lynx", "links", "w3m", "git", "pip", "pip3",
                "uv", "hf", "huggingface-cli", "nc", "ncat", "socat", "ssh", "scp", "sftp", "telnet", "ftp",
                "hfd.sh", "modelscope", "npm", "gsutil", "aws", "rclone", "axel"}
RECURSIVE_ALWAYS = {"find", "du", "tar", "zip", "rsync", "tree", "rg", "ag", "fd", "fdfind", "7z", "locate"}
RECURSIVE_FLAGGED = {"grep", "egrep", "fgrep", "cp", "scp", "ls", "chmod", "chown", "rm", "diff", "zgrep"}
WRITERS_LAST_ARG = {"cp", "mv", "install", "rsync", "scp", "ln"}
WRITERS_ALL_ARGS = {"tee", "touch", "rm", "rmdir", "mkdir", "truncate", "chmod", "chown", "shred", "unlink"}
FILE_CMDS = {"cat", "tac", "head", "tail", "less", "more", "cp", "mv", "rm", "ls", "tar", "zip", "unzip", "find", "du",
             "rsync", "scp", "file", "stat", "wc", "sort", "uniq", "diff", "xxd", "od", "strings", "jq", "nl", "cut",
             "tree", "gzip", "gunzip", "zcat", "bzcat", "xzcat", "md5sum", "sha256sum", "base64", "split", "readlink",
             "realpath", "touch", "mkdir", "chmod", "tee", "ln", "shred", "sed", "awk", "grep", "rg", "ag", "zgrep"}
PATTERN_FIRST = {"grep", "egrep", "fgrep", "rg", "ag", "zgrep", "sed", "awk"}
WRAPPERS = {"sudo", "env", "time", "nohup", "nice", "ionice", "stdbuf", "exec", "command", "builtin", "xargs",
            "timeout", "watch", "strace", "setsid", "chronic"}
SHELLS = {"bash", "sh", "zsh", "dash", "ksh"}
PYTHONS = re.compile(r"^(python[0-9.]*|ipython3?|pypy3?)$")
HF_PY_CALLS = {"load_dataset", "load_dataset_builder", "get_dataset_config_names", "get_dataset_split_names",
               "hf_hub_download", "snapshot_download", "HfApi", "HfFileSystem", "list_repo_files", "hf_hub_url",
               "dataset_info", "list_datasets", "MsDataset"}
MAX_DEPTH = 4


@dataclass(slots=True)
class Access:
    path: str
    mode: Literal["read", "write", "list"]
    recursive: bool
    evidence: str


@dataclass(slots=True)
class Facts:
    accesses: list[Access] = field(default_factory=list)
    urls: list[str] = field(default_factory=list)  # fetched (network effect), or decoded from a payload
    hosts: list[str] = field(default_factory=list)  # bare host names passed to code (requests.get(host + ...))
    mentioned_urls: list[str] = field(default_factory=list)  # present but not obviously fetched
    env: dict[str, str] = field(default_factory=dict)
    hf_calls: list[str] = field(default_factory=list)
    symlinks: list[tuple[str, str]] = field(default_factory=list)  # (link, target)
    files_written: dict[str, str] = field(default_factory=dict)  # path -> content (heredoc/cat > f)

    def extend(self, other: "Facts") -> None:
        self.accesses += other.accesses
        self.urls += other.urls
        self.hosts += other.hosts
        self.mentioned_urls += other.mentioned_urls
        self.env.update(other.env)
        self.hf_calls += other.hf_calls
        self.symlinks += other.symlinks
        self.files_written.update(other.files_written)


def resolve(path: str, cwd: str | None) -> str:
    """Absolute, normalised (``..`` removed) when it can be; ``~`` is left alone."""
    if not path:
        return path
    if path.startswith("~"):
        return path
    if not path.startswith("/") and cwd:
        path = posixpath.join(cwd, path)
    return posixpath.normpath(path) if path.startswith("/") else path


# --- payload decoding ------------------------------------------------------------------------------------
def _printable(b: bytes) -> str | None:
    try:
        s = b.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if len(s) < 6 or sum(ch.isprintable() or ch in "\n\t" for ch in s) < 0.95 * len(s):
        return None
    return s


def decode_payloads(text: str) -> list[str]:
    """base64, hex and \\x-escaped strings inside ``text`` that decode to printable text."""
    out = []
    for m in _B64.finditer(text):
        tok = m.group(0)
        if len(tok) % 4 == 1:
            continue
        try:
            dec = _printable(base64.b64decode(tok + "=" * (-len(tok) % 4), validate=True))
        except (binascii.Error, ValueError):
            dec = None
        if dec and ("/" in dec or "." in dec):
            out.append(dec)
    for m in _HEX.finditer(text):
        dec = _printable(bytes.fromhex(m.group(0)))
        if dec:
            out.append(dec)
    for m in _HEX_ESC.finditer(text):
        dec = _printable(bytes(int(h, 16) for h in re.findall(r"\\x([0-9a-fA-F]{2})", m.group(0))))
        if dec:
            out.append(dec)
    return out


# --- python ------------------------------------------------------------------------------------------------
class _Folder:
    """Folds constant string expressions: literals, +, f-strings, join, os.path.join, chr, [::-1], decoders."""

    def __init__(self) -> None:
        self.names: dict[str, str | list] = {}

    def fold(self, node: ast.AST) -> str | list | None:  # noqa: C901 - one small interpreter
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                return node.value
            if isinstance(node.value, bytes):
                return node.value.decode("utf-8", "replace")
            if isinstance(node.value, int):
                return None
        if isinstance(node, ast.Name):
            return self.names.get(node.id)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            a, b = self.fold(node.left), self.fold(node.right)
            if isinstance(a, str) and isinstance(b, str):
                return a + b
            if isinstance(a, list) and isinstance(b, list):
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
            return items if all(isinstance(i, str) for i in items) else None
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
            base = self.fold(node.value)
            step = node.slice.step
            if isinstance(base, str) and isinstance(step, ast.UnaryOp) and isinstance(step.op, ast.USub) \
                    and node.slice.lower is None and node.slice.upper is None:
                return base[::-1]
        if isinstance(node, ast.Call):
            return self._fold_call(node)
        return None

    def _fold_call(self, node: ast.Call) -> str | list | None:
        fn = dotted(node.func)
        args = [self.fold(a) for a in node.args]
        if fn.endswith(".join") and isinstance(node.func, ast.Attribute):
            if fn in ("os.path.join", "posixpath.join", "path.join"):
                return posixpath.join(*args) if args and all(isinstance(a, str) for a in args) else None
            sep = self.fold(node.func.value)
            if isinstance(sep, str) and len(args) == 1:
                seq = args[0]
                if seq is None and isinstance(node.args[0], (ast.GeneratorExp, ast.ListComp)):
                    seq = self._fold_chr_comprehension(node.args[0])
                if isinstance(seq, list) and all(isinstance(s, str) for s in seq):
                    return sep.join(seq)
        if fn == "chr" and len(node.args) == 1 and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, int):
            return chr(node.args[0].value)
        if fn in ("Path", "pathlib.Path", "PurePosixPath", "str") and args and all(isinstance(a, str) for a in args):
            return posixpath.join(*args)
        if fn.endswith(".decode") and isinstance(node.func, ast.Attribute):
            return self.fold(node.func.value)
        if fn in ("bytes.fromhex", "bytearray.fromhex") and args and isinstance(args[0], str):
            try:
                return bytes.fromhex(args[0]).decode("utf-8", "replace")
            except ValueError:
                return None
        if fn.split(".")[-1] in ("b64decode", "urlsafe_b64decode", "decodebytes") and args and isinstance(args[0], str):
            try:
                return base64.b64decode(args[0] + "=" * (-len(args[0]) % 4)).decode("utf-8", "replace")
            except (binascii.Error, ValueError):
                return None
        if fn.split(".")[-1] == "unhexlify" and args and isinstance(args[0], str):
            try:
                return binascii.unhexlify(args[0]).decode("utf-8", "replace")
            except (binascii.Error, ValueError):
                return None
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("replace", "strip", "lower", "upper", "format"):
            base = self.fold(node.func.value)
            if isinstance(base, str) and all(isinstance(a, str) for a in args):
                try:
                    return getattr(base, node.func.attr)(*args)
                except (TypeError, ValueError, IndexError, KeyError):
                    return None
        return None

    def _fold_chr_comprehension(self, comp: ast.AST) -> list | None:
        # "".join(chr(c) for c in [104, 116, ...])
        if isinstance(comp, (ast.GeneratorExp, ast.ListComp)) and len(comp.generators) == 1:
            gen = comp.generators[0]
            if isinstance(comp.elt, ast.Call) and dotted(comp.elt.func) == "chr" and isinstance(gen.iter, (ast.List, ast.Tuple)):
                vals = [e.value for e in gen.iter.elts if isinstance(e, ast.Constant) and isinstance(e.value, int)]
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


def analyse_python(code: str, cwd: str | None, depth: int = 0) -> Facts:
    facts = Facts()
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        strings = [a or b for a, b in _STR_LIT.findall(code)]
        _classify_strings(strings, cwd, facts, "python", fetched=True)
        return facts
    folder = _Folder()
    strings: list[str] = []
    write_targets: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            val = folder.fold(node.value)
            if val is not None:
                folder.names[node.targets[0].id] = val
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            fn = dotted(node.func)
            last = fn.split(".")[-1]
            folded = [folder.fold(a) for a in node.args] + [folder.fold(k.value) for k in node.keywords]
            vals = [v for v in folded if isinstance(v, str)]
            strings += vals
            if last in HF_PY_CALLS:
                facts.hf_calls.append(f"{fn}({', '.join(repr(v) for v in vals)[:200]})")
            if last == "open" and len(node.args) >= 2:
                mode = folder.fold(node.args[1])
                if isinstance(mode, str) and any(c in mode for c in "wax+") and vals:
                    write_targets.append(vals[0])
            if last in ("write_text", "write_bytes", "to_csv", "to_json", "to_parquet", "copy", "copyfile", "move",
                        "rmtree", "remove", "unlink") and isinstance(node.func, ast.Attribute):
                base = folder.fold(node.func.value)
                if isinstance(base, str):
                    write_targets.append(base)
                elif last in ("copy", "copyfile", "move") and len(vals) >= 2:
                    write_targets.append(vals[-1])
                elif last in ("rmtree", "remove", "unlink") and vals:
                    write_targets.append(vals[0])
            if fn in ("os.symlink",) and len(vals) >= 2:
                facts.symlinks.append((resolve(vals[1], cwd), resolve(vals[0], cwd)))
            if fn in ("os.putenv", "os.environ.setdefault") and len(vals) >= 2:
                facts.env[vals[0]] = vals[1]
            if fn in ("os.system", "subprocess.run", "subprocess.call", "subprocess.check_output", "subprocess.Popen",
                      "subprocess.check_call", "os.popen") and depth < MAX_DEPTH:
                for v in folded:
                    script = v if isinstance(v, str) else shlex.join(v) if isinstance(v, list) else None
                    if script:
                        facts.extend(analyse_shell(script, cwd, depth=depth + 1))
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Subscript) and dotted(t.value) == "os.environ":
                    k, v = folder.fold(t.slice), folder.fold(node.value)
                    if isinstance(k, str):
                        facts.env[k] = v if isinstance(v, str) else "<dynamic>"
            val = folder.fold(node.value)
            if isinstance(val, str):
                strings.append(val)
    for t in write_targets:
        facts.accesses.append(Access(resolve(t, cwd), "write", False, f"python write {t}"))
    _classify_strings(strings, cwd, facts, "python", fetched=True, depth=depth)
    return facts


def _classify_strings(strings: list[str], cwd: str | None, facts: Facts, how: str, fetched: bool,
                      depth: int = 0) -> None:
    for s in strings:
        for u in URL_RE.findall(s):
            (facts.urls if fetched else facts.mentioned_urls).append(u)
        if _HOSTNAME.match(s):
            facts.hosts.append(s.lower())
        if s.startswith(("/", "./", "../", "~")) or (("/" in s) and " " not in s and "://" not in s and len(s) < 400):
            facts.accesses.append(Access(resolve(s, cwd), "read", False, f"{how} path {s[:200]}"))
        if depth < MAX_DEPTH:
            for dec in decode_payloads(s):
                _classify_strings([dec], cwd, facts, f"{how} (decoded)", fetched, depth + 1)


# --- shell -------------------------------------------------------------------------------------------------
def _split_heredocs(script: str) -> tuple[str, list[tuple[int, str]]]:
    """Remove heredoc bodies; return the remaining script and (line index, body) pairs."""
    lines = script.split("\n")
    out: list[str] = []
    bodies: list[tuple[int, str]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        i += 1
        for m in _HEREDOC.finditer(line):
            delim, body = m.group(2), []
            while i < len(lines) and lines[i].strip() != delim:
                body.append(lines[i])
                i += 1
            i += 1  # the delimiter line
            bodies.append((len(out) - 1, "\n".join(body)))
    return "\n".join(out), bodies


def _commands(script: str) -> list[list[str]]:
    """Simple commands as token lists, split at ; && || | & and newlines; comments dropped."""
    script = script.replace("\\\n", " ")
    cmds: list[list[str]] = []
    buf = ""
    for raw in script.split("\n"):
        buf = f"{buf}\n{raw}" if buf else raw
        try:
            lex = shlex.shlex(buf, posix=True, punctuation_chars=";&|()<>")
            lex.whitespace_split = True
            lex.commenters = "#"
            tokens = list(lex)
        except ValueError:  # unbalanced quotes: the string goes on on the next line
            if buf.count("\n") < 50:
                continue
            tokens = buf.split()
        buf = ""
        cur: list[str] = []
        for t in tokens:
            if t in (";", "&&", "||", "|", "&", "(", ")", ";;", "|&"):
                if cur:
                    cmds.append(cur)
                cur = []
            else:
                cur.append(t)
        if cur:
            cmds.append(cur)
    if buf:
        cmds.append(buf.split())
    return cmds


def _expand(token: str, variables: dict[str, str]) -> str:
    return _VAR.sub(lambda m: variables.get(m.group(1) or m.group(2), m.group(0)), token)


def analyse_shell(
    script: str,
    cwd: str | None = None,
    env: dict[str, str] | None = None,
    files: dict[str, str] | None = None,
    depth: int = 0,
) -> Facts:
    """What a shell script touches. ``files``: scripts written earlier in the session (path -> content)."""
    facts = Facts()
    files = files or {}
    variables = dict(env or {})
    body_script, heredocs = _split_heredocs(script)
    body_by_line = dict(heredocs)
    lines = body_script.split("\n")
    # map each command back to its heredoc body (if any) through the line it starts on
    line_of_cmd: list[int] = []
    cmds: list[list[str]] = []
    for idx, line in enumerate(lines):
        for c in _commands(line):
            cmds.append(c)
            line_of_cmd.append(idx)
    for ci, argv in enumerate(cmds):
        heredoc = body_by_line.get(line_of_cmd[ci])
        argv = [_expand(t, variables) for t in argv]
        # leading assignments: VAR=value cmd ... (or a bare assignment)
        assigns = {}
        while argv and _ASSIGN.match(argv[0]):
            k, v = _ASSIGN.match(argv[0]).groups()
            assigns[k] = v
            argv = argv[1:]
        if not argv:
            variables.update(assigns)
            facts.env.update(assigns)
            continue
        facts.env.update({k: v for k, v in assigns.items() if k.isupper()})
        cwd = _one_command(argv, cwd, variables, facts, files, heredoc, depth)
    for payload in decode_payloads(script) if depth < MAX_DEPTH else []:
        # Nobody base64-encodes a URL to print it: a decoded URL counts as fetched, a decoded path as read.
        facts.extend(analyse_shell(payload, cwd, variables, files, depth + 1))
        facts.urls += URL_RE.findall(payload)
        for word in payload.split():
            if word.startswith(("/", "./", "../")):
                facts.accesses.append(Access(resolve(word, cwd), "read", False, f"decoded payload {word}"))
    return facts


def _strip_wrappers(argv: list[str], facts: Facts) -> list[str]:
    while argv and posixpath.basename(argv[0]) in WRAPPERS:
        name = posixpath.basename(argv[0])
        argv = argv[1:]
        if name == "env":
            while argv and (argv[0].startswith("-") or _ASSIGN.match(argv[0])):
                m = _ASSIGN.match(argv[0])
                if m:
                    facts.env[m.group(1)] = m.group(2)
                elif argv[0] in ("-u", "--unset") and len(argv) > 1:
                    facts.env[argv[1]] = "<unset>"
                    argv = argv[1:]
                argv = argv[1:]
        elif name == "timeout":
            while argv and (argv[0].startswith("-") or re.match(r"^\d+[smhd]?$", argv[0])):
                argv = argv[1:]
        else:
            while argv and argv[0].startswith("-"):
                argv = argv[1:]
    return argv


def _one_command(argv: list[str], cwd: str | None, variables: dict[str, str], facts: Facts,
                 files: dict[str, str], heredoc: str | None, depth: int) -> str | None:
    argv = _strip_wrappers(argv, facts)
    if not argv:
        return cwd
    name = posixpath.basename(argv[0])
    evidence = shlex.join(argv)[:300]
    # redirections
    args: list[str] = []
    i = 1
    redirect_write = None
    while i < len(argv):
        t = argv[i]
        if t in (">", ">>", "<", "<<", "<<<", ">&", "&>") or re.fullmatch(r"\d?[<>]{1,2}", t):
            target = argv[i + 1] if i + 1 < len(argv) else ""
            if t.endswith(">") or t == ">>" or t in (">&", "&>"):
                if target and not target.startswith("&") and target not in ("/dev/null", "/dev/stderr", "/dev/stdout"):
                    facts.accesses.append(Access(resolve(target, cwd), "write", False, evidence))
                    redirect_write = resolve(target, cwd)
            elif t == "<":
                facts.accesses.append(Access(resolve(target, cwd), "read", False, evidence))
            elif t == "<<<" and depth < MAX_DEPTH:
                for dec in decode_payloads(target):
                    facts.urls += URL_RE.findall(dec)
            i += 2
            continue
        args.append(t)
        i += 1

    if name == "cd":
        dest = args[0] if args else "~"
        return resolve(dest, cwd) if dest != "-" else cwd
    if name == "export":
        for a in args:
            m = _ASSIGN.match(a)
            if m:
                facts.env[m.group(1)] = m.group(2)
                variables[m.group(1)] = m.group(2)
        return cwd
    if name == "unset":
        for a in args:
            facts.env[a] = "<unset>"
        return cwd
    if heredoc is not None and redirect_write and name == "cat":
        facts.files_written[redirect_write] = heredoc
    if name in SHELLS or name == "eval" or name == "source" or name == ".":
        sub_script = None
        if name == "eval":
            sub_script = " ".join(args)
        elif "-c" in args or any(a.startswith("-") and "c" in a and not a.startswith("--") for a in args[:2]):
            flag_idx = next(k for k, a in enumerate(args) if a == "-c" or (a.startswith("-") and "c" in a))
            sub_script = args[flag_idx + 1] if flag_idx + 1 < len(args) else None
        elif heredoc is not None and (not args or args[0] in ("-", "-s")):
            sub_script = heredoc
        elif args:
            script_path = resolve(args[0], cwd)
            facts.accesses.append(Access(script_path, "read", False, evidence))
            sub_script = files.get(script_path)
        if sub_script and depth < MAX_DEPTH:
            facts.extend(analyse_shell(sub_script, cwd, variables, files, depth + 1))
        return cwd
    if PYTHONS.match(name):
        code = None
        if "-c" in args:
            k = args.index("-c")
            code = args[k + 1] if k + 1 < len(args) else None
        elif heredoc is not None and (not args or args[0] == "-"):
            code = heredoc
        elif "-m" in args:
            k = args.index("-m")
            mod = args[k + 1] if k + 1 < len(args) else ""
            if mod in ("huggingface_hub.commands.huggingface_cli", "huggingface_hub"):
                facts.hf_calls.append(evidence)
            if mod in ("pip",) and "install" in args:
                facts.urls += [u for a in args for u in URL_RE.findall(a)]
        else:
            script_arg = next((a for a in args if not a.startswith("-")), None)
            if script_arg:
                p = resolve(script_arg, cwd)
                facts.accesses.append(Access(p, "read", False, evidence))
                code = files.get(p)
                for a in args[args.index(script_arg) + 1:]:
                    if not a.startswith("-") and ("/" in a or "." in a):
                        facts.accesses.append(Access(resolve(a, cwd), "read", False, evidence))
        if code and depth < MAX_DEPTH:
            facts.extend(analyse_python(code, cwd, depth + 1))
        return cwd

    flags = [a for a in args if a.startswith("-")]
    operands = [a for a in args if not a.startswith("-")]
    recursive = name in RECURSIVE_ALWAYS or (name in RECURSIVE_FLAGGED and any(
        f in ("-r", "-R", "-a", "--recursive", "-rf", "-fr", "-Rf") or (f.startswith("-") and not f.startswith("--")
                                                                        and ("r" in f or "R" in f)) for f in flags))
    if name in ("hf", "huggingface-cli") or name == "hfd.sh" or (name == "modelscope" and "download" in args):
        facts.hf_calls.append(evidence)
    if name == "ln" and "-s" in "".join(flags) and len(operands) >= 2:
        facts.symlinks.append((resolve(operands[1], cwd), resolve(operands[0], cwd)))
    network = name in NETWORK_CMDS
    for a in operands:
        for u in URL_RE.findall(a):
            (facts.urls if network else facts.mentioned_urls).append(u)
        if network and name == "git":
            m = re.match(r"^[\w.-]+@([\w.-]+):", a)
            if m:
                facts.urls.append(f"ssh://{m.group(1)}/")
    if name in ("echo", "printf"):  # their words are data, not paths
        return cwd
    mode: Literal["read", "write", "list"] = "list" if name in ("ls", "find", "tree", "du", "fd", "fdfind", "locate") else "read"
    path_ops = [a for a in operands if "://" not in a]
    if name == "find":
        path_ops = path_ops[:1] if path_ops else ["."]
    if name == "sed" and any(f.startswith("-i") for f in flags):
        for a in path_ops[1:]:
            facts.accesses.append(Access(resolve(a, cwd), "write", False, evidence))
    if name == "dd":
        for a in operands:
            if a.startswith("of="):
                facts.accesses.append(Access(resolve(a[3:], cwd), "write", False, evidence))
            if a.startswith("if="):
                facts.accesses.append(Access(resolve(a[3:], cwd), "read", False, evidence))
        return cwd
    if name in PATTERN_FIRST and path_ops and not any(f in ("-e", "-f") for f in flags):
        path_ops = path_ops[1:]  # grep PATTERN FILE...
    for k, a in enumerate(path_ops):
        if name not in FILE_CMDS and not ("/" in a or "." in a or "*" in a):
            continue
        p = resolve(a, cwd)
        if name in WRITERS_LAST_ARG and k == len(path_ops) - 1 and len(path_ops) >= 2:
            facts.accesses.append(Access(p, "write", False, evidence))
        elif name in WRITERS_ALL_ARGS:
            facts.accesses.append(Access(p, "write", recursive, evidence))
        else:
            facts.accesses.append(Access(p, mode, recursive, evidence))
    return cwd
