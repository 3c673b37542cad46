"""Shell scripts: one regex tokenizer, then each simple command judged by what it runs (network commands,
file commands, interpreters with code strings or script files, the harness)."""

from __future__ import annotations

import ast
import base64
import binascii
import posixpath
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Literal

from reviewbench.logs.static.common import (register_shell, Access, FILE_CMDS, FILE_EXTENSIONS, Facts, LIST_CMDS, MAX_DEPTH,
    MAX_SCRIPT, NETWORK_CMDS, PATTERN_FIRST, PYTHONS, RECURSIVE_ALWAYS, RECURSIVE_FLAGGED, RUNTIMES, SHELLS, URL_RE,
    WRAPPERS, WRITERS_ALL_ARGS, WRITERS_LAST_ARG, Workspace, _ASSIGN, _BOOL_LONGS, _CODE_FLAGS, _HEREDOC,
    _HF_LOCAL_SUBCOMMANDS, _HOSTNAME, _PROXY_VARS, _RAW_IP_TARGET, _RUNTIME_VALUE_FLAGS, _SCHEMELESS, _SCRIPT_EXTS,
    _VALUE_SHORTS, _VAR, decode_payloads, has_payload, language_of, resolve)
from reviewbench.logs.static.langs import analyse_code
from reviewbench.logs.static.python import analyse_python

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
_FD_DUP = re.compile(r"&\d*-?$")
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
    """Remove heredoc bodies; return the remaining script and (line index, body) pairs. A body ends at the
    first line that is its delimiter (blanks around it allowed), found with ``str.find`` rather than by
    looking at every line of a long program piped into an interpreter."""
    if "<<" not in script:
        return script, []
    out: list[str] = []
    bodies: list[tuple[int, str]] = []
    size = len(script)
    pos = 0
    while pos <= size:
        nl = script.find("\n", pos)
        end = size if nl < 0 else nl
        line = script[pos:end]
        out.append(line)
        pos = end + 1
        if "<<" not in line:
            continue
        for m in _HEREDOC.finditer(line):
            if pos > size:  # no line left: an empty body
                bodies.append((len(out) - 1, ""))
                continue
            delim = m.group(2)
            at = _delimiter_line(script, delim, pos)
            if at < 0:  # never closed: the rest of the script is the body
                bodies.append((len(out) - 1, script[pos:]))
                pos = size + 1
                continue
            bodies.append((len(out) - 1, script[pos:at - 1] if at > pos else ""))
            close = script.find("\n", at)
            pos = size + 1 if close < 0 else close + 1
    return "\n".join(out), bodies


def _delimiter_line(script: str, delim: str, pos: int) -> int:
    """The start of the first line at or after ``pos`` (a line start) whose stripped text is ``delim``; -1."""
    k = script.find(delim, pos)
    while k >= 0:
        start = script.rfind("\n", pos, k) + 1 or pos
        end = script.find("\n", k)
        if script[start:end if end >= 0 else len(script)].strip() == delim:
            return start
        k = script.find(delim, k + 1)
    return -1


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
            if _FD_DUP.search(op) and op[-1] != "&" and not op.startswith("&"):  # 2>&1, <&0: no file
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


register_shell(analyse_shell)
