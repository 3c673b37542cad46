"""OpenAI Codex CLI logs: rollouts in the envelope format (``session_meta``/``response_item``/``event_msg``/
``turn_context``), the older bare format (a header line, then bare items and ``record_type`` lines), the
TypeScript CLI's single JSON document (``{"session", "items"}``), and ``codex exec --json`` event streams.

Actions are counted from ``response_item`` only (``event_msg`` repeats them). Every shell shape is
normalised to one script string: ``shell``/``container.exec`` argv, ``shell_command``, ``exec_command``,
``local_shell_call`` and code-mode ``exec`` cells, whose JavaScript is evaluated as a small program
(``static/codemode.py``: literals and variables flowing into ``tools.exec_command``/``tools.apply_patch``; a
command known only at run time is an ``unresolved`` blind spot).
``apply_patch`` becomes one write per file, with the text it adds (scripts written this way are analysed
when they are run).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import orjson

from reviewbench.logs.events import Event, EventKind, FileInfo, ParseStats, string_values, trim
from reviewbench.logs.reader import json_records
from reviewbench.logs.static import shell_join
from reviewbench.logs.static.codemode import analyse_cell, unresolved
from reviewbench.logs.static.common import _NET_API

ENVELOPE_TYPES = {"session_meta", "response_item", "event_msg", "turn_context", "compacted", "world_state",
                  "inter_agent_communication", "inter_agent_communication_metadata"}
CALL_TYPES = {"function_call", "custom_tool_call", "local_shell_call", "web_search_call"}
OUTPUT_TYPES = {"function_call_output", "custom_tool_call_output", "local_shell_call_output"}
# items that are not actions: counted by type; any other type is counted as unknown
QUIET_ITEM_TYPES = OUTPUT_TYPES | {"reasoning", "message", "ghost_snapshot", "compaction", "compaction_summary",
                                   "context_compaction", "image_generation_call", "tool_search_call",
                                   "tool_search_output", "additional_tools", "agent_message"}
BARE_ITEM_TYPES = CALL_TYPES | QUIET_ITEM_TYPES
EXEC_JSON_TYPES = {"thread.started", "turn.started", "turn.completed", "turn.failed", "item.started",
                   "item.updated", "item.completed", "error"}
_SHELLS = ("bash", "sh", "zsh", "dash")


def _argv_script(cmd: Any) -> str:
    """``["bash", "-lc", script]`` audits the script, not argv[0]."""
    if isinstance(cmd, str):
        return cmd
    if isinstance(cmd, list):
        argv = [str(c) for c in cmd]
        if len(argv) >= 3 and argv[0].split("/")[-1] in _SHELLS and argv[1] in ("-lc", "-c", "-ic"):
            return argv[2]
        return shell_join(argv)
    return ""


def patch_files(patch: str) -> list[tuple[str, str | None, list[tuple[str, str]]]]:
    """(path, new content of an added file, (old, new) hunks of an updated one) per file of an apply_patch."""
    out: list[tuple[str, str | None, list[tuple[str, str]]]] = []
    cur: tuple[str, str] | None = None  # (kind, path)
    added: list[str] = []
    old: list[str] = []
    new: list[str] = []
    hunks: list[tuple[str, str]] = []

    def flush() -> None:
        nonlocal added, old, new, hunks
        if cur is None:
            return
        if old or new:
            hunks.append(("\n".join(old), "\n".join(new)))
        kind, p = cur
        out.append((p, "\n".join(added) + "\n" if kind == "Add" else None, hunks))
        added, old, new, hunks = [], [], [], []

    for line in patch.split("\n"):
        m = re.match(r"^\*\*\* (Add|Update|Delete) File: (.+)$", line)
        if m:
            flush()
            cur = (m.group(1), m.group(2).strip())
            continue
        if line.startswith("*** Move to: "):
            out.append((line[len("*** Move to: "):].strip(), None, []))
            continue
        if cur is None or line.startswith("*** "):
            continue
        if cur[0] == "Add":
            added.append(line[1:] if line.startswith("+") else line)
        elif line.startswith("@@"):
            if old or new:
                hunks.append(("\n".join(old), "\n".join(new)))
            old, new = [], []
        elif line.startswith("-"):
            old.append(line[1:])
        elif line.startswith("+"):
            new.append(line[1:])
        elif line.startswith(" "):
            old.append(line[1:])
            new.append(line[1:])
    flush()
    return out


def patch_events(text: str, tool: str, src: str, agent: str | None, time: str | None, cwd: str | None) -> list[Event]:
    files = patch_files(text)
    if not files:
        return [Event(source=src, tool=tool, kind="patch", agent=agent, time=time, cwd=cwd, strings=[text[:2000]])]
    return [Event(source=src, tool=tool, kind="patch", agent=agent, time=time, cwd=cwd, paths=[p], content=content,
                  edits=hunks) for p, content, hunks in files]


def code_mode_events(js: str, src: str, agent: str | None, time: str | None, cwd: str | None) -> list[Event]:
    """A code-mode cell: one event per tool call it makes (commands resolved from the literals and variables
    that flow into them), plus what its own JavaScript does outside tool calls. A command that cannot be known
    before the cell runs is an event with ``unresolved`` set (a blind spot, not a guess)."""
    cell = analyse_cell(js)
    out: list[Event] = []
    for call in cell.calls:
        args = call.args
        why = unresolved(args)
        tool = f"exec:{call.tool}"
        if call.tool in ("exec_command", "write_stdin"):
            key = "cmd" if call.tool == "exec_command" else "chars"
            a = args if isinstance(args, dict) else {key: args}
            cmd = a.get(key, a.get("command"))
            workdir = a.get("workdir")
            why = unresolved(cmd) or (unresolved(workdir) if workdir is not None else None)
            if why or not isinstance(cmd, (str, list)):
                out.append(Event(source=src, tool=tool, kind="other", agent=agent, time=time, cwd=cwd,
                                 unresolved=f"tools.{call.tool}: {why or 'no command'}"))
                continue
            out.append(Event(source=src, tool=tool, kind="shell", agent=agent, time=time,
                             cwd=workdir if isinstance(workdir, str) and workdir else cwd, command=_argv_script(cmd)))
        elif call.tool == "apply_patch":
            text = args.get("input", args.get("patch")) if isinstance(args, dict) else args
            if not isinstance(text, str):
                out.append(Event(source=src, tool=tool, kind="other", agent=agent, time=time, cwd=cwd,
                                 unresolved=f"tools.apply_patch: {unresolved(text) or 'no patch text'}"))
                continue
            out += patch_events(text, tool, src, agent, time, cwd)  # written files: a later run is analysed
        else:
            known = {"args": args} if not why else {}
            url = args.get("url") if isinstance(args, dict) else None
            out.append(Event(source=src, tool=tool, kind="fetch" if isinstance(url, str) else (
                "mcp" if "__" in call.tool else "other"), agent=agent, time=time, cwd=cwd,
                urls=[url] if isinstance(url, str) else [], strings=string_values(known),
                unresolved=f"tools.{call.tool}: {why}" if why and "__" in call.tool else None))
    rest = cell.rest
    if _NET_API.search(rest):  # the cell's own code contacts something (fetch, a socket)
        out.append(Event(source=src, tool="exec", kind="shell", agent=agent, time=time, cwd=cwd,
                         command=shell_join(["node", "-e", rest])))
    if not out and cell.calls == [] and "tools." in js:
        out.append(Event(source=src, tool="exec", kind="other", agent=agent, time=time, cwd=cwd,
                         unresolved="tools.* called in a way the audit does not follow"))
    return out


def _decode_args(raw: Any) -> dict:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            val = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return {"input": raw}
        return val if isinstance(val, dict) else {"input": val}
    return {}


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) and v else None


def _web_search(item: dict, src: str, agent: str | None, time: str | None, cwd: str | None) -> Event:
    """A native web search: ``search`` (``query`` and, in current rollouts, ``queries``), ``open_page`` and
    ``find_in_page`` (which fetch a URL through the provider)."""
    action = item.get("action")
    action = action if isinstance(action, dict) else {}
    ev = Event(source=src, tool="web_search_call", kind="web_search", agent=agent, time=time, cwd=cwd)
    atype = action.get("type")
    if atype in ("open_page", "find_in_page") or (atype != "search" and action.get("url")):
        ev.kind, ev.urls, ev.query = "fetch", [str(action.get("url", ""))], _str(action.get("pattern"))
        return ev
    queries = [str(q) for q in action.get("queries") or [] if isinstance(q, (str, int, float))]
    q = action.get("query") or item.get("query")
    if isinstance(q, str) and q and q not in queries:
        queries.insert(0, q)
    ev.query = " | ".join(queries)
    return ev


def item_events(item: dict, src: str, cwd: str | None, time: str | None, agent: str | None) -> list[Event]:
    """Events of one call item (one code-mode cell or patch may hold several)."""
    itype = item.get("type")
    name = str(item.get("name", ""))
    if itype == "local_shell_call":
        raw_action = item.get("action")
        action: dict[str, Any] = raw_action if isinstance(raw_action, dict) else {}
        raw_env = action.get("env")
        env: dict[Any, Any] = raw_env if isinstance(raw_env, dict) else {}
        return [Event(source=src, tool="local_shell", kind="shell", agent=agent, time=time,
                      cwd=_str(action.get("working_directory")) or cwd, command=_argv_script(action.get("command")),
                      env={str(k): str(v) for k, v in env.items()})]
    if itype == "web_search_call":
        return [_web_search(item, src, agent, time, cwd)]
    if itype == "custom_tool_call":
        text = str(item.get("input", ""))
        if name == "apply_patch":
            return patch_events(text, name, src, agent, time, cwd)
        if name == "exec":
            return code_mode_events(text, src, agent, time, cwd)
        return [Event(source=src, tool=name, kind="other", agent=agent, time=time, cwd=cwd, strings=[text])]
    args = _decode_args(item.get("arguments"))
    workdir = _str(args.get("workdir")) or cwd
    if name in ("shell", "container.exec"):
        return [Event(source=src, tool=name, kind="shell", agent=agent, time=time, cwd=workdir,
                      command=_argv_script(args.get("command")))]
    if name == "shell_command":
        return [Event(source=src, tool=name, kind="shell", agent=agent, time=time, cwd=workdir,
                      command=str(args.get("command", "")))]
    if name == "exec_command":
        return [Event(source=src, tool=name, kind="shell", agent=agent, time=time, cwd=workdir,
                      command=str(args.get("cmd", "")))]
    if name == "write_stdin":
        return [Event(source=src, tool=name, kind="shell", agent=agent, time=time, cwd=cwd,
                      command=str(args.get("chars", "")))]
    if name == "apply_patch":
        return patch_events(str(args.get("input", "")), name, src, agent, time, cwd)
    if name in ("read_file", "view_image", "list_dir", "grep_files"):
        p = args.get("file_path") or args.get("path") or args.get("dir_path") or ""
        kinds: dict[str, EventKind] = {"read_file": "read", "view_image": "read", "list_dir": "list",
                                       "grep_files": "search"}
        kind = kinds[name]
        return [Event(source=src, tool=name, kind=kind, agent=agent, time=time, cwd=cwd, paths=[str(p)],
                      query=_str(args.get("pattern")))]
    if name in ("update_plan", "wait", "wait_agent", "close_agent", "request_user_input", "get_memory",
                "spawn_agent", "send_input", "send_message", "followup_task", "resume_agent"):
        return [Event(source=src, tool=name, kind="other", agent=agent, time=time, cwd=cwd)]
    url = args.get("url")
    return [Event(source=src, tool=name, kind="fetch" if url else ("mcp" if "__" in name else "other"), agent=agent,
                  time=time, cwd=cwd, urls=[str(url)] if url else [], strings=string_values(args))]


def _exec_json_events(rec: dict, src: str, agent: str | None, cwd: str | None) -> list[Event]:
    """``codex exec --json``: an item of a thread event (command_execution, file_change, mcp_tool_call,
    web_search)."""
    item = rec.get("item")
    if not isinstance(item, dict):
        return []
    itype = item.get("type")
    if itype == "command_execution":
        return [Event(source=src, tool="command_execution", kind="shell", agent=agent, cwd=cwd,
                      command=_argv_script(item.get("command")), output=trim(_str(item.get("aggregated_output"))))]
    if itype == "file_change":
        raw_changes = item.get("changes")
        changes: list[Any] = raw_changes if isinstance(raw_changes, list) else []
        return [Event(source=src, tool="file_change", kind="patch", agent=agent, cwd=cwd,
                      paths=[str(c.get("path", ""))]) for c in changes if isinstance(c, dict)]
    if itype == "mcp_tool_call":
        args = _decode_args(item.get("arguments"))
        url = args.get("url")
        return [Event(source=src, tool=f"{item.get('server')}__{item.get('tool')}", kind="fetch" if url else "mcp",
                      agent=agent, cwd=cwd, urls=[str(url)] if url else [], strings=string_values(args))]
    if itype == "web_search":
        ev = _web_search({"action": item.get("action"), "query": item.get("query")}, src, agent, None, cwd)
        ev.tool = "web_search"
        return [ev]
    return []


def parse_codex(info: FileInfo, stats: ParseStats, seen: dict[int, tuple[int, str]]) -> Iterator[Event]:
    path = info.path
    cwd: str | None = None
    for lineno, rec in json_records(path, stats, "lines" if info.layout == "lines" else "json"):
        src = f"{path}:{lineno}"
        rtype = rec.get("type")
        time = rec.get("timestamp") if isinstance(rec.get("timestamp"), str) else None
        if "payload" in rec and rtype in ENVELOPE_TYPES:
            payload = rec.get("payload")
            payload = payload if isinstance(payload, dict) else {}
            if rtype in ("session_meta", "turn_context"):
                cwd = _str(payload.get("cwd")) or cwd
                info.saw_cwd(cwd)
                if rtype == "session_meta":
                    info.session_id = info.session_id or _str(payload.get("id"))
                    if _str(payload.get("cli_version")):
                        info.client = f"Codex CLI {payload['cli_version']}"
                continue
            if rtype != "response_item":
                stats.skip(str(rtype))
                continue
            item = payload
        elif "payload" in rec:
            stats.skip(f"unknown:{rtype}")
            continue
        elif rtype in EXEC_JSON_TYPES:
            if rtype == "thread.started":
                info.session_id = info.session_id or _str(rec.get("thread_id"))
                info.client = info.client or "Codex CLI (exec --json)"
            if rtype != "item.completed" and rtype != "item.started":
                stats.skip(str(rtype))
                continue
            item_id = (rec.get("item") or {}).get("id") if isinstance(rec.get("item"), dict) else None
            h = hash((str(path), "item", item_id))
            if item_id is not None and h in seen:
                continue  # started, then completed: one action
            seen[h] = (0, src)
            for ev in _exec_json_events(rec, src, info.agent, cwd):
                yield ev
            continue
        else:  # legacy bare format, or the TypeScript CLI's items
            if "record_type" in rec:
                stats.skip(f"record_type:{rec['record_type']}")
                continue
            session = rec.get("session")
            if isinstance(session, dict):  # the TypeScript CLI's header
                info.session_id = info.session_id or _str(session.get("id"))
                info.client = info.client or "Codex CLI (TypeScript)"
                continue
            if "instructions" in rec and "type" not in rec:
                info.session_id = info.session_id or _str(rec.get("id"))
                info.client = info.client or "Codex CLI (bare rollout format, before Oct 2025: no version recorded)"
                continue  # header line
            item = rec
        itype = item.get("type")
        if itype in CALL_TYPES:
            call_id = str(item.get("call_id") or item.get("id") or f"{path}:{lineno}")
            h = hash(call_id)
            ck = hash((item.get("name"), str(item.get("arguments")), str(item.get("input")), str(item.get("action"))))
            first = seen.get(h)
            if first is not None:
                if first[0] == ck:  # forked/resumed sessions copy history
                    stats.duplicates += 1
                    continue
                info.edited.append(f"{src}: call {call_id} differs from its copy at {first[1]}")
            else:
                seen[h] = (ck, src)
            if item.get("name") == "spawn_agent":
                info.spawned_agents += 1
            yield from item_events(item, src, cwd, time, info.agent)
        elif itype in QUIET_ITEM_TYPES:
            stats.skip(f"item:{itype}")
        else:
            stats.skip(f"unknown:item:{itype}")
