"""Static analysis of shell scripts and of the code they run: which paths they touch, which hosts they contact.

Obfuscation should not help: heredocs, ``python -c``/``node -e``/``ruby -e``/``perl -e`` and the other
runtimes, ``bash -c``/``eval``, scripts written earlier and run later (also executed directly), shell
variables, ``cd``, string concatenation in any of those languages, ``os.path.join``, ``chr`` joins, reversed
strings, base64 and hex payloads are all resolved where that can be done without running anything.

A URL counts as contacted when code does something with it (a network command's operand, an argument of a
call that is not a print, a literal in code that uses a network API); a URL that is only printed or written
in a comment is a mention. The shell tokenizer is one regular expression (``shlex`` cost ~10x more), because
agents run tens of thousands of commands per session and each is analysed.
"""

from __future__ import annotations

import ast
import base64
import binascii
import posixpath
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Literal

URL_RE = re.compile(r"""(?:https?|ftp|git|ssh|hf|wss?|tcp|s3|gs)://[^\s'"<>`)\]}\\]+""", re.I)
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")
_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
_B64 = re.compile(r"[A-Za-z0-9+/]{12,}={0,2}")  # maximal runs of the base64 alphabet
_HEX = re.compile(r"(?<![0-9a-fA-F])(?:[0-9a-fA-F]{2}){8,}(?![0-9a-fA-F])")
_HEX_ESC = re.compile(r"(?:\\x[0-9a-fA-F]{2}){4,}")
_HOSTNAME = re.compile(r"^(?:[a-z0-9-]+\.)+[a-z]{2,}$", re.I)
_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)
# host[:port][/path] without a scheme (curl, wget and httpie accept it); the TLD must not be a file extension
_RAW_IP_TARGET = re.compile(r"^\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?(?:/\S*)?$")  # curl 18.164.174.23/x
_SCHEMELESS = re.compile(r"^(?:[\w-]+@)?((?:[a-z0-9-]+\.)+([a-z]{2,24}))(?::(\d+))?(?:/\S*)?$", re.I)
FILE_EXTENSIONS = {
    "json", "jsonl", "py", "txt", "sh", "md", "csv", "tsv", "log", "gz", "zip", "tar", "tgz", "bz2", "xz", "zst",
    "parquet", "arrow", "html", "htm", "js", "mjs", "cjs", "ts", "pt", "pth", "bin", "safetensors", "yaml", "yml",
    "toml", "cfg", "ini", "out", "err", "lock", "whl", "so", "rb", "pl", "php", "ipynb", "png", "jpg", "pdf",
    "npy", "npz", "pkl", "pickle", "db", "sqlite", "c", "h", "cpp", "cu", "rs", "go", "java", "xml", "diff",
    "patch", "bak", "tmp", "old", "new", "orig", "swp", "env", "conf", "onnx", "gguf", "ckpt", "model", "vocab",
    "jl", "lua", "r", "tex", "rst", "dat", "egg", "info", "spec", "mk", "cmake", "local", "test", "dev", "svg",
}
NETWORK_CMDS = {"curl", "wget", "aria2c", "http", "https", "httpie", "xh", "lynx", "links", "w3m", "git", "pip",
                "pip3", "uv", "hf", "huggingface-cli", "nc", "ncat", "netcat", "socat", "ssh", "scp", "sftp", "telnet",
                "ftp", "hfd.sh", "modelscope", "npm", "pnpm", "yarn", "gsutil", "aws", "rclone", "axel", "openssl",
                "rsync", "gem", "go", "cargo", "conda", "mamba", "apt", "apt-get", "docker", "podman", "svn", "hg"}
_VALUE_SHORTS = {  # short flags whose value is the next word (so that word is not a host or a file)
    "curl": set("odHXuAeTFwKbcmrCExUzYyQtP"), "wget": set("OoaPtTwUeiBDlQ"), "aria2c": set("dosxjc"),
    "nc": set("psiwqIOTxX"), "ncat": set("psiwxdg"), "netcat": set("psiwq"), "telnet": set("bleln"),
    "ssh": set("bcDEeFIiJLlmOopQRSWw"), "scp": set("cFiJloPS"), "sftp": set("BbcDFiJloPRSs"),
    "openssl": set(), "git": set("Cc"), "pip": set("irecft"), "pip3": set("irecft"), "uv": set("irecft"),
}
_BOOL_LONGS = {"--silent", "--location", "--insecure", "--fail", "--compressed", "--verbose", "--show-error",
               "--remote-name", "--head", "--include", "--quiet", "--no-check-certificate", "--continue",
               "--recursive", "--mirror", "--no-verbose", "--progress-bar", "--globoff", "--http1.1", "--http2",
               "--ipv4", "--ipv6", "--raw", "--no-buffer", "--fail-with-body", "--create-dirs", "--upgrade",
               "--user", "--quiet", "--no-deps", "--pre", "--force-reinstall", "--no-cache-dir", "--editable",
               "--system", "--break-system-packages", "--dry-run", "--help", "--version"}
_PROXY_VARS = {"http_proxy", "https_proxy", "all_proxy", "ftp_proxy"}
RECURSIVE_ALWAYS = {"find", "du", "tar", "zip", "rsync", "tree", "rg", "ag", "fd", "fdfind", "7z", "locate"}
RECURSIVE_FLAGGED = {"grep", "egrep", "fgrep", "cp", "scp", "ls", "chmod", "chown", "rm", "diff", "zgrep"}
WRITERS_LAST_ARG = {"cp", "mv", "install", "rsync", "scp", "ln"}
WRITERS_ALL_ARGS = {"tee", "touch", "rm", "rmdir", "mkdir", "truncate", "chmod", "chown", "shred", "unlink"}
FILE_CMDS = {"cat", "tac", "head", "tail", "less", "more", "cp", "mv", "rm", "ls", "tar", "zip", "unzip", "find", "du",
             "rsync", "scp", "file", "stat", "wc", "sort", "uniq", "diff", "xxd", "od", "strings", "jq", "nl", "cut",
             "tree", "gzip", "gunzip", "zcat", "bzcat", "xzcat", "md5sum", "sha256sum", "base64", "split", "readlink",
             "realpath", "touch", "mkdir", "chmod", "tee", "ln", "shred", "sed", "awk", "grep", "rg", "ag", "zgrep"}
LIST_CMDS = {"ls", "find", "tree", "du", "fd", "fdfind", "locate"}
PATTERN_FIRST = {"grep", "egrep", "fgrep", "rg", "ag", "zgrep", "sed", "awk"}
WRAPPERS = {"sudo", "env", "time", "nohup", "nice", "ionice", "stdbuf", "exec", "command", "builtin", "xargs",
            "timeout", "watch", "strace", "setsid", "chronic", "caffeinate", "unbuffer", "doas", "flock"}
SHELLS = {"bash", "sh", "zsh", "dash", "ksh", "fish", "ash"}
PYTHONS = re.compile(r"^(?:python[0-9.]*|ipython3?|pypy3?)$")
# runtimes whose code is analysed like Python's: the flag that takes a code string, per language
RUNTIMES = {"node": "js", "nodejs": "js", "deno": "js", "bun": "js", "tsx": "js", "ts-node": "js",
            "ruby": "ruby", "irb": "ruby", "perl": "perl", "php": "php", "rscript": "r", "r": "r",
            "julia": "julia", "lua": "lua", "luajit": "lua"}
_CODE_FLAGS = {"js": {"-e", "--eval", "-p", "--print"}, "ruby": {"-e"}, "perl": {"-e", "-E"}, "php": {"-r"},
               "r": {"-e"}, "julia": {"-e", "--eval", "-E", "--print"}, "lua": {"-e"}}
_RUNTIME_VALUE_FLAGS = {"-r", "--require", "--import", "--loader", "-I", "-C", "-d", "-c", "-x", "-l",
                        "--config", "--env-file", "--inspect-port", "--conditions", "-m"}
_EXT_LANG = {".py": "python", ".sh": "shell", ".bash": "shell", ".zsh": "shell", ".js": "js", ".mjs": "js",
             ".cjs": "js", ".ts": "js", ".mts": "js", ".cts": "js", ".jsx": "js", ".tsx": "js", ".rb": "ruby",
             ".pl": "perl", ".pm": "perl", ".php": "php", ".r": "r", ".jl": "julia", ".lua": "lua"}
HF_PY_CALLS = {"load_dataset", "load_dataset_builder", "get_dataset_config_names", "get_dataset_split_names",
               "hf_hub_download", "snapshot_download", "HfApi", "HfFileSystem", "list_repo_files", "hf_hub_url",
               "dataset_info", "list_datasets", "MsDataset"}
HF_JS_CALLS = {"downloadFile", "downloadFileToCacheDir", "snapshotDownload", "listFiles", "listDatasets",
               "datasetInfo", "fileDownloadInfo"}
_HF_LOCAL_SUBCOMMANDS = {"cache", "scan-cache", "delete-cache", "env", "version", "--help", "-h", "--version",
                         "tag", "lfs-enable-largefiles"}
# bare names that print; a logger's methods count only called on a logger (a function named write may not print)
_PRINT_CALLS = {"print", "pprint", "puts", "p", "say", "printf", "echo", "alert", "writeln", "cat", "message",
                "println"}
_PRINT_OWNERS = {"console", "logging", "logger", "log", "LOG", "sys.stdout", "sys.stderr", "warnings", "click",
                 "typer", "rich", "STDOUT", "STDERR", "$stdout", "$stderr", "process.stdout", "process.stderr"}
_WALKERS = {"walk", "fwalk", "rglob", "copytree", "make_archive", "walkSync", "walkdir", "find", "finddepth",
            "copy_tree", "rmtree", "list_files", "listFiles", "dir_ls", "rm_rf", "cp_r"}
_GLOBS = {"glob", "iglob", "globSync", "fast_glob", "sync"}  # recursive when the pattern has **
# Python's own: str.find is not a walk
_PY_WALKERS = {"walk", "fwalk", "rglob", "copytree", "make_archive", "rmtree", "copy_tree"}
_PY_GLOBS = {"glob", "iglob"}
_CONNECT_CALLS = {"connect", "createConnection", "Socket", "TCPSocket", "new", "open", "tcp", "Connection",
                  "create_connection", "socket", "fsockopen", "stream_socket_client", "connectTCP"}
_WRITE_MODES = {"w", "a", "w+", "a+", "wb", "ab", "wt", "at", "x", "xb", "r+", "rb+", ">", ">>", "+>"}
_WRITE_CALL = re.compile(r"^(?:write|append|unlink|rm|remove|mkdir|makedirs|copy|rename|move|truncate|symlink|chmod|"
                         r"create|touch|save|dump|put)", re.I)
_CHILD_PROCESS = {"exec", "execSync", "execFile", "execFileSync", "spawn", "spawnSync", "system", "popen",
                  "shell_exec", "passthru", "proc_open", "capture2", "capture2e", "capture3", "popen3", "run",
                  "spawn_sync", "Command", "$", "execa", "execaSync", "qx", "readpipe"}
_NET_API = re.compile(
    r"\bfetch\s*\(|XMLHttpRequest|WebSocket|\bhttps?\.(?:get|request)\b|require\(\s*['\"](?:node:)?(?:https?|net|tls|"
    r"dgram|http2)['\"]|from\s+['\"](?:node:)?(?:https?|net|tls|http2)['\"]|\bnet\.(?:connect|createConnection)|"
    r"\btls\.connect|\baxios\b|\bgot\s*\(|\bundici\b|\bsuperagent\b|\bky\s*\(|Deno\.connect|Bun\.connect|"
    r"new\s+URL\s*\(|Net::HTTP|open-uri|URI\.open|\bURI\s*\(|Faraday|HTTParty|RestClient|TCPSocket|Socket\.tcp|"
    r"\bLWP\b|HTTP::Tiny|IO::Socket|Mojo::UserAgent|WWW::Mechanize|LWP::Simple|\bcurl_(?:init|exec)|"
    r"file_get_contents\s*\(\s*['\"]https?:|fsockopen|stream_socket_client|download\.file|\burl\s*\(|\bhttr\b|"
    r"\bGET\s*\(|HTTP\.(?:get|request)|Downloads\.download|\bsocket\.(?:http|connect)|new\s+Connection\s*\(|"
    r"@huggingface/hub|\bwget\b|\bcurl\b")
MAX_DEPTH = 4
MAX_SCRIPT = 200_000


@dataclass(slots=True)
class Access:
    path: str
    mode: Literal["read", "write", "list"]
    recursive: bool
    evidence: str


@dataclass(slots=True)
class Facts:
    accesses: list[Access] = field(default_factory=list)
    urls: list[str] = field(default_factory=list)  # contacted (network effect), or decoded from a payload
    hosts: list[str] = field(default_factory=list)  # bare host names passed to code (requests.get(host + ...))
    mentioned_urls: list[str] = field(default_factory=list)  # present but not obviously fetched
    env: dict[str, str] = field(default_factory=dict)
    hf_calls: list[str] = field(default_factory=list)
    symlinks: list[tuple[str, str]] = field(default_factory=list)  # (link, target)
    files_written: dict[str, str] = field(default_factory=dict)  # path -> content (heredoc/cat > f)
    split_calls: list[str] = field(default_factory=list)  # "rule: evidence": the harness asked for the test split
    consulted: set[str] = field(default_factory=set)  # written files this analysis read (it depends on them)

    def extend(self, other: "Facts") -> None:
        self.accesses += other.accesses
        self.urls += other.urls
        self.hosts += other.hosts
        self.mentioned_urls += other.mentioned_urls
        self.env.update(other.env)
        self.hf_calls += other.hf_calls
        self.symlinks += other.symlinks
        self.files_written.update(other.files_written)
        self.split_calls += other.split_calls
        self.consulted |= other.consulted


class Workspace(Mapping[str, str]):
    """The files an agent wrote earlier (path -> text, what scripts run later are analysed with) and, from an
    auditor that knows the protected folders, which absolute paths could matter to a rule at all: analyses
    skip work that cannot change a finding (the AST of a snippet that only names the agent's own files)."""

    def __init__(self, files: Mapping[str, str], relevant: Callable[[str], bool] | None = None,
                 written: Mapping[str, str] | None = None) -> None:
        self._files = files
        self._written = written if written is not None else {}  # written by the script analysed: seen first
        self.relevant = relevant

    def __getitem__(self, key: str) -> str:
        return self._written[key] if key in self._written else self._files[key]

    def __iter__(self) -> Iterator[str]:
        yield from self._written
        yield from (k for k in self._files if k not in self._written)

    def __len__(self) -> int:
        return len(set(self._written) | set(self._files))

    def __contains__(self, key: object) -> bool:
        return key in self._written or key in self._files

    def get(self, key: str, default: str | None = None) -> str | None:  # type: ignore[override]
        return self._written[key] if key in self._written else self._files.get(key, default)


def shell_join(argv: list[str]) -> str:
    """An argv as one shell command line (quoted where needed), so that it is analysed like a typed one."""
    return " ".join(a if a and re.fullmatch(r"[\w@%+=:,./-]+", a) else "'" + a.replace("'", "'\"'\"'") + "'"
                    for a in argv)


def resolve(path: str, cwd: str | None) -> str:
    """Absolute, normalised (``..`` removed) when it can be; ``~`` is left alone."""
    if not path or path[0] == "~":
        return path
    if path[0] != "/":
        if not cwd:
            return path
        path = cwd + "/" + path if cwd != "/" else "/" + path
    if "/." in path or "//" in path or path.endswith("/"):
        return posixpath.normpath(path)
    return path


def language_of(path: str, content: str) -> str | None:
    """A script's language from its shebang, else its extension."""
    if content.startswith("#!"):
        first = content[2:content.find("\n")] if "\n" in content else content[2:]
        for w in first.replace("/", " ").split():
            if PYTHONS.match(w):
                return "python"
            if w in SHELLS:
                return "shell"
            lang = RUNTIMES.get(w.lower())
            if lang:
                return lang
    ext = posixpath.splitext(path)[1].lower()
    return _EXT_LANG.get(ext)


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
        if not _b64_candidate(tok):
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


def _b64_candidate(tok: str) -> bool:
    """Base64 of text mixes upper and lower case and has few slashes; a path or a word does not."""
    return not (tok.islower() or tok.isupper() or len(tok.rstrip("=")) % 4 == 1
                or tok.count("/") > 2 + len(tok) // 16)


_HEX_RUN = re.compile(r"[0-9a-fA-F]{16,}")


def has_payload(text: str) -> bool:
    """Whether ``text`` may hold a base64/hex payload (``decode_payloads`` decides); cheap on plain commands."""
    if not text.islower() and any(_b64_candidate(m.group(0)) for m in _B64.finditer(text)):
        return True
    return bool(_HEX_RUN.search(text) or ("\\x" in text and _HEX_ESC.search(text)))


# --- python ------------------------------------------------------------------------------------------------
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


def _is_print(fn: str) -> bool:
    owner, _, last = fn.rpartition(".")
    return (not owner and last in _PRINT_CALLS) or owner in _PRINT_OWNERS


def _harness_imports(tree: ast.AST, code: str) -> dict[str, str]:
    """Local name -> dotted origin for names imported from the harness package (also via a sys.path edit)."""
    out: dict[str, str] = {}
    via_path = "sys.path" in code or "PYTHONPATH" in code
    for node in ast.walk(tree):
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
# the constructs whose strings are built, decoded or handed on in ways a single literal does not show.
_PY_CODE_TRIGGERS = re.compile(
    r"[~\\]|chr|join|sep\b|Path|fromhex|b64|base64|hexlify|decode|codecs|\[::-1\]|environ|putenv|system|"
    r"subprocess|popen|spawn|pty|exec|harness|symlink|sys\.path|hugging|hf[._-]|modelscope|__import__|getattr|"
    r"importlib|\"{3}|'{3}|" + "|".join(sorted(HF_PY_CALLS)))


_PLACEHOLDER = re.compile(r"\{[^{}]*\}|%[-#0 +]*\d*(?:\.\d+)?[sdrifgexXoc%]")


def _python_inert(code: str, cwd: str | None, relevant: Callable[[str], bool] | None) -> bool:
    """True when the analysis of ``code`` cannot yield a fact a rule uses (so the parse is skipped)."""
    if relevant is None:
        return not _PY_TRIGGERS.search(code) and not has_payload(code)
    if _PY_CODE_TRIGGERS.search(code) or has_payload(code):
        return False
    for a, b in _STR_LIT.findall(code):
        lit = a or b
        if not lit:
            continue
        if "{" in lit or "%" in lit:  # a format string: its fixed text (what fills it is another literal, or unknown)
            lit = _PLACEHOLDER.sub("", lit)
        # ":" and "//" may join into a URL, a leading or trailing "." into "..": judged by the parse instead
        if ":" in lit or "//" in lit or lit[:1] == "." or lit[-1:] == "." or relevant(resolve(lit, cwd)):
            return False
    return True


def analyse_python(code: str, cwd: str | None, depth: int = 0, files: Mapping[str, str] | None = None) -> Facts:
    facts = Facts()
    if _python_inert(code, cwd, files.relevant if isinstance(files, Workspace) else None):
        return facts
    try:
        return _analyse_python_tree(ast.parse(code), code, cwd, depth, files)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # hostile or broken code: its literals only
        _classify_strings([a or b for a, b in _STR_LIT.findall(code)], cwd, facts, "python", fetched=True)
        return facts


def _analyse_python_tree(tree: ast.AST, code: str, cwd: str | None, depth: int,
                         files: Mapping[str, str] | None) -> Facts:
    facts = Facts()
    folder = _Folder()
    strings: list[str] = []
    write_targets: list[str] = []
    imports = _harness_imports(tree, code) if "harness" in code or "sys.path" in code else {}
    nodes = list(ast.walk(tree))
    for node in nodes:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            val = folder.fold(node.value)
            if val is not None:
                folder.names[node.targets[0].id] = val
    for node in nodes:
        if isinstance(node, ast.Call):
            fn = dotted(node.func)
            last = fn.rsplit(".", 1)[-1]
            folded = [folder.fold(a) for a in node.args]
            kw = {k.arg: folder.fold(k.value) for k in node.keywords}
            kw_true = {k.arg for k in node.keywords if isinstance(k.value, ast.Constant) and k.value.value is True}
            vals = [v for v in folded if isinstance(v, str)]
            kw_vals = [v for v in kw.values() if isinstance(v, str)]
            if _is_print(fn):
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
                        facts.extend(analyse_shell(script, cwd, None, files, depth + 1))
                        break  # the command is the first argument
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Subscript) and dotted(target.value) == "os.environ":
                    key, value = folder.fold(target.slice), folder.fold(node.value)
                    if isinstance(key, str):
                        facts.env[key] = value if isinstance(value, str) else "<dynamic>"
            val = folder.fold(node.value)
            if isinstance(val, str):
                strings.append(val)
        elif isinstance(node, ast.Subscript) and imports and isinstance(node.ctx, ast.Load):
            origin = _harness_origin(dotted(node.value), imports)
            if origin is not None and folder.fold(node.slice) == "test":
                facts.split_calls.append(f"calls the harness with the hidden test split: {dotted(node.value)}['test']")
    for w in write_targets:
        facts.accesses.append(Access(resolve(w, cwd), "write", False, f"python write {w}"))
    _classify_strings(strings, cwd, facts, "python", fetched=True, depth=depth)
    return facts


def _classify_strings(strings: list[str], cwd: str | None, facts: Facts, how: str, fetched: bool,
                      depth: int = 0) -> None:
    for s in strings:
        if "://" in s:
            for u in URL_RE.findall(s):
                (facts.urls if fetched else facts.mentioned_urls).append(u)
        elif _HOSTNAME.match(s):
            facts.hosts.append(s.lower())
        if s.startswith(("/", "./", "../", "~")) or (("/" in s) and " " not in s and "://" not in s and len(s) < 400):
            facts.accesses.append(Access(resolve(s, cwd), "read", False, f"{how} path {s[:200]}"))
        if depth < MAX_DEPTH and len(s) >= 12:
            for dec in decode_payloads(s):
                _classify_strings([dec], cwd, facts, f"{how} (decoded)", fetched, depth + 1)


# --- other languages (JavaScript, Ruby, Perl, PHP, R, Julia, Lua) ----------------------------------------------
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


def analyse_script(code: str, lang: str, cwd: str | None, files: Mapping[str, str] | None,
                   depth: int, variables: dict[str, str] | None = None) -> Facts:
    if lang == "python":
        return analyse_python(code, cwd, depth, files)
    if lang == "shell":
        return analyse_shell(code, cwd, variables, files, depth)
    return analyse_code(code, lang, cwd, files, depth)


# --- shell -------------------------------------------------------------------------------------------------
_SH_TOKEN = re.compile(r"""[ \t\r]*(?:
   (?P<nl>\n)
  |(?P<sep>&&|\|\||;;&?|;&|\|&|[;&|()])
  |(?P<redir>&>>?|\d*>(?:>|\|)?(?:&\d*-?)?|\d*<(?:<<|<-?|>|&\d*-?)?)
  |(?P<comment>\#[^\n]*)
  |(?P<word>(?:[^\s;&|()<>'"\\`$]+|'[^']*'|"(?:[^"\\]|\\.)*"|\\.|`(?:[^`\\]|\\.)*`|\$\((?:[^()'"]|'[^']*'|"(?:[^"\\]|\\.)*"|\((?:[^()])*\))*\)|\$\{[^}]*\}|\$)+)
  |(?P<other>.)
)""", re.X | re.S)
_UNQUOTE = re.compile(r"""'([^']*)'|"((?:[^"\\]|\\.)*)"|\\(.)|([^'"\\]+)""", re.S)
_DQ_ESC = re.compile(r"""\\([\\"$`\n])""")
_SUBST = re.compile(r"\$\(((?:[^()]|\((?:[^()])*\))*)\)|`([^`]*)`")
REDIR = "\x00"  # marks a redirection operator in an argv (never part of a real word)


def _unquote(word: str) -> str:
    if "'" not in word and '"' not in word and "\\" not in word:
        return word
    out = []
    for m in _UNQUOTE.finditer(word):
        single, double, esc, plain = m.groups()
        if single is not None:
            out.append(single)
        elif double is not None:
            out.append(_DQ_ESC.sub(r"\1", double) if "\\" in double else double)
        elif esc is not None:
            out.append("" if esc == "\n" else esc)
        else:
            out.append(plain)
    return "".join(out)


def _split_heredocs(script: str) -> tuple[str, list[tuple[int, str]]]:
    """Remove heredoc bodies; return the remaining script and (line index, body) pairs."""
    if "<<" not in script:
        return script, []
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


_PLAIN_SCRIPT = re.compile(r"[\"'\\`$#<>\n]")
_PLAIN_SEPS = re.compile(r"&&|\|\||;;|\|&|[;&|()]")


def _commands(script: str) -> list[tuple[int, list[str], list[str]]]:
    """Simple commands as (line index, argv, command substitutions), split at ; && || | & ( ) and newlines;
    comments dropped, quotes removed, redirection operators kept as REDIR-prefixed words."""
    if not _PLAIN_SCRIPT.search(script):  # no quoting, expansion, redirection or comment: plain splitting
        return [(0, words, []) for part in _PLAIN_SEPS.split(script) if (words := part.split())]
    out: list[tuple[int, list[str], list[str]]] = []
    cur: list[str] = []
    subs: list[str] = []
    line = start_line = 0
    for nl, sep, redir, _comment, word, other in _SH_TOKEN.findall(script):
        if word:
            if not cur:
                start_line = line
            if "$(" in word or "`" in word:
                subs += [a or b for a, b in _SUBST.findall(word)]
            if "\n" in word:
                line += word.count("\n")
            cur.append(_unquote(word))
        elif redir:
            if not cur:
                start_line = line
            cur.append(REDIR + redir)
        elif nl or sep:
            if cur:
                out.append((start_line, cur, subs))
                cur, subs = [], []
            if nl:
                line += 1
        elif other and not other.isspace():
            if not cur:
                start_line = line
            cur.append(other)
    if cur:
        out.append((start_line, cur, subs))
    return out


def _expand(token: str, variables: dict[str, str]) -> str:
    return _VAR.sub(lambda m: variables.get(m.group(1) or m.group(2), m.group(0)), token)


def analyse_shell(
    script: str,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    files: Mapping[str, str] | None = None,
    depth: int = 0,
) -> Facts:
    """What a shell script touches. ``files``: files written earlier in the session (path -> content)."""
    facts = Facts()
    base = files if files is not None else {}
    written: dict[str, str] = {}  # files this script writes (cat > f <<EOF): a later command may run them
    files = Workspace(base, base.relevant if isinstance(base, Workspace) else None, written)
    variables = dict(env) if env else {}
    script = script[:MAX_SCRIPT]
    if "\\\n" in script:
        script = script.replace("\\\n", " ")
    body_script, heredocs = _split_heredocs(script)
    body_by_line = dict(heredocs)
    for line_idx, argv, subs in _commands(body_script):
        heredoc = body_by_line.get(line_idx)
        if variables or "$" in script:
            argv = [_expand(t, variables) if "$" in t else t for t in argv]
        assigns = {}
        while argv:
            m = _ASSIGN.match(argv[0])
            if not m:
                break
            assigns[m.group(1)] = m.group(2)
            argv = argv[1:]
        if not argv:
            variables.update(assigns)
            facts.env.update(assigns)
            _proxy_env(assigns, facts)
            continue
        upper = {k: v for k, v in assigns.items() if k.isupper() or k.lower() in _PROXY_VARS}
        facts.env.update(upper)
        _proxy_env(upper, facts)
        cwd = _one_command(argv, cwd, variables, facts, files, heredoc, depth)
        if facts.files_written:
            written.update(facts.files_written)
        if subs and depth < MAX_DEPTH:
            for sub in subs:
                facts.extend(analyse_shell(sub, cwd, variables, files, depth + 1))
    if depth < MAX_DEPTH and len(script) >= 12 and has_payload(script):
        for payload in decode_payloads(script):
            # Nobody base64-encodes a URL to print it: a decoded URL counts as fetched, a decoded path as read.
            facts.extend(analyse_shell(payload, cwd, variables, files, depth + 1))
            facts.urls += URL_RE.findall(payload)
            for word in payload.split():
                if word.startswith(("/", "./", "../")):
                    facts.accesses.append(Access(resolve(word, cwd), "read", False, f"decoded payload {word}"))
    return facts


def _proxy_env(assigns: dict[str, str], facts: Facts) -> None:
    """A proxy set in the environment is a host the next commands' traffic goes to."""
    for k, v in assigns.items():
        if k.lower() in _PROXY_VARS and v and v not in ("<unset>",):
            facts.urls.append(v if "://" in v else f"http://{v}")


def _strip_wrappers(argv: list[str], facts: Facts) -> list[str]:
    while argv and argv[0].rpartition("/")[2] in WRAPPERS:
        name = argv[0].rpartition("/")[2]
        argv = argv[1:]
        if name == "env":
            while argv and (argv[0].startswith("-") or _ASSIGN.match(argv[0])):
                m = _ASSIGN.match(argv[0])
                if m:
                    facts.env[m.group(1)] = m.group(2)
                    _proxy_env({m.group(1): m.group(2)}, facts)
                elif argv[0] in ("-u", "--unset") and len(argv) > 1:
                    facts.env[argv[1]] = "<unset>"
                    argv = argv[1:]
                argv = argv[1:]
        elif name == "timeout":
            while argv and (argv[0].startswith("-") or re.match(r"^\d+(?:\.\d+)?[smhd]?$", argv[0])):
                argv = argv[1:]
        else:
            while argv and argv[0].startswith("-"):
                argv = argv[1:]
    return argv


def _takes_value(name: str, flag: str) -> bool:
    """Whether a flag of a network command takes the next word as its value."""
    if flag.startswith("--"):
        return "=" not in flag and flag not in _BOOL_LONGS
    shorts = _VALUE_SHORTS.get(name)
    return bool(shorts) and len(flag) >= 2 and flag[-1] in shorts  # type: ignore[operator]


def _hosts_of(name: str, args: list[str]) -> list[str]:
    """Hosts a network command contacts that are not written as URLs, as pseudo-URLs (``tcp://host:port``):
    scheme-less curl/wget targets, ``nc``/``telnet`` host operands, ``ssh``/``scp``/``rsync`` remotes,
    ``socat`` addresses, proxies and ``--resolve`` targets."""
    out: list[str] = []
    skip = False
    for k, a in enumerate(args):
        if skip:
            skip = False
            if name in ("curl",) and k and args[k - 1] in ("-x", "--proxy", "--preproxy"):
                out.append(a if "://" in a else f"http://{a}")
            elif name == "curl" and k and args[k - 1] in ("--resolve", "--connect-to"):
                host = a.split(":")[0] if a.split(":")[0] else ""
                if host:
                    out.append(f"https://{host}")
            elif name == "openssl" and k and args[k - 1] == "-connect":
                out.append(f"tcp://{a}")
            elif name == "ssh" and k and args[k - 1] == "-J":
                out.append(f"ssh://{a.split('@')[-1]}")
            continue
        if a.startswith("-"):
            skip = _takes_value(name, a) or (name == "openssl" and a == "-connect")
            continue
        if "://" in a:
            continue
        if name in ("nc", "ncat", "netcat", "telnet", "ftp"):
            if _HOSTNAME.match(a) or _is_ipish(a) or a == "localhost":
                out.append(f"tcp://{a}")
            break
        if name == "socat":
            m = re.match(r"^(?:TCP4?|TCP6|OPENSSL|SSL|UDP4?|UDP6|TCP-CONNECT|TCP4-CONNECT|PROXY)[-\w]*:([^:,]+)", a, re.I)
            if m:
                out.append(f"tcp://{m.group(1)}")
            continue
        if name in ("ssh", "sftp"):
            out.append(f"ssh://{a.split('@')[-1]}")
            break
        if name in ("scp", "rsync"):
            m = re.match(r"^(?:[\w.-]+@)?([\w.-]+):", a)
            if m and "/" not in a.split(":")[0]:
                out.append(f"ssh://{m.group(1)}")
            continue
        if name in ("curl", "wget", "aria2c", "http", "https", "httpie", "xh", "lynx", "links", "w3m", "axel"):
            m = _SCHEMELESS.match(a)
            if (m and m.group(2).lower() not in FILE_EXTENSIONS) or _RAW_IP_TARGET.match(a):
                out.append(f"http://{a.split('@')[-1]}")
    return out


def _is_ipish(a: str) -> bool:
    return bool(re.match(r"^\d{1,3}(?:\.\d{1,3}){3}$|^\[?[0-9a-fA-F:]+\]?$", a)) and (":" in a or "." in a)


def _review_cmd(args: list[str], facts: Facts, evidence: str) -> None:
    """``review harness split|run|baselines`` asked for the test split (``harness split`` writes it by default)."""
    words = [a for a in args if not a.startswith("-")]
    if len(words) < 2 or words[0] != "harness":
        return
    split = None
    for k, a in enumerate(args):
        if a == "--split" and k + 1 < len(args):
            split = args[k + 1]
        elif a.startswith("--split="):
            split = a.split("=", 1)[1]
    if words[1] == "split" and split in (None, "test"):
        facts.split_calls.append(f"runs the harness's split generator for the hidden test split: {evidence}")
    elif words[1] in ("run", "baselines") and split == "test":
        facts.split_calls.append(f"runs the harness on the hidden test split: {evidence}")


def _harness_module_run(module: str, args: list[str], cwd: str | None, files: Mapping[str, str], facts: Facts,
                        evidence: str) -> None:
    """``python -m harness.<mod>`` with the test split in its arguments or in a config file written earlier."""
    test = any(a == "test" or a == "--split=test" for a in args) or any(
        a == "--split" and k + 1 < len(args) and args[k + 1] == "test" for k, a in enumerate(args))
    for a in args:
        p = resolve(a, cwd)
        content = files.get(p)
        if content is not None:
            facts.consulted.add(p)
            if re.search(r"""["']?split["']?\s*[:=]\s*["']test["']""", content):
                test = True
    if "split" in module and (test or "test" in module):
        facts.split_calls.append(f"runs the harness's split generator for the hidden test split: {evidence}")
    elif test:
        facts.split_calls.append(f"runs the harness on the hidden test split: {evidence}")


def _run_file(path: str, files: Mapping[str, str], facts: Facts, cwd: str | None, depth: int,
              variables: dict[str, str], lang: str | None = None) -> None:
    """A script run later: analysed with what the session wrote to it (it may not have written it at all)."""
    facts.consulted.add(path)
    content = files.get(path)
    if content is None or depth >= MAX_DEPTH:
        return
    lang = lang or language_of(path, content) or "shell"
    facts.extend(analyse_script(content, lang, cwd, files, depth + 1, variables))


def _one_command(argv: list[str], cwd: str | None, variables: dict[str, str], facts: Facts,
                 files: Mapping[str, str], heredoc: str | None, depth: int) -> str | None:
    if argv[0].rpartition("/")[2] in WRAPPERS:
        argv = _strip_wrappers(argv, facts)
        if not argv:
            return cwd
    name = argv[0].rpartition("/")[2]
    # redirections
    args: list[str] = []
    i = 1
    redirect_write = None
    if not any(t[:1] == REDIR for t in argv):
        args, i = argv[1:], len(argv)
    while i < len(argv):
        t = argv[i]
        if t[:1] == REDIR:
            op = t[1:]
            if re.search(r"&\d*-?$", op) and op[-1] != "&" and not op.startswith("&"):  # 2>&1, <&0: no file
                i += 1
                continue
            target = argv[i + 1] if i + 1 < len(argv) and argv[i + 1][:1] != REDIR else ""
            if ">" in op:
                if target and not target.startswith("&") and target not in ("/dev/null", "/dev/stderr", "/dev/stdout"):
                    facts.accesses.append(Access(resolve(target, cwd), "write", False, " ".join(argv)[:300]))
                    redirect_write = resolve(target, cwd)
            elif op.endswith("<<<"):
                if depth < MAX_DEPTH:
                    for dec in decode_payloads(target):
                        facts.urls += URL_RE.findall(dec)
                    if PYTHONS.match(name) or RUNTIMES.get(name.lower()) or name in SHELLS:
                        heredoc = target
            elif op.endswith("<") and not op.endswith("<<"):
                facts.accesses.append(Access(resolve(target, cwd), "read", False, " ".join(argv)[:300]))
            i += 2
            continue
        args.append(t)
        i += 1
    evidence = " ".join(argv)[:300]

    if name == "cd":
        dest = args[0] if args else "~"
        return resolve(dest, cwd) if dest != "-" else cwd
    if name in ("export", "declare", "typeset") or (name == "set" and args[:1] == ["-a"]):
        for a in args:
            m = _ASSIGN.match(a)
            if m:
                facts.env[m.group(1)] = m.group(2)
                variables[m.group(1)] = m.group(2)
                _proxy_env({m.group(1): m.group(2)}, facts)
        return cwd
    if name == "unset":
        for a in args:
            facts.env[a] = "<unset>"
        return cwd
    if heredoc is not None and redirect_write and name == "cat":
        facts.files_written[redirect_write] = heredoc
    if "/" in argv[0] and not PYTHONS.match(name) and name not in SHELLS and not RUNTIMES.get(name.lower()):
        target = resolve(argv[0], cwd)
        if target in files or target.endswith(_SCRIPT_EXTS):  # ./fetch.js, /tmp/x.sh: run directly
            facts.accesses.append(Access(target, "read", False, evidence))
            _run_file(target, files, facts, cwd, depth, variables)
    if name in SHELLS or name in ("eval", "source", "."):
        sub_script = None
        if name == "eval":
            sub_script = " ".join(args)
        elif "-c" in args or any(a.startswith("-") and not a.startswith("--") and "c" in a for a in args[:2]):
            flag_idx = next(k for k, a in enumerate(args) if a == "-c" or (a.startswith("-") and "c" in a))
            sub_script = args[flag_idx + 1] if flag_idx + 1 < len(args) else None
        elif heredoc is not None and (not args or args[0] in ("-", "-s")):
            sub_script = heredoc
        elif args:
            script_path = resolve(next((a for a in args if not a.startswith("-")), args[0]), cwd)
            facts.accesses.append(Access(script_path, "read", False, evidence))
            _run_file(script_path, files, facts, cwd, depth, variables, "shell")
        if sub_script and depth < MAX_DEPTH:
            facts.extend(analyse_shell(sub_script, cwd, variables, files, depth + 1))
        return cwd
    if PYTHONS.match(name):
        _python_command(args, cwd, facts, files, heredoc, depth, evidence, variables)
        return cwd
    lang = RUNTIMES.get(name.lower())
    if lang is not None and name != "r":  # (zsh's r repeats the last command)
        _runtime_command(name.lower(), lang, args, cwd, facts, files, heredoc, depth, evidence, variables)
        return cwd
    if name in ("review", "reviewbench"):
        _review_cmd(args, facts, evidence)

    flags = [a for a in args if a.startswith("-")]
    operands = [a for a in args if not a.startswith("-")]
    recursive = name in RECURSIVE_ALWAYS or (name in RECURSIVE_FLAGGED and any(
        f in ("-r", "-R", "-a", "--recursive", "-rf", "-fr", "-Rf") or (f.startswith("-") and not f.startswith("--")
                                                                        and ("r" in f or "R" in f)) for f in flags))
    if name in ("hf", "huggingface-cli"):
        if operands and operands[0] not in _HF_LOCAL_SUBCOMMANDS:
            facts.hf_calls.append(evidence)
    elif name == "hfd.sh" or (name == "modelscope" and "download" in args):
        facts.hf_calls.append(evidence)
    if name == "ln" and "s" in "".join(f for f in flags if not f.startswith("--")) and len(operands) >= 2:
        facts.symlinks.append((resolve(operands[1], cwd), resolve(operands[0], cwd)))
    network = name in NETWORK_CMDS
    if name == "git" and operands[:1] in (["remote"], ["config"], ["submodule"]) and "update" not in operands:
        network = False  # git remote add URL records a URL, it does not contact it (fetch/pull/clone do)
    for a in operands:
        if "://" in a:
            for u in URL_RE.findall(a):
                (facts.urls if network else facts.mentioned_urls).append(u)
        if network and name == "git":
            m = re.match(r"^[\w.-]+@([\w.-]+):", a)
            if m:
                facts.urls.append(f"ssh://{m.group(1)}/")
    if network:
        for f in flags:  # --index-url=https://..., --proxy=...
            if "=" in f and "://" in f:
                facts.urls += URL_RE.findall(f)
        facts.urls += _hosts_of(name, args)
    if name in ("echo", "printf"):  # their words are data, not paths
        return cwd
    mode: Literal["read", "write", "list"] = "list" if name in LIST_CMDS else "read"
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
    if name in ("ls", "tree", "du") and not path_ops:
        path_ops = ["."] if recursive else []
    is_file_cmd = name in FILE_CMDS
    for k, a in enumerate(path_ops):
        if not is_file_cmd and "/" not in a and "." not in a and "*" not in a:
            continue
        p = resolve(a, cwd)
        if name in WRITERS_LAST_ARG and k == len(path_ops) - 1 and len(path_ops) >= 2:
            facts.accesses.append(Access(p, "write", False, evidence))
        elif name in WRITERS_ALL_ARGS:
            facts.accesses.append(Access(p, "write", recursive, evidence))
        else:
            facts.accesses.append(Access(p, mode, recursive, evidence))
    return cwd


def _python_command(args: list[str], cwd: str | None, facts: Facts, files: Mapping[str, str], heredoc: str | None,
                    depth: int, evidence: str, variables: dict[str, str]) -> None:
    code = None
    if "-c" in args:
        k = args.index("-c")
        code = args[k + 1] if k + 1 < len(args) else None
    elif "-m" in args:
        k = args.index("-m")
        mod = args[k + 1] if k + 1 < len(args) else ""
        rest = args[k + 2:]
        if mod in ("huggingface_hub.commands.huggingface_cli", "huggingface_hub", "huggingface_hub.cli.hf"):
            facts.hf_calls.append(evidence)
        if mod in ("pip", "uv") and "install" in rest:
            facts.urls += [u for a in rest for u in URL_RE.findall(a)]
        if mod in ("reviewbench", "reviewbench.cli"):
            _review_cmd(rest, facts, evidence)
        if mod == "harness" or mod.startswith("harness."):
            _harness_module_run(mod, rest, cwd, files, facts, evidence)
        for a in rest:
            if not a.startswith("-") and ("/" in a or a.endswith((".json", ".jsonl", ".py"))):
                facts.accesses.append(Access(resolve(a, cwd), "read", False, evidence))
    elif heredoc is not None and (not args or args[0] == "-" or all(a.startswith("-") for a in args)):
        code = heredoc
    else:
        script_arg = next((a for a in args if not a.startswith("-")), None)
        if script_arg:
            p = resolve(script_arg, cwd)
            facts.accesses.append(Access(p, "read", False, evidence))
            rest = args[args.index(script_arg) + 1:]
            for a in rest:
                if not a.startswith("-") and ("/" in a or "." in a):
                    facts.accesses.append(Access(resolve(a, cwd), "read", False, evidence))
            if "/harness/" in p or p.startswith("harness/"):
                _harness_module_run(posixpath.basename(p), rest, cwd, files, facts, evidence)
            _run_file(p, files, facts, cwd, depth, variables, "python")
    if code and depth < MAX_DEPTH:
        facts.extend(analyse_python(code, cwd, depth + 1, files))


def _runtime_command(name: str, lang: str, args: list[str], cwd: str | None, facts: Facts,
                     files: Mapping[str, str], heredoc: str | None, depth: int, evidence: str,
                     variables: dict[str, str]) -> None:
    """node/deno/bun/ruby/perl/php/Rscript/julia/lua: their code strings, or the script file they run."""
    code_parts: list[str] = []
    script: str | None = None
    code_flags = _CODE_FLAGS.get(lang, set())
    k = 0
    while k < len(args):
        a = args[k]
        if a in code_flags or (name == "deno" and a == "eval") or (name == "bun" and a in ("-e", "--eval")):
            if k + 1 < len(args):
                code_parts.append(args[k + 1])
            k += 2
            continue
        if "=" in a and a.split("=", 1)[0] in ("--eval", "--print"):
            code_parts.append(a.split("=", 1)[1])
        elif lang == "perl" and a.startswith(("-M", "-m")) and len(a) > 2:
            code_parts.append(f"use {a[2:].split('=')[0]};")
        elif lang == "perl" and a.startswith(("-e", "-E")) and len(a) > 2:
            code_parts.append(a[2:])
        elif lang == "ruby" and a.startswith("-r") and len(a) > 2:
            code_parts.append(f"require '{a[2:]}'")
        elif a.startswith("-"):
            if a in _RUNTIME_VALUE_FLAGS and k + 1 < len(args):
                if a in ("-r", "--require") and lang == "ruby":
                    code_parts.append(f"require '{args[k + 1]}'")
                k += 1
        elif name in ("deno", "bun") and a in ("run", "x", "exec", "test"):
            pass
        else:
            script = a
            break
        k += 1
    if script is not None and "://" in script:
        facts.urls += URL_RE.findall(script)  # deno run https://...: the code itself is downloaded
    elif script is not None:
        p = resolve(script, cwd)
        facts.accesses.append(Access(p, "read", False, evidence))
        _run_file(p, files, facts, cwd, depth, variables, lang)
    if not code_parts and script is None and heredoc is not None:
        code_parts.append(heredoc)
    if code_parts and depth < MAX_DEPTH:
        facts.extend(analyse_code("\n".join(code_parts), lang, cwd, files, depth + 1))


def _harness_modules() -> frozenset[str]:
    """Module names of the harness package, found on disk (reviewbench never imports it for this)."""
    import importlib.util

    spec = importlib.util.find_spec("harness")
    if spec is None or not spec.submodule_search_locations:
        return frozenset()
    from pathlib import Path

    names = set()
    for loc in spec.submodule_search_locations:
        names |= {p.stem for p in Path(loc).glob("*.py") if p.stem != "__init__"}
    return frozenset(names)


HARNESS_MODULES = _harness_modules()
_SCRIPT_EXTS = tuple(_EXT_LANG)
