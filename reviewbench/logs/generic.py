"""Generic JSONL tool log: one call per line, ``{"tool", "args", "output", "time", "cwd"?, "agent"?}``.

Tool names are matched loosely to the usual kinds (bash/shell/exec -> shell, read/cat -> read, ...), so
logs from other harnesses (OpenHands, SWE-agent exports, Inspect events) can be converted in one line.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from reviewbench.logs.codex import patch_paths
from reviewbench.logs.events import Event, ParseStats, string_values, trim
from reviewbench.logs.reader import json_lines

SHELL_TOOLS = {"bash", "shell", "sh", "exec", "run", "execute_bash", "terminal", "command", "exec_command",
               "shell_command", "run_shell", "cmd"}
READ_TOOLS = {"read", "read_file", "cat", "view", "open_file", "str_replace_editor_view"}
WRITE_TOOLS = {"write", "write_file", "edit", "create_file", "str_replace_editor", "edit_file"}
LIST_TOOLS = {"ls", "list", "list_dir", "glob", "list_files", "find"}
FETCH_TOOLS = {"fetch", "webfetch", "web_fetch", "browse", "http_get", "curl", "web_read"}
SEARCH_TOOLS = {"websearch", "web_search", "search"}


def generic_event(tool: str, args: object, source: str, time: str | None, cwd: str | None,
                  agent: str | None) -> Event:
    low = tool.lower().replace("-", "_")
    a = args if isinstance(args, dict) else {"input": args}
    text = args if isinstance(args, str) else None
    ev = Event(source=source, tool=tool, kind="other", agent=agent, time=time, cwd=a.get("cwd") or a.get("workdir") or cwd)
    first_path = a.get("path") or a.get("file_path") or a.get("file") or a.get("filename")
    if low in SHELL_TOOLS:
        cmd = a.get("command") or a.get("cmd") or text or ""
        ev.kind, ev.command = "shell", " ".join(map(str, cmd)) if isinstance(cmd, list) else str(cmd)
    elif low in READ_TOOLS:
        ev.kind, ev.paths = "read", [str(first_path or text or "")]
    elif low in WRITE_TOOLS:
        ev.kind, ev.paths, ev.content = "write", [str(first_path or "")], a.get("content") or a.get("new_str")
    elif low in LIST_TOOLS:
        ev.kind, ev.paths = "list", [str(first_path or a.get("pattern") or text or cwd or "")]
    elif low in FETCH_TOOLS:
        ev.kind, ev.urls = "fetch", [str(a.get("url") or text or "")]
    elif low in SEARCH_TOOLS:
        ev.kind, ev.query = "web_search", str(a.get("query") or text or "")
    elif low == "apply_patch":
        patch = str(a.get("input") or text or "")
        ev.kind, ev.paths, ev.content = "patch", patch_paths(patch), patch
    else:
        ev.strings = string_values(args)
    return ev


def parse_generic(path: Path, stats: ParseStats, agent: str | None) -> Iterator[Event]:
    for lineno, rec in json_lines(path, stats):
        tool = rec.get("tool") or rec.get("name") or rec.get("function")
        if not tool:
            stats.warn(f"{path}:{lineno}", "no 'tool' field")
            continue
        ev = generic_event(str(tool), rec.get("args", rec.get("arguments", rec.get("input"))), f"{path}:{lineno}",
                           rec.get("time") or rec.get("timestamp"), rec.get("cwd"), rec.get("agent") or agent)
        out = rec.get("output")
        ev.output = trim(out if isinstance(out, str) else None if out is None else str(out))
        yield ev
