"""Generic JSONL tool log: one call per line, ``{"tool", "args", "output", "time", "cwd"?, "agent"?}``.

Tool names are matched loosely to the usual kinds (bash/shell/exec -> shell, read/cat -> read, ...), so
logs from other harnesses (OpenHands, SWE-agent exports, Inspect events) can be converted in one line.
"""

from __future__ import annotations

from collections.abc import Iterator

from reviewbench.logs.codex import patch_files
from reviewbench.logs.events import Event, FileInfo, ParseStats, string_values, trim
from reviewbench.logs.reader import json_records

SHELL_TOOLS = {"bash", "shell", "sh", "exec", "run", "execute_bash", "terminal", "command", "exec_command",
               "shell_command", "run_shell", "cmd"}
READ_TOOLS = {"read", "read_file", "cat", "view", "open_file", "str_replace_editor_view"}
WRITE_TOOLS = {"write", "write_file", "edit", "create_file", "str_replace_editor", "edit_file"}
LIST_TOOLS = {"ls", "list", "list_dir", "glob", "list_files", "find"}
FETCH_TOOLS = {"fetch", "webfetch", "web_fetch", "browse", "http_get", "curl", "web_read"}
SEARCH_TOOLS = {"websearch", "web_search", "search"}


def _s(v: object) -> str | None:
    return v if isinstance(v, str) and v else None


def generic_event(tool: str, args: object, source: str, time: str | None, cwd: str | None,
                  agent: str | None) -> Event:
    low = tool.lower().replace("-", "_")
    a: dict = args if isinstance(args, dict) else {"input": args}
    text = args if isinstance(args, str) else None
    ev = Event(source=source, tool=tool, kind="other", agent=agent, time=time,
               cwd=_s(a.get("cwd")) or _s(a.get("workdir")) or cwd)
    first_path = a.get("path") or a.get("file_path") or a.get("file") or a.get("filename")
    if low in SHELL_TOOLS:
        cmd = a.get("command") or a.get("cmd") or text or ""
        ev.kind, ev.command = "shell", " ".join(map(str, cmd)) if isinstance(cmd, list) else str(cmd)
    elif low in READ_TOOLS:
        ev.kind, ev.paths = "read", [str(first_path or text or "")]
    elif low in WRITE_TOOLS:
        ev.kind, ev.paths = "write", [str(first_path or "")]
        new = a.get("content") if isinstance(a.get("content"), str) else None
        if new is not None:
            ev.content = new
        elif isinstance(a.get("new_str"), str):
            ev.edits = [(str(a.get("old_str") or ""), a["new_str"])]
    elif low in LIST_TOOLS:
        ev.kind, ev.paths = "list", [str(first_path or a.get("pattern") or text or cwd or "")]
    elif low in FETCH_TOOLS:
        ev.kind, ev.urls = "fetch", [str(a.get("url") or text or "")]
    elif low in SEARCH_TOOLS:
        ev.kind, ev.query = "web_search", str(a.get("query") or text or "")
    elif low == "apply_patch":
        files = patch_files(str(a.get("input") or text or ""))
        ev.kind, ev.paths = "patch", [p for p, _, _ in files]
        if len(files) == 1:
            ev.content, ev.edits = files[0][1], files[0][2]
    else:
        ev.strings = string_values(args)
    return ev


def parse_generic(info: FileInfo, stats: ParseStats) -> Iterator[Event]:
    path = info.path
    for lineno, rec in json_records(path, stats, "lines" if info.layout == "lines" else "json"):
        tool = rec.get("tool") or rec.get("name") or rec.get("function")
        if not tool:
            stats.warn(f"{path}:{lineno}", "no 'tool' field")
            continue
        cwd = _s(rec.get("cwd"))
        info.saw_cwd(cwd)
        ev = generic_event(str(tool), rec.get("args", rec.get("arguments", rec.get("input"))), f"{path}:{lineno}",
                           _s(rec.get("time")) or _s(rec.get("timestamp")), cwd, _s(rec.get("agent")) or info.agent)
        out = rec.get("output")
        ev.output = trim(out if isinstance(out, str) else None if out is None else str(out))
        yield ev
