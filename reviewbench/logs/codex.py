"""OpenAI Codex CLI rollouts: the envelope format (``session_meta``/``response_item``/``event_msg``/
``turn_context``) and the older bare format (a header line, then bare items and ``record_type`` lines).

Actions are counted from ``response_item`` only (``event_msg`` repeats them). Every shell shape is
normalised to one script string: ``shell``/``container.exec`` argv, ``shell_command``, ``exec_command``,
``local_shell_call`` and code-mode ``exec`` whose input is JavaScript calling ``tools.exec_command``.
"""

from __future__ import annotations

import json
import re
import shlex
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from reviewbench.logs.events import Event, ParseStats, string_values, trim
from reviewbench.logs.reader import json_lines

ENVELOPE_TYPES = {"session_meta", "response_item", "event_msg", "turn_context", "compacted", "world_state",
                  "inter_agent_communication", "inter_agent_communication_metadata"}
CALL_TYPES = {"function_call", "custom_tool_call", "local_shell_call", "web_search_call"}
OUTPUT_TYPES = {"function_call_output", "custom_tool_call_output"}
_JS_EXEC = re.compile(r"tools\.exec_command\s*\(")
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$|^\*\*\* Move to: (.+)$", re.M)
MAX_PENDING = 5000


def _argv_script(cmd: Any) -> str:
    """``["bash", "-lc", script]`` audits the script, not argv[0]."""
    if isinstance(cmd, str):
        return cmd
    if isinstance(cmd, list):
        argv = [str(c) for c in cmd]
        if len(argv) >= 3 and argv[0].split("/")[-1] in ("bash", "sh", "zsh") and argv[1] in ("-lc", "-c", "-ic"):
            return argv[2]
        return shlex.join(argv)
    return ""


def _js_exec_calls(js: str) -> list[dict]:
    """The object literals passed to ``tools.exec_command({...})`` in a code-mode cell."""
    out = []
    for m in _JS_EXEC.finditer(js):
        start = js.find("{", m.end())
        if start < 0:
            continue
        depth, i, in_str, esc = 0, start, None, False
        while i < len(js):
            ch = js[i]
            if in_str:
                if esc:
                    esc = False
                elif ch == "\\":
                    esc = True
                elif ch == in_str:
                    in_str = None
            elif ch in "\"'`":
                in_str = ch
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        literal = js[start : i + 1]
        try:
            out.append(json.loads(literal))
        except json.JSONDecodeError:
            m2 = re.search(r"""["']?cmd["']?\s*:\s*(["'`])(.*?)(?<!\\)\1""", literal, re.S)
            if m2:
                out.append({"cmd": m2.group(2)})
    return out


def patch_paths(patch: str) -> list[str]:
    return [(a or b).strip() for a, b in _PATCH_FILE.findall(patch)]


def _decode_args(raw: Any) -> dict:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            val = json.loads(raw)
        except json.JSONDecodeError:
            return {"input": raw}
        return val if isinstance(val, dict) else {"input": val}
    return {}


def item_events(item: dict, src: str, cwd: str | None, time: str | None, agent: str | None) -> list[Event]:
    """Events of one call item (one code-mode cell may run several commands)."""
    itype = item.get("type")
    name = str(item.get("name", ""))
    base = dict(source=src, agent=agent, time=time, cwd=cwd)
    if itype == "local_shell_call":
        action = item.get("action") or {}
        return [Event(tool="local_shell", kind="shell", command=_argv_script(action.get("command")),
                      env={str(k): str(v) for k, v in (action.get("env") or {}).items()},
                      **{**base, "cwd": action.get("working_directory") or cwd})]
    if itype == "web_search_call":
        action = item.get("action") or {}
        ev = Event(tool="web_search_call", kind="web_search", **base)
        if action.get("type") == "search":
            ev.query = str(action.get("query", ""))
        else:
            ev.kind, ev.urls, ev.query = "fetch", [str(action.get("url", ""))], action.get("pattern")
        return [ev]
    if itype == "custom_tool_call":
        text = str(item.get("input", ""))
        if name == "apply_patch":
            return [Event(tool=name, kind="patch", paths=patch_paths(text), content=text, **base)]
        if name == "exec":
            calls = _js_exec_calls(text)
            if not calls:
                return [Event(tool="exec", kind="other", strings=[text], **base)]
            return [Event(tool="exec", kind="shell", command=str(c.get("cmd", "")),
                          **{**base, "cwd": c.get("workdir") or cwd}) for c in calls]
        return [Event(tool=name, kind="other", strings=[text], **base)]
    args = _decode_args(item.get("arguments"))
    workdir = args.get("workdir") or cwd
    if name in ("shell", "container.exec"):
        return [Event(tool=name, kind="shell", command=_argv_script(args.get("command")), **{**base, "cwd": workdir})]
    if name == "shell_command":
        return [Event(tool=name, kind="shell", command=str(args.get("command", "")), **{**base, "cwd": workdir})]
    if name == "exec_command":
        return [Event(tool=name, kind="shell", command=str(args.get("cmd", "")), **{**base, "cwd": workdir})]
    if name == "write_stdin":
        return [Event(tool=name, kind="shell", command=str(args.get("chars", "")), **base)]
    if name == "apply_patch":
        text = str(args.get("input", ""))
        return [Event(tool=name, kind="patch", paths=patch_paths(text), content=text, **base)]
    if name in ("read_file", "view_image", "list_dir", "grep_files"):
        p = args.get("file_path") or args.get("path") or args.get("dir_path") or ""
        kind = {"read_file": "read", "view_image": "read", "list_dir": "list", "grep_files": "search"}[name]
        return [Event(tool=name, kind=kind, paths=[str(p)], query=args.get("pattern"), **base)]
    url = args.get("url")
    kind = "mcp" if "__" in name else "other"
    return [Event(tool=name, kind="fetch" if url else kind, urls=[str(url)] if url else [],
                  strings=string_values(args), **base)]


def parse_codex(path: Path, stats: ParseStats, agent: str | None, seen: set[int]) -> Iterator[Event]:
    pending: OrderedDict[str, list[Event]] = OrderedDict()
    cwd: str | None = None
    for lineno, rec in json_lines(path, stats):
        src = f"{path}:{lineno}"
        rtype = rec.get("type")
        if "payload" in rec and rtype in ENVELOPE_TYPES:
            payload, time = rec.get("payload") or {}, rec.get("timestamp")
            if rtype in ("session_meta", "turn_context"):
                cwd = payload.get("cwd") or cwd
                continue
            if rtype != "response_item":
                stats.skip(str(rtype))
                continue
            item = payload
        elif "payload" in rec:
            stats.skip(f"unknown:{rtype}")
            continue
        else:  # legacy bare format
            if "record_type" in rec:
                stats.skip(f"record_type:{rec['record_type']}")
                continue
            if "instructions" in rec and "type" not in rec:
                continue  # header line
            item, time = rec, rec.get("timestamp")
        itype = item.get("type")
        if itype in CALL_TYPES:
            call_id = str(item.get("call_id") or item.get("id") or f"{path}:{lineno}")
            h = hash(call_id)
            if h in seen:  # forked/resumed sessions copy history
                stats.duplicates += 1
                continue
            seen.add(h)
            events = item_events(item, src, cwd, time, agent)
            if itype == "web_search_call":
                yield from events
                continue
            pending[call_id] = events
            if len(pending) > MAX_PENDING:
                yield from pending.popitem(last=False)[1]
        elif itype in OUTPUT_TYPES:
            events = pending.pop(str(item.get("call_id")), None)
            if events:
                out = item.get("output")
                text = out if isinstance(out, str) else "\n".join(
                    str(o.get("text", "")) for o in out if isinstance(o, dict)) if isinstance(out, list) else ""
                for ev in events:
                    ev.output = trim(text)
                yield from events
        else:
            stats.skip(f"item:{itype}")
    for events in pending.values():
        yield from events
