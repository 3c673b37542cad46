"""Other agent clients onto the same events: Gemini CLI sessions, OpenHands trajectories, SWE-agent and
mini-swe-agent trajectories, Aider chat histories.

Shapes, from each client's documented or published format (the README says which were seen in real files):
- Gemini CLI ``~/.gemini/tmp/<project>/chats/session-*.json``: ``{sessionId, projectHash, startTime,
  messages: [{id, timestamp, type: "user"|"gemini", content, toolCalls: [{id, name, args, result, status}]}]}``;
  tools ``run_shell_command{command, directory}``, ``read_file{absolute_path|file_path}``,
  ``write_file{file_path, content}``, ``replace{file_path, old_string, new_string}``, ``glob{pattern, path}``,
  ``search_file_content``/``grep{pattern, path}``, ``list_directory{path}``, ``read_many_files{paths}``,
  ``web_fetch{prompt}`` (its URLs are in the prompt), ``google_web_search{query}``, MCP tools.
- OpenHands (V0 ``trajectory.json`` or an eval record's ``history``): action events ``{id, timestamp,
  source: "agent", action: "run"|"run_ipython"|"read"|"write"|"edit"|"browse"|..., args: {command, code, path,
  content, url, ...}}``; observations are not actions.
- SWE-agent ``.traj``: ``{trajectory: [{action, observation, thought}], history, info}``: each ``action`` is a
  shell command line (SWE-agent's own commands, ``open``/``edit``/``create``, read and write files).
- mini-swe-agent ``*.traj.json``: ``{info, messages: [{role, content}], trajectory_format}``: the command is
  the fenced bash block of each assistant message.
- Aider ``.aider.chat.history.md``: ``#### `` user lines (``/run CMD``, ``/web URL``, ``/read-only FILE``,
  ``/add FILE``), ``> `` quoted output, and edits as SEARCH/REPLACE blocks under a file name.

No cwd is recorded by Gemini CLI, SWE-agent or Aider sessions: relative paths there stay relative (only
absolute ones are judged) unless --agent's home gives one.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from reviewbench.logs.claude import tool_event
from reviewbench.logs.events import Event, EventKind, FileInfo, ParseStats, string_values
from reviewbench.logs.reader import MAX_RECORD_BYTES, json_records
from reviewbench.logs.static import URL_RE

TRAJECTORY_FORMATS = ("gemini", "openhands", "sweagent", "aider")
_FENCE = re.compile(r"```(?:bash|sh|shell|console)?\s*\n(.*?)```", re.S)
_AIDER_CMD = re.compile(r"^#### /(run|test|web|add|read-only|read|drop|git)\s+(.*)$")
_AIDER_FILE_LINE = re.compile(r"^([^\s`<>=]+\.[\w]+|[^\s`<>=]+/[^\s`<>=]+)\s*$")
# Gemini CLI tool names -> the Claude Code tool of the same effect (argument names mapped below)
_GEMINI_TOOLS = {"run_shell_command": "Bash", "read_file": "Read", "write_file": "Write", "replace": "Edit",
                 "glob": "Glob", "search_file_content": "Grep", "grep": "Grep", "list_directory": "LS",
                 "read_many_files": "Read", "google_web_search": "WebSearch", "web_fetch": "WebFetch"}


def classify_trajectory(rec: dict) -> str | None:
    """The client a record (a file's first record, or its wrapper) belongs to, or None."""
    if isinstance(rec.get("messages"), list) and "sessionId" in rec and "projectHash" in rec:
        return "gemini"
    if isinstance(rec.get("trajectory"), list) and ("info" in rec or "history" in rec):
        return "sweagent"
    if isinstance(rec.get("messages"), list) and (
            str(rec.get("trajectory_format", "")).startswith("mini-swe-agent") or (
                isinstance(rec.get("info"), dict) and any(k in rec["info"] for k in ("mini_version", "exit_status")))):
        return "sweagent"
    if isinstance(rec.get("history"), list) and ("instance_id" in rec or "instruction" in rec or "metadata" in rec):
        return "openhands"
    if ("action" in rec and isinstance(rec.get("args"), dict) and "source" in rec) or \
            ("observation" in rec and "cause" in rec and "source" in rec):
        return "openhands"
    return None


def is_aider(path: Path) -> bool:
    """An Aider chat history: its name, or its first line."""
    if path.name.endswith(".aider.chat.history.md"):
        return True
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    return head.lstrip().startswith(b"# aider chat started at")


def _whole(info: FileInfo, stats: ParseStats) -> Iterator[tuple[int, dict]]:
    """The file's records: for a single document, the document itself (read whole, up to the record cap)."""
    size = info.path.stat().st_size
    if info.layout == "json" and size <= MAX_RECORD_BYTES and info.path.read_bytes().lstrip()[:1] == b"{":
        stats.bytes += size
        raw = info.path.read_bytes()
        stats.lines += raw.count(b"\n") + 1
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError as e:
            stats.unread_records += 1
            stats.warn(str(info.path), f"not JSON: {str(e)[:80]}")
            return
        if isinstance(obj, dict):
            yield 1, obj
        return
    yield from json_records(info.path, stats, "lines" if info.layout == "lines" else "json")


def parse_trajectory(info: FileInfo, stats: ParseStats) -> Iterator[Event]:
    if info.fmt == "aider":
        yield from _aider(info, stats)
        return
    for lineno, rec in _whole(info, stats):
        kind = classify_trajectory(rec)
        if kind == "gemini":
            yield from _gemini(rec, info)
        elif kind == "sweagent":
            yield from _sweagent(rec, info)
        elif kind == "openhands" and isinstance(rec.get("history"), list):
            info.client = info.client or "OpenHands"
            for k, ev in enumerate(rec["history"]):
                if isinstance(ev, dict):
                    yield from _openhands(ev, f"{info.path}:{lineno}#history[{k}]", info)
        elif kind == "openhands" or "action" in rec:
            info.client = info.client or "OpenHands"
            yield from _openhands(rec, f"{info.path}:{lineno}", info)
        elif isinstance(rec.get("trajectory"), list) or isinstance(rec.get("messages"), list):
            yield from _sweagent(rec, info)
        else:
            stats.skip("trajectory:other")


def _gemini(doc: dict, info: FileInfo) -> Iterator[Event]:
    info.session_id = info.session_id or (doc.get("sessionId") if isinstance(doc.get("sessionId"), str) else None)
    info.client = "Gemini CLI"
    cwd = info.session_cwd
    for k, msg in enumerate(doc.get("messages") or []):
        if not isinstance(msg, dict) or msg.get("type") != "gemini":
            continue
        for j, call in enumerate(msg.get("toolCalls") or []):
            if not isinstance(call, dict):
                continue
            name = str(call.get("name") or "")
            raw_args = call.get("args")
            args: dict[str, Any] = raw_args if isinstance(raw_args, dict) else {}
            src = f"{info.path}:messages[{k}].toolCalls[{j}]"
            time = msg.get("timestamp") if isinstance(msg.get("timestamp"), str) else None
            mapped = _GEMINI_TOOLS.get(name)
            if mapped is None:
                ev = tool_event(f"mcp__{name}" if "__" in name or "/" in name else name, args, src, cwd, time,
                                info.agent)
                ev.tool = name
                yield ev
                continue
            inp = dict(args)
            if "absolute_path" in args:
                inp["file_path"] = args["absolute_path"]
            if name == "read_many_files" and isinstance(args.get("paths"), list):
                for p in args["paths"]:
                    yield Event(source=src, tool=name, kind="read", agent=info.agent, time=time, cwd=cwd,
                                paths=[str(p)])
                continue
            run_cwd = args.get("directory") if isinstance(args.get("directory"), str) else cwd
            if run_cwd and cwd and not run_cwd.startswith("/"):
                run_cwd = f"{cwd.rstrip('/')}/{run_cwd}"
            ev = tool_event(mapped, inp, src, run_cwd, time, info.agent)
            ev.tool = name
            if name == "web_fetch":  # the URLs are in the prompt
                ev.urls = URL_RE.findall(str(args.get("prompt", "")))
                ev.kind = "fetch"
            yield ev


def _openhands(ev: dict, src: str, info: FileInfo) -> Iterator[Event]:
    action = ev.get("action")
    if not isinstance(action, str) or ev.get("source") not in (None, "agent"):
        return
    raw_args = ev.get("args")
    args: dict[str, Any] = raw_args if isinstance(raw_args, dict) else {}
    time = ev.get("timestamp") if isinstance(ev.get("timestamp"), str) else None
    cwd = info.session_cwd
    agent = info.agent
    if action == "run":
        if args.get("is_input") in (True, "true"):
            return  # keystrokes to a running command
        yield Event(source=src, tool="execute_bash", kind="shell", agent=agent, time=time, cwd=cwd,
                    command=str(args.get("command", "")))
    elif action == "run_ipython":
        code = str(args.get("code", ""))
        yield Event(source=src, tool="execute_ipython_cell", kind="shell", agent=agent, time=time, cwd=cwd,
                    command="python - <<'OPENHANDS_CELL'\n" + code.replace("\nOPENHANDS_CELL", "\nOPENHANDS_CELL_") +
                    "\nOPENHANDS_CELL")
    elif action == "read":
        yield Event(source=src, tool="str_replace_editor", kind="read", agent=agent, time=time, cwd=cwd,
                    paths=[str(args.get("path", ""))])
    elif action in ("write", "edit"):
        content = args.get("content") if isinstance(args.get("content"), str) else None
        edits: list[tuple[str, str]] = []
        if content is None:
            old, new = args.get("old_str"), args.get("new_str") or args.get("file_text")
            if args.get("command") == "create" and isinstance(args.get("file_text"), str):
                content = args["file_text"]
            elif isinstance(new, str):
                edits = [(old if isinstance(old, str) else "", new)]
        yield Event(source=src, tool="str_replace_editor", kind="write", agent=agent, time=time, cwd=cwd,
                    paths=[str(args.get("path", ""))], content=content, edits=edits)
    elif action in ("browse", "browse_interactive"):
        text = str(args.get("url") or args.get("browser_actions") or "")
        yield Event(source=src, tool="browser", kind="fetch", agent=agent, time=time, cwd=cwd,
                    urls=URL_RE.findall(text) or ([text] if "://" in text else []))
    elif action == "mcp":
        yield Event(source=src, tool=f"mcp:{args.get('name', '')}", kind="mcp", agent=agent, time=time, cwd=cwd,
                    strings=string_values(args.get("arguments")))


def _sweagent(doc: dict, info: FileInfo) -> Iterator[Event]:
    cwd = info.session_cwd
    if isinstance(doc.get("trajectory"), list):  # SWE-agent
        info.client = "SWE-agent"
        for k, step in enumerate(doc["trajectory"]):
            if isinstance(step, dict) and isinstance(step.get("action"), str) and step["action"].strip():
                yield from _swe_action(step["action"], f"{info.path}:trajectory[{k}]", info.agent, cwd)
        return
    info.client = "mini-swe-agent"
    for k, msg in enumerate(doc.get("messages") or []):
        if not isinstance(msg, dict) or msg.get("role") != "assistant":
            continue
        content = msg.get("content")
        if isinstance(content, list):
            content = "\n".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
        for block in _FENCE.findall(str(content or ""))[:1]:  # mini-swe-agent runs the first bash block
            yield Event(source=f"{info.path}:messages[{k}]", tool="bash", kind="shell", agent=info.agent, cwd=cwd,
                        command=block.strip())


def _swe_action(action: str, src: str, agent: str | None, cwd: str | None) -> Iterator[Event]:
    """SWE-agent's own commands read and write files; everything else is a shell command line."""
    first, _, rest = action.strip().partition(" ")
    target = rest.split()[0] if rest.split() else ""
    if first in ("open", "goto") and target:
        yield Event(source=src, tool=first, kind="read", agent=agent, cwd=cwd, paths=[target.strip("\"'")])
    elif first == "create" and target:
        yield Event(source=src, tool=first, kind="write", agent=agent, cwd=cwd, paths=[target.strip("\"'")],
                    content="")
    elif first in ("find_file", "search_dir", "search_file"):
        words = rest.split()
        yield Event(source=src, tool=first, kind="search", agent=agent, cwd=cwd,
                    paths=[words[1].strip("\"'")] if len(words) > 1 else ["."], query=words[0] if words else None)
    elif first == "edit":
        return  # edits the open file: its path is the earlier open
    elif first == "str_replace_editor":
        words = rest.split()
        if len(words) >= 2:
            kind: EventKind = "read" if words[0] == "view" else "write"
            yield Event(source=src, tool=first, kind=kind, agent=agent, cwd=cwd, paths=[words[1]])
    else:
        yield Event(source=src, tool="bash", kind="shell", agent=agent, cwd=cwd, command=action)


def _aider(info: FileInfo, stats: ParseStats) -> Iterator[Event]:
    """Aider's markdown history: ``/run``, ``/test``, ``/web``, ``/add``/``/read-only`` commands typed on
    ``#### `` lines, and SEARCH/REPLACE edits (a file name line, then the block)."""
    info.client = "Aider"
    text = info.path.read_text(errors="replace")
    stats.bytes += len(text)
    lines = text.split("\n")
    stats.lines += len(lines)
    cwd = info.session_cwd
    agent = info.agent
    i = 0
    while i < len(lines):
        line = lines[i]
        src = f"{info.path}:{i + 1}"
        m = _AIDER_CMD.match(line)
        if m:
            cmd, arg = m.group(1), m.group(2).strip()
            if cmd in ("run", "test"):
                yield Event(source=src, tool=f"/{cmd}", kind="shell", agent=agent, cwd=cwd, command=arg)
            elif cmd == "web":
                yield Event(source=src, tool="/web", kind="fetch", agent=agent, cwd=cwd, urls=[arg])
            elif cmd in ("add", "read-only", "read"):
                for p in arg.split():
                    yield Event(source=src, tool=f"/{cmd}", kind="read", agent=agent, cwd=cwd, paths=[p])
            elif cmd == "git":
                yield Event(source=src, tool="/git", kind="shell", agent=agent, cwd=cwd, command="git " + arg)
        elif line.strip() == "<<<<<<< SEARCH" and i > 0:
            fname = next((lines[j].strip().strip("`") for j in range(i - 1, max(-1, i - 4), -1)
                          if _AIDER_FILE_LINE.match(lines[j].strip().strip("`"))), None)
            j = i + 1
            old: list[str] = []
            new: list[str] = []
            cur = old
            while j < len(lines) and lines[j].strip() != ">>>>>>> REPLACE":
                if lines[j].strip() == "=======":
                    cur = new
                else:
                    cur.append(lines[j])
                j += 1
            if fname:
                yield Event(source=src, tool="edit", kind="write", agent=agent, cwd=cwd, paths=[fname],
                            content="\n".join(new) + "\n" if not old else None,
                            edits=[("\n".join(old), "\n".join(new))] if old else ())
            i = j
        i += 1
