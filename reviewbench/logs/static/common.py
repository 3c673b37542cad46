"""What every analyser shares: the facts they report (accesses, URLs, env, written files), the word lists
of commands and calls they judge by, path resolution, and the decoding of base64/hex payloads."""

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
                "println", "warn", "die", "croak", "carp", "confess", "warning", "stop", "error_log", "trigger_error"}
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
        if other is NO_FACTS:
            return
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


def make_room(cache: dict, cap: int) -> None:
    """Drop the oldest quarter of a bounded cache once it holds ``cap`` entries. (Popping the oldest entry one
    at a time costs ~10 us at 8,192 entries: ``next(iter(d))`` walks over the slots earlier pops emptied.)"""
    if len(cache) >= cap:
        keep = list(cache.items())[cap // 4:]
        cache.clear()
        cache.update(keep)


NO_FACTS = Facts()  # what an analysis that found nothing returns (shared: callers read facts, never change them)
MAX_VERDICT_CHARS = 8_000_000  # of script text kept as keys of the inert verdicts (the oldest go first)
MAX_INERT_LINES = 100_000  # lines judged inert kept per agent (all forgotten at once past it)
MAX_INERT_TEXT_CHARS = 4_000_000  # of the last inert version of each script kept (the oldest go first)


class Relevance:
    """Which absolute paths could matter to a rule (``test``), and ``anchors``: words that any code building
    such a path from pieces must contain (the most distinctive folder name of each protected root), so a
    script holding none of them, and no literal that is itself relevant, need not be parsed.

    It also keeps what was learnt with it: ``verdicts`` (script text -> cwd -> inert; keyed by the text itself,
    whose hash Python keeps on the string, so rerunning a script costs no hashing of its text) and
    ``inert_lines`` (cwd -> lines that hold nothing any test of ``python._python_inert`` looks for: a new
    version of a script is judged by its new lines), and ``inert_texts`` ((path, cwd, False) -> the last version
    of a script judged inert there whose lines are all in ``inert_lines``, (path, cwd, True) the last such version
    written whole: the next version, made by edits or written whole, is compared with one of them, and only the
    lines between their common start and end are looked at). All are forgotten when the test changes
    (``forget``); ``inert_texts`` also whenever ``inert_lines`` are."""

    __slots__ = ("test", "anchors", "verdicts", "verdict_chars", "inert_lines", "n_lines", "inert_texts",
                 "inert_text_chars")

    def __init__(self, test: Callable[[str], bool], anchors: frozenset[str] | None = None) -> None:
        self.test = test
        self.anchors = anchors
        self.verdicts: dict[str, dict[str | None, bool]] = {}
        self.verdict_chars = 0
        self.inert_lines: dict[str | None, set[str]] = {}
        self.n_lines = 0
        self.inert_texts: dict[tuple[str, str | None, bool], str] = {}
        self.inert_text_chars = 0

    def __call__(self, path: str) -> bool:
        return self.test(path)

    def forget(self) -> None:
        self.verdicts.clear()
        self.inert_lines.clear()
        self.inert_texts.clear()
        self.verdict_chars = self.n_lines = self.inert_text_chars = 0

    def verdict(self, code: str, cwd: str | None) -> bool | None:
        by_cwd = self.verdicts.get(code)
        return None if by_cwd is None else by_cwd.get(cwd)

    def remember_verdict(self, code: str, cwd: str | None, inert: bool) -> None:
        by_cwd = self.verdicts.get(code)
        if by_cwd is None:
            by_cwd = self.verdicts[code] = {}
            self.verdict_chars += len(code)
            while self.verdict_chars > MAX_VERDICT_CHARS and len(self.verdicts) > 1:
                oldest = next(iter(self.verdicts))
                del self.verdicts[oldest]
                self.verdict_chars -= len(oldest)
        by_cwd[cwd] = inert

    def remember_inert_text(self, path: str, cwd: str | None, code: str, written: bool) -> None:
        """``code``, judged inert in ``cwd``, has all its lines in ``inert_lines[cwd]``; ``written``: as a whole
        (not made by edits), kept also as the last such version."""
        for key in ((path, cwd, False), (path, cwd, True)) if written else ((path, cwd, False),):
            old = self.inert_texts.pop(key, None)
            if old is not None:
                self.inert_text_chars -= len(old)
            self.inert_texts[key] = code
            self.inert_text_chars += len(code)
        while self.inert_text_chars > MAX_INERT_TEXT_CHARS and len(self.inert_texts) > 1:
            self.inert_text_chars -= len(self.inert_texts.pop(next(iter(self.inert_texts))))

    def remember_lines(self, cwd: str | None, lines: set[str]) -> bool:
        """Add lines judged inert in ``cwd``; False when the earlier ones were forgotten to make room."""
        kept = True
        if self.n_lines + len(lines) > MAX_INERT_LINES:
            self.inert_lines.clear()
            self.inert_texts.clear()
            self.n_lines = self.inert_text_chars = 0
            kept = False
        known = self.inert_lines.get(cwd)
        if known is None:
            self.inert_lines[cwd] = set(lines)
        else:
            known |= lines
        self.n_lines += len(lines)
        return kept


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


_NAME_NUMBER = re.compile(r"[A-Za-z]+[0-9]*")


def _b64_candidate(tok: str) -> bool:
    """Base64 of text mixes upper and lower case and has few slashes; a path or a word does not, nor a name
    (ArgumentParser, ScoreBlend98: letters, then at most a number; base64 of text spreads its digits)."""
    return not (tok.islower() or tok.isupper() or len(tok.rstrip("=")) % 4 == 1
                or tok.count("/") > 2 + len(tok) // 16 or (len(tok) < 24 and _NAME_NUMBER.fullmatch(tok)))


_HEX_RUN = re.compile(r"[0-9a-fA-F]{16,}")
_HEX_MAP = bytes(1 if chr(b) in "0123456789abcdefABCDEF" else 0 for b in range(256))
_HEX_16 = b"\x01" * 16


def hex_run(text: str) -> bool:
    """``bool(_HEX_RUN.search(text))``, by mapping hex digits to one byte in C (the regex, tried at every
    position of code full of a-f letters, cost ten times more)."""
    return _HEX_16 in text.encode("utf-8", "surrogatepass").translate(_HEX_MAP)


_B64_MAP = bytes(1 if chr(b) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/" else 0
                 for b in range(256))
_B64_12 = b"\x01" * 12


def b64_runs(text: str) -> Iterator[str]:
    """The matches of ``_B64.finditer(text)``. In ASCII text a match starts where twelve characters of the
    alphabet do, found with ``bytes.find`` over the text mapped in C; the regex, tried at every position of
    code (most of it words of the alphabet shorter than twelve), cost several times more."""
    if not text.isascii():
        yield from (m.group(0) for m in _B64.finditer(text))
        return
    mapped = text.encode("ascii").translate(_B64_MAP)
    pos = mapped.find(_B64_12)
    while pos >= 0:
        m = _B64.match(text, pos)
        if m is None:  # (cannot happen: twelve characters of the alphabet start here)
            break
        yield m.group(0)
        pos = mapped.find(_B64_12, m.end())


def has_payload(text: str) -> bool:
    """Whether ``text`` may hold a base64/hex payload (``decode_payloads`` decides); cheap on plain commands.
    Hex digits are of the base64 alphabet, so a hex run lies in one of the base64 runs of 16 characters or more:
    looked for there (one mapping of the text, not two; most texts have no such run)."""
    b64 = not text.islower()
    for run in b64_runs(text):
        if b64 and _b64_candidate(run):
            return True
        if len(run) >= 16 and hex_run(run):
            return True
    return "\\x" in text and bool(_HEX_ESC.search(text))




def _is_print(fn: str) -> bool:
    owner, _, last = fn.rpartition(".")
    return (not owner and last in _PRINT_CALLS) or owner in _PRINT_OWNERS



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


# The shell analyser calls the language analysers and they call it back (``python -c`` in a script that runs
# ``bash -c``). Data flows one way at import time: ``shell`` registers itself here and the others call through.
_SHELL: list[Callable[..., "Facts"]] = []


def register_shell(fn: Callable[..., "Facts"]) -> None:
    """Called once by ``shell`` when it is imported; the package's ``__init__`` imports it, so any import of an
    analyser has it registered."""
    _SHELL[:] = [fn]


def analyse_shell(script: str, cwd: str | None = None, env: Mapping[str, str] | None = None,
                  files: Mapping[str, str] | None = None, depth: int = 0) -> "Facts":
    """A nested shell command met inside another language's code, analysed by the registered shell analyser."""
    return _SHELL[0](script, cwd, env, files, depth)
