"""Claude judges through the ``anthropic`` SDK's Messages API, one request per step.

Web search is Anthropic's server-side tool (``web_search_20250305``) when the judge has ``web_search`` on:
its queries and results come back in the response as ``server_tool_use`` / ``web_search_tool_result``
blocks, are recorded like our own tool calls, and are sent back verbatim in the assistant turn (their
``encrypted_content`` is what lets the model cite them). 429, 5xx and timeouts are retried by the SDK with
exponential backoff (``max_retries``); what still fails is the loop's to record.
"""

from __future__ import annotations

import json
import os
from typing import Any

from reviewbench.judges.base import (
    Capabilities,
    JudgeProvider,
    ServerSearch,
    StepRequest,
    StepResult,
    ToolCall,
    Turn,
    Usage,
)

SEARCH_MAX_USES = 8


class AnthropicJudge(JudgeProvider):
    capabilities = Capabilities(
        key_env="ANTHROPIC_API_KEY", server_search=True, default_max_tokens=8000, search_usd=0.01,
        prices={"claude-opus-4-1": (15.0, 75.0), "claude-opus-4-5": (5.0, 25.0), "claude-sonnet-4-5": (3.0, 15.0),
                "claude-sonnet-4": (3.0, 15.0), "claude-haiku-4-5": (1.0, 5.0)})

    def __init__(self, api_key: str | None = None, base_url: str | None = None, http_client: Any = None,
                 max_retries: int = 4, timeout: float = 300.0) -> None:
        from anthropic import AsyncAnthropic

        self.client = AsyncAnthropic(api_key=api_key or os.environ.get("ANTHROPIC_API_KEY"), base_url=base_url,
                                     http_client=http_client, max_retries=max_retries, timeout=timeout)

    @staticmethod
    def messages(transcript: list[Turn]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for t in transcript:
            if t.role == "user":
                out.append({"role": "user", "content": t.text})
            elif t.role == "assistant":
                content = t.native if t.native is not None else (
                    ([{"type": "text", "text": t.text}] if t.text else [])
                    + [{"type": "tool_use", "id": c.id, "name": c.name, "input": _object(c.arguments)}
                       for c in t.tool_calls])
                out.append({"role": "assistant", "content": content or [{"type": "text", "text": "(no answer)"}]})
            else:
                block = {"type": "tool_result", "tool_use_id": t.call_id, "content": t.text,
                         **({"is_error": True} if t.error else {})}
                if out and out[-1]["role"] == "user" and isinstance(out[-1]["content"], list):
                    out[-1]["content"].append(block)  # all results of one turn go back in one user message
                else:
                    out.append({"role": "user", "content": [block]})
        return out

    async def step(self, req: StepRequest) -> StepResult:
        spec = req.task.spec
        tools: list[dict[str, Any]] = [{"name": t.name, "description": t.description, "input_schema": t.parameters}
                                       for t in req.tools]
        if req.server_search:
            tools.insert(0, {"type": "web_search_20250305", "name": "web_search", "max_uses": SEARCH_MAX_USES})
        # no temperature: the current Messages API (SDK 2.x) has no sampling parameters
        body: dict[str, Any] = {"model": spec.model, "max_tokens": req.max_tokens or 8000, "system": req.task.system,
                                "messages": self.messages(req.transcript), "tools": tools}
        msg = await self.client.messages.create(**body, timeout=spec.timeout)
        raw = msg.model_dump(mode="json", exclude_none=True)
        u = msg.usage
        searches = getattr(getattr(u, "server_tool_use", None), "web_search_requests", 0) or 0
        content: list[dict[str, Any]] = raw.get("content") or []
        return StepResult(
            text="\n".join(b.get("text", "") for b in content if b.get("type") == "text"),
            tool_calls=[ToolCall(id=str(b.get("id", "")), name=str(b.get("name", "")),
                                 arguments=json.dumps(b.get("input") or {}, ensure_ascii=False))
                        for b in content if b.get("type") == "tool_use"],
            native=content, searches=self.server_searches(content),
            usage=Usage(input_tokens=u.input_tokens, output_tokens=u.output_tokens, web_searches=searches, calls=1,
                        cost_usd=self.capabilities.price(spec.model, u.input_tokens, u.output_tokens, searches)),
            paused=raw.get("stop_reason") == "pause_turn", truncated=raw.get("stop_reason") == "max_tokens",
            exchange={"request": {k: v for k, v in body.items() if k != "system"}, "response": raw})

    @staticmethod
    def server_searches(content: list[dict[str, Any]]) -> list[ServerSearch]:
        queries = {b.get("id"): (b.get("input") or {}).get("query", "") for b in content
                   if b.get("type") == "server_tool_use" and b.get("name") == "web_search"}
        out = []
        for b in content:
            if b.get("type") == "web_search_tool_result":
                res = b.get("content")
                if isinstance(res, list):
                    text = json.dumps([{"title": r.get("title"), "url": r.get("url"), "page_age": r.get("page_age")}
                                       for r in res if isinstance(r, dict)], ensure_ascii=False)
                else:
                    text = json.dumps(res, ensure_ascii=False)
                out.append(ServerSearch(query=str(queries.get(b.get("tool_use_id"), "")), result=text))
        return out


def _object(arguments: str) -> dict[str, Any]:
    try:
        data = json.loads(arguments)
    except json.JSONDecodeError:
        return {}
    return data if isinstance(data, dict) else {}


PROVIDER = AnthropicJudge
