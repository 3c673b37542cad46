"""Writes logs in the real on-disk formats (Claude Code sessions, Codex rollouts, connection logs, Squid).

Used to build the example arena's logs, test fixtures and the throughput benchmark's multi-GB file. The
envelopes follow the real samples (../shared/samples/logs, Claude Code 2.1.214 and Codex 0.144.1): one
assistant line per content block with its own uuid and the full ``usage`` block, tool results in user lines
with ``toolUseResult`` and ``sourceToolAssistantUUID``, Task/Agent results carrying the sub-agent's
``agentId``, Codex ``arguments`` as JSON strings. The envelope's size matters: the audit's cost is measured
against parsing it.
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
    result: Any = None  # the toolUseResult to write instead of the default one for the tool


@dataclass
class ClaudeSession:
    session: str
    cwd: str
    start: datetime
    version: str = "2.1.144"
    model: str = "claude-opus-4-5"
    sidechain: bool = False
    agent_id: str | None = None
    entrypoint: str = "sdk-cli"
    _n: int = 0
    _last: str | None = None
    lines: list[str] = field(default_factory=list)

    def _tail(self, kind: str, u: str, t: datetime) -> dict[str, Any]:
        return {"type": kind, "uuid": u, "timestamp": _ts(t), "userType": "external", "entrypoint": self.entrypoint,
                "cwd": self.cwd, "sessionId": self.session, "version": self.version, "gitBranch": "main"}

    def _head(self) -> tuple[str, dict[str, Any]]:
        self._n += 1
        u = _uuid(self.session, self.agent_id, self._n)
        head: dict[str, Any] = {"parentUuid": self._last, "isSidechain": self.sidechain}
        if self.agent_id:
            head["agentId"] = self.agent_id
        self._last = u
        return u, head

    def prompt(self, text: str, t: datetime) -> None:
        u, head = self._head()
        self.lines.append(_dumps({**head, "promptId": _uuid(self.session, "prompt"), "type": "user",
                                  "message": {"role": "user", "content": text}, **self._tail("user", u, t)}))

    def _assistant(self, content: dict[str, Any], t: datetime, stop: str | None) -> str:
        u, head = self._head()
        msg = {"model": self.model, "id": f"msg_01{_uuid(self.session, self.agent_id, 'm', self._n)[:22].replace('-', '')}",
               "type": "message", "role": "assistant", "content": [content], "stop_reason": stop,
               "stop_sequence": None, "stop_details": None, "usage": {
                   "input_tokens": 2, "cache_creation_input_tokens": 612, "cache_read_input_tokens": 48211,
                   "output_tokens": 187, "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
                   "service_tier": "standard", "cache_creation": {"ephemeral_1h_input_tokens": 612,
                                                                  "ephemeral_5m_input_tokens": 0},
                   "inference_geo": "not_available", "iterations": [{
                       "input_tokens": 2, "output_tokens": 187, "cache_read_input_tokens": 48211,
                       "cache_creation_input_tokens": 612, "cache_creation": {"ephemeral_5m_input_tokens": 0,
                                                                              "ephemeral_1h_input_tokens": 612},
                       "type": "message"}], "speed": "standard"}, "diagnostics": None}
        req = f"req_01{_uuid(self.session, self.agent_id, 'r', self._n)[:22].replace('-', '')}"
        self.lines.append(_dumps({**head, "message": msg, "requestId": req, **self._tail("assistant", u, t)}))
        return u

    def step(self, s: Step, t: datetime) -> str:
        """One tool call and its result; returns the tool_use id."""
        if s.text:
            self._assistant({"type": "text", "text": s.text}, t, None)
        tid = f"toolu_01{_uuid(self.session, self.agent_id, 't', self._n)[:22].replace('-', '')}"
        source = self._assistant({"type": "tool_use", "id": tid, "name": s.tool, "input": s.input,
                                  "caller": {"type": "direct"}}, t, "tool_use")
        result: Any = s.result
        if result is None:
            result = {"stdout": s.output, "stderr": "", "interrupted": False, "isImage": False,
                      "noOutputExpected": False} if s.tool == "Bash" else {"type": "text", "content": s.output}
        if s.is_error:
            result = f"Error: {s.output}"
        u, head = self._head()
        self.lines.append(_dumps({**head, "promptId": _uuid(self.session, "prompt"), "type": "user", "message": {
            "role": "user", "content": [{"tool_use_id": tid, "type": "tool_result", "content": s.output,
                                         "is_error": s.is_error}]},
            **{k: v for k, v in self._tail("user", u, t + timedelta(seconds=2)).items() if k != "type"},
            "toolUseResult": result, "sourceToolAssistantUUID": source}))
        return tid

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

    def web_search(self, query: str, t: datetime, queries: list[str] | None = None) -> None:
        """A native web search; current rollouts put the queries in ``action.queries`` (a list)."""
        action: dict[str, Any] = {"type": "search", "query": query}
        if queries is not None:
            action["queries"] = queries
        self._line(t, "response_item", {"type": "web_search_call", "status": "completed", "action": action})

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
