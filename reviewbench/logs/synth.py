"""Writes logs in the real on-disk formats (Claude Code sessions, Codex rollouts, connection logs, Squid).

Used to build the example arena's logs, test fixtures and the throughput benchmark's multi-GB file. The
envelopes follow the real samples (../shared/samples/logs): one assistant line per content block with its
own uuid, tool results in user lines with ``toolUseResult``, Codex ``arguments`` as JSON strings.
"""

from __future__ import annotations

import json
from functools import partial
import uuid as uuidlib
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

_dumps = partial(json.dumps, separators=(",", ":"), ensure_ascii=False)  # compact, as Claude Code and Codex write
_NS = uuidlib.UUID("5b1e3c1a-9a57-4c38-9d7e-2f1c0de0a001")


def _uuid(*parts: object) -> str:
    return str(uuidlib.uuid5(_NS, "/".join(map(str, parts))))


def _ts(t: datetime) -> str:
    return t.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class Step:
    """One tool call: name, input, the text it returned, and optionally the assistant's words before it."""

    tool: str
    input: dict[str, Any]
    output: str = ""
    text: str | None = None
    is_error: bool = False


@dataclass
class ClaudeSession:
    session: str
    cwd: str
    start: datetime
    version: str = "2.1.144"
    model: str = "claude-opus-4-5"
    sidechain: bool = False
    agent_id: str | None = None
    _n: int = 0
    _last: str | None = None
    lines: list[str] = field(default_factory=list)

    def _env(self, kind: str, t: datetime, **extra: Any) -> dict[str, Any]:
        self._n += 1
        u = _uuid(self.session, self.agent_id, self._n)
        rec = {"parentUuid": self._last, "isSidechain": self.sidechain, "userType": "external", "cwd": self.cwd,
               "sessionId": self.session, "version": self.version, "gitBranch": "main", "type": kind,
               "uuid": u, "timestamp": _ts(t), **extra}
        if self.agent_id:
            rec["agentId"] = self.agent_id
        self._last = u
        return rec

    def prompt(self, text: str, t: datetime) -> None:
        self.lines.append(_dumps(self._env("user", t, message={"role": "user", "content": text})))

    def step(self, s: Step, t: datetime) -> None:
        msg_id = f"msg_{_uuid(self.session, self.agent_id, 'm', self._n)[:24].replace('-', '')}"
        req = f"req_{_uuid(self.session, self.agent_id, 'r', self._n)[:24].replace('-', '')}"
        usage = {"input_tokens": 4, "cache_read_input_tokens": 18000, "output_tokens": 120,
                 "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0}}
        base = {"id": msg_id, "type": "message", "role": "assistant", "model": self.model, "stop_sequence": None,
                "usage": usage}
        if s.text:
            self.lines.append(_dumps(self._env("assistant", t, requestId=req, message={
                **base, "content": [{"type": "text", "text": s.text}], "stop_reason": None})))
        tid = f"toolu_{_uuid(self.session, self.agent_id, 't', self._n)[:24].replace('-', '')}"
        self.lines.append(_dumps(self._env("assistant", t, requestId=req, message={
            **base, "content": [{"type": "tool_use", "id": tid, "name": s.tool, "input": s.input}],
            "stop_reason": "tool_use"})))
        result: Any = {"stdout": s.output, "stderr": "", "interrupted": False, "isImage": False} \
            if s.tool == "Bash" else {"type": "text", "content": s.output}
        if s.is_error:
            result = f"Error: {s.output}"
        self.lines.append(_dumps(self._env("user", t + timedelta(seconds=2), message={
            "role": "user", "content": [{"tool_use_id": tid, "type": "tool_result", "content": s.output,
                                         "is_error": s.is_error}]}, toolUseResult=result)))

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


@dataclass
class CodexRollout:
    """A Codex CLI rollout in the envelope format (>= 0.46)."""

    session: str
    cwd: str
    start: datetime
    cli_version: str = "0.144.1"
    lines: list[str] = field(default_factory=list)
    _n: int = 0

    def __post_init__(self) -> None:
        self._line(self.start, "session_meta", {"id": self.session, "session_id": self.session,
                                                "timestamp": _ts(self.start), "cwd": self.cwd,
                                                "originator": "codex_exec", "cli_version": self.cli_version,
                                                "source": "exec", "model_provider": "openai",
                                                "base_instructions": {"text": "You are Codex."}})
        self._line(self.start, "turn_context", {"turn_id": _uuid(self.session, "turn"), "cwd": self.cwd,
                                                "approval_policy": "never", "model": "gpt-5.1-codex",
                                                "sandbox_policy": {"type": "workspace-write", "network_access": True}})

    def _line(self, t: datetime, kind: str, payload: dict) -> None:
        self.lines.append(_dumps({"timestamp": _ts(t), "type": kind, "payload": payload}))

    def message(self, role: str, text: str, t: datetime) -> None:
        kind = "input_text" if role == "user" else "output_text"
        self._line(t, "response_item", {"type": "message", "role": role, "content": [{"type": kind, "text": text}]})

    def call(self, name: str, arguments: dict, output: str, t: datetime) -> None:
        self._n += 1
        cid = f"call_{_uuid(self.session, self._n)[:22].replace('-', '')}"
        self._line(t, "response_item", {"type": "function_call", "name": name, "arguments": _dumps(arguments),
                                        "call_id": cid})
        self._line(t + timedelta(seconds=1), "response_item", {"type": "function_call_output", "call_id": cid,
                                                               "output": output})

    def exec_cell(self, cmd: str, workdir: str, output: str, t: datetime) -> None:
        """Code mode: a JavaScript cell calling tools.exec_command."""
        self._n += 1
        cid = f"call_{_uuid(self.session, self._n)[:22].replace('-', '')}"
        js = (f"const r = await tools.exec_command({_dumps({'cmd': cmd, 'workdir': workdir, 'yield_time_ms': 30000})});"
              "\ntext(r.output);\n")
        self._line(t, "response_item", {"type": "custom_tool_call", "status": "completed", "call_id": cid,
                                        "name": "exec", "input": js})
        self._line(t + timedelta(seconds=1), "response_item", {
            "type": "custom_tool_call_output", "call_id": cid,
            "output": [{"type": "input_text", "text": "Script completed\nWall time 1.2 seconds\nOutput:\n"},
                       {"type": "input_text", "text": output}]})

    def patch(self, patch: str, t: datetime) -> None:
        self._n += 1
        cid = f"call_{_uuid(self.session, self._n)[:22].replace('-', '')}"
        self._line(t, "response_item", {"type": "custom_tool_call", "status": "completed", "call_id": cid,
                                        "name": "apply_patch", "input": patch})
        self._line(t + timedelta(seconds=1), "response_item", {"type": "custom_tool_call_output", "call_id": cid,
                                                               "output": "Success. Updated the following files."})

    def web_search(self, query: str, t: datetime) -> None:
        self._line(t, "response_item", {"type": "web_search_call", "status": "completed",
                                        "action": {"type": "search", "query": query}})

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def connlog_line(t: datetime, agent: str, host: str, ip: str, port: int = 443, method: str = "CONNECT",
                 url: str | None = None, nbytes: int = 0, decision: str = "allow") -> str:
    rec = {"ts": _ts(t), "agent": agent, "dst_host": host, "dst_ip": ip, "dst_port": port, "method": method,
           "bytes": nbytes, "decision": decision}
    if url:
        rec["url"] = url
    return _dumps(rec)


def squid_line(t: datetime, client: str, host: str, ip: str, nbytes: int, code: str = "TCP_TUNNEL/200") -> str:
    return f"{t.timestamp():.3f}    842 {client} {code} {nbytes} CONNECT {host}:443 - HIER_DIRECT/{ip} -"
