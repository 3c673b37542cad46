"""Claude Code session transcripts (``~/.claude/projects/<cwd>/<session>.jsonl``, sub-agents in
``<session>/subagents/agent-<id>.jsonl`` or inline as sidechains), also pretty-printed or as a JSON array,
and ``claude -p --output-format stream-json`` captures.

Only assistant lines with a ``tool_use`` (and user lines with a typed ``<bash-input>``) are parsed; the rest,
most of a transcript's bytes, are only checked for shape: each call is audited when it is made, whether or
not its result was written. Lines are deduplicated by ``uuid`` and calls by id (resumed sessions copy
earlier lines) when their content is the same; the same id with other content is kept and reported (a log
edited after the fact). ``Task``/``Agent`` calls are recorded with the sub-agent id their result names, so the audit
can say when a sub-agent's own transcript is missing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import orjson

from reviewbench.logs.events import Event, FileInfo, ParseStats, SubagentCall, string_values
from reviewbench.logs.reader import check_unparsed, parse_line, raw_records

_RESULT_KEY = b'"tool_use_id":"'
KNOWN_TYPES = {"user", "assistant", "system", "summary", "attachment", "progress", "file-history-snapshot",
               "queue-operation", "last-prompt", "custom-title", "ai-title", "agent-name", "pr-link",
               "permission-mode", "agent-setting", "bridge-session", "worktree-state", "mode", "result",
               "stream_event"}
SUBAGENT_TOOLS = {"Task", "Agent"}
# tools with no effect outside the conversation: their arguments are prose, not paths or URLs to contact
INERT_TOOLS = {"TodoWrite", "TodoRead", "ExitPlanMode", "EnterPlanMode", "AskUserQuestion", "BashOutput", "KillBash",
               "KillShell", "TaskOutput", "TaskStop", "TaskCreate", "TaskUpdate", "TaskList", "TaskGet",
               "SlashCommand", "Skill", "SendMessage", "ToolSearch", "ListMcpResourcesTool", "StructuredOutput"}
_BASH_INPUT = re.compile(r"<bash-input>(.*?)</bash-input>", re.S)
_CWD = re.compile(rb'"cwd"\s*:\s*"((?:[^"\\]|\\.)*)"')
_VERSION = re.compile(rb'"version"\s*:\s*"([0-9][\w.+-]*)"')
_STREAM_VERSION = re.compile(rb'"claude_code_version"\s*:\s*"([0-9][\w.+-]*)"')  # stream-json's init record
_AGENT_ID = re.compile(rb'"agentId"\s*:\s*"([^"\\]+)"')
_SIDECHAIN = re.compile(rb'"isSidechain"\s*:\s*true')
_ROOT = re.compile(rb'"parentUuid"\s*:\s*null')


def tool_event(name: str, inp: dict, source: str, cwd: str | None, time: str | None, agent: str | None) -> Event:
    """Map one Claude Code tool call to an Event."""
    inp = inp if isinstance(inp, dict) else {"input": inp}
    ev = Event(source, name, "other", agent, time)  # (positional: keywords cost twice as much, per call)
    ev.cwd = cwd
    if name == "Bash":
        ev.kind, ev.command = "shell", str(inp.get("command", ""))
    elif name in ("Read", "NotebookRead"):
        ev.kind, ev.paths = "read", [str(inp.get("file_path") or inp.get("notebook_path") or "")]
    elif name in ("Write", "Edit", "MultiEdit", "NotebookEdit"):
        ev.kind = "write"
        ev.paths = [str(inp.get("file_path") or inp.get("notebook_path") or "")]
        if name == "Write" and isinstance(inp.get("content"), str):
            ev.content = inp["content"]
        elif name == "Edit":
            ev.edits = [(str(inp.get("old_string") or ""), str(inp.get("new_string") or ""))]
        elif name == "MultiEdit" and isinstance(inp.get("edits"), list):
            ev.edits = [(str(e.get("old_string") or ""), str(e.get("new_string") or ""))
                        for e in inp["edits"] if isinstance(e, dict)]
        elif name == "NotebookEdit":
            ev.edits = [("", str(inp.get("new_source") or ""))]
    elif name in ("Glob", "LS"):
        # a pattern without ``path`` is relative to the session's working directory (the event's ``cwd``); with
        # no directory known it stays relative (unjudged), never rooted at "/"
        base = str(inp.get("path") or "")
        pattern = str(inp.get("pattern") or "")
        ev.kind = "list"
        if pattern and not pattern.startswith("/"):
            ev.paths = [f"{base.rstrip('/')}/{pattern}" if base else pattern]
        else:
            ev.paths = [pattern or base or "."]
    elif name == "Grep":
        ev.kind = "search"
        ev.paths = [str(inp.get("path") or cwd or ".")]
        ev.query = str(inp.get("pattern", ""))
    elif name in ("WebFetch", "web_fetch"):
        ev.kind, ev.urls, ev.query = "fetch", [str(inp.get("url", ""))], inp.get("prompt")
    elif name in ("WebSearch", "web_search"):
        ev.kind, ev.query = "web_search", str(inp.get("query", ""))
        allowed = [str(d) for d in inp.get("allowed_domains") or []]
        ev.strings = allowed
        if allowed:
            ev.query += " " + " ".join(f"domain:{d}" for d in allowed)
    elif name in SUBAGENT_TOOLS or name in INERT_TOOLS:
        pass  # a sub-agent's actions are in its own transcript; the rest act on the conversation only
    elif name.startswith("mcp__"):
        ev.kind = "mcp"
        ev.strings = string_values(inp)
    else:
        ev.strings = string_values(inp)
    return ev


def _result_ids(line: bytes) -> Iterator[str]:
    """The tool_use_id of each result in a raw user line; bytes.find, not a parse."""
    pos = line.find(_RESULT_KEY)
    while pos >= 0:
        start = pos + len(_RESULT_KEY)
        end = line.find(b'"', start)
        if end < 0:
            return
        yield line[start:end].decode("utf-8", "replace")
        pos = line.find(_RESULT_KEY, end)


def _settle_subagent(call: SubagentCall, rec: dict, tool_use_id: str) -> None:
    """A Task/Agent result: the sub-agent's id (2.x), or an error (no sub-agent ran)."""
    tur = rec.get("toolUseResult")
    if isinstance(tur, dict) and isinstance(tur.get("agentId"), str):
        call.agent_id = tur["agentId"]
    content = (rec.get("message") or {}).get("content")
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("tool_use_id") == tool_use_id and block.get("is_error"):
                call.failed = True
    if isinstance(tur, str) and tur.startswith("Error"):
        call.failed = True


def _whole(line: bytes) -> bool:
    """A compact record that starts and ends as an object and is plain ASCII (the common case; anything else
    gets the full check)."""
    return line[:1] == b"{" and line[-1:] == b"}" and line.isascii()


def _call_key(name: str, inp: object) -> int:
    """A tool call's content, for telling a copy from an edit: its input's items as a set when they are all
    hashable (the usual flat input: no serialising of a script written whole), each with its value's type (1, 1.0
    and True are equal in Python, not in the log; paired in C, no generator), else its sorted JSON."""
    if isinstance(inp, dict):
        try:
            return hash((name, frozenset(zip(inp.items(), map(type, inp.values())))))
        except TypeError:  # a list or an object among the values
            pass
    return hash((name, orjson.dumps(inp, option=orjson.OPT_SORT_KEYS)))


def parse_claude(info: FileInfo, stats: ParseStats, seen: dict[int, tuple[int, str]]) -> Iterator[Event]:
    """Events of one transcript. ``seen`` (id -> content hash, first source) spans the audit: a copy of a
    record is skipped, a record whose id was seen with other content is audited and reported as edited."""
    path = info.path
    spath = str(path)
    tasks: dict[str, SubagentCall] = {}  # Task/Agent calls waiting for their result
    need_cwd = info.session_cwd is None
    need_version = True
    sidechain_ids = info.subagent_ids
    id_seen = False  # this file named its sub-agent id: later lines are searched near their start only
    header = 200  # the session's header facts (cwd, version) are in its first records
    loads, JSONDecodeError = orjson.loads, orjson.JSONDecodeError
    agent = info.agent
    for lineno, line in raw_records(path, stats, "lines" if info.layout == "lines" else "json"):
        if header:
            header -= 1
            if need_cwd and (m := _CWD.search(line)):
                info.saw_cwd(m.group(1).decode("utf-8", "replace"))
                need_cwd = False
                agent = info.agent
            if need_version and (m := _VERSION.search(line)):
                info.client, need_version = f"Claude Code {m.group(1).decode()}", False
            elif need_version and (m := _STREAM_VERSION.search(line)):
                info.client, need_version = f"Claude Code {m.group(1).decode()} (stream-json)", False
                info.capture = True
            if not (need_cwd or need_version):
                header = 0
        j = line.find(b'"isSidechain":', 0, 2048)
        if (j >= 0 and line[j + 14] == 0x74) or (
                j < 0 and line.find(b'"isSidechain"', 0, 2048) >= 0 and _SIDECHAIN.search(line, 0, 2048)):
            m = _AGENT_ID.search(line, 0, 2048) or (None if id_seen else _AGENT_ID.search(line))
            if m:
                sidechain_ids.add(m.group(1).decode("utf-8", "replace"))
                id_seen = True
            elif _ROOT.search(line, 0, 2048):
                info.inline_sidechains += 1
        i = line.find(b'"role":"')
        role = line[i + 8] if i >= 0 else 0
        if role == 0x61:  # "a"ssistant
            wanted = line.find(b'"tool_use"', i) >= 0 or b"srvtoolu_" in line
        elif role == 0x75:  # "u"ser
            if line.find(b'"tool_use_id"', i) >= 0:  # results; a typed <bash-input> is never in a result line
                if not _whole(line) and not check_unparsed(line, stats, path, lineno):
                    continue
                if tasks:
                    for tool_use_id in _result_ids(line):
                        call = tasks.pop(tool_use_id, None)
                        if call is not None:
                            try:
                                rec = orjson.loads(line)
                            except orjson.JSONDecodeError:
                                continue
                            if isinstance(rec, dict):
                                _settle_subagent(call, rec, tool_use_id)
                continue
            wanted = b"<bash-input>" in line
        else:  # not a compact message line: decide on content (pretty-printed JSON, other writers)
            wanted = b"tool_use" in line or b"<bash-input>" in line
        if not wanted:
            if not _whole(line):
                check_unparsed(line, stats, path, lineno)
            continue
        try:
            rec = loads(line)
        except JSONDecodeError:
            rec = None
        if rec.__class__ is not dict:
            rec = parse_line(line, stats, path, lineno)  # the warning, and a lenient retry for bad UTF-8
            if rec is None:
                continue
        rtype = rec.get("type")
        if rtype != "assistant" and rtype != "user":
            stats.skip(str(rtype) if rtype in KNOWN_TYPES else f"unknown:{rtype}")
            continue
        uuid, time, cwd = rec.get("uuid"), rec.get("timestamp"), rec.get("cwd")
        msg = rec.get("message")
        content = msg.get("content") if isinstance(msg, dict) else None
        src = f"{spath}:{lineno}"
        if uuid and isinstance(content, str):
            # a typed command's record, by id and text; the tool calls of a list are told apart one by one below
            # (by id and input: a copy is skipped, an edited copy reported), which is all a list's copy needs
            h = hash(uuid)
            ck = hash(content)
            first = seen.get(h)
            if first is not None and first[0] == ck:
                stats.duplicates += 1
                continue
            if first is None:
                seen[h] = (ck, src)
            else:
                info.edited.append(f"{src}: record {uuid} differs from its copy at {first[1]}")
        if cwd is None or not isinstance(cwd, str):
            cwd = info.session_cwd  # stream-json: only the init record names the working directory
        if need_cwd and cwd:
            info.saw_cwd(cwd)
            need_cwd = False
            agent = info.agent
        if time is not None and not isinstance(time, str):
            time = None
        if isinstance(content, str):
            if rtype == "user":
                for m2 in _BASH_INPUT.finditer(content):  # a shell command typed by the user, not the agent
                    yield Event(source=src, tool="user-shell", kind="shell", agent=agent, time=time, cwd=cwd,
                                actor="user", command=m2.group(1))
            continue
        if not isinstance(content, list):
            continue
        for block in content:
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if (btype == "tool_use" or btype == "server_tool_use") and rtype == "assistant":
                tool_id = block.get("id")
                h = hash(tool_id)
                name = block.get("name")
                if name.__class__ is not str:
                    name = str(name or "")
                inp = block.get("input")
                ck = _call_key(name, inp)
                first = seen.get(h)
                if first is not None:
                    if first[0] == ck:  # a resumed session's copy, or the stream-json capture of the same run
                        stats.duplicates += 1
                        continue
                    info.edited.append(f"{src}: tool call {tool_id} differs from its copy at {first[1]}")
                else:
                    seen[h] = (ck, src)
                ev = tool_event(name, inp if inp.__class__ is dict else {"input": inp}, src, cwd, time, agent)
                if btype == "server_tool_use":
                    ev.tool = f"server:{ev.tool}"
                if name in SUBAGENT_TOOLS:
                    call = SubagentCall(source=src)
                    info.subagent_calls.append(call)
                    tasks[str(tool_id)] = call
                yield ev
            elif btype == "tool_result" and tasks:
                call = tasks.pop(str(block.get("tool_use_id")), None)
                if call is not None:
                    _settle_subagent(call, rec, str(block.get("tool_use_id")))
