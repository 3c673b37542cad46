"""GPT judges through the ``openai`` SDK's Responses API, one request per step.

Web search is OpenAI's own server-side ``web_search`` tool when the judge has ``web_search`` on: each
``web_search_call`` output item (its query and the sources it read) is recorded like Anthropic's
server-side search. Requests are stateless (``store: false``): the previous output items, reasoning
included (``reasoning.encrypted_content``), go back as input with each ``function_call_output``. In
``output = "json_schema"`` mode the verdict is the reply's text, constrained by ``text.format``
(``json_schema``); web search still works there. 429, 5xx and timeouts are retried by the SDK with backoff.
"""

from __future__ import annotations

import json
import os
from typing import Any

from reviewbench.judges.base import (
    Capabilities,
    JudgeProvider,
    ProviderError,
    ServerSearch,
    StepRequest,
    StepResult,
    ToolCall,
    Turn,
    Usage,
)

FIXED_TEMPERATURE = ("gpt-5", "o1", "o3", "o4")  # reasoning models accept only their default temperature


class OpenAIJudge(JudgeProvider):
    capabilities = Capabilities(
        key_env="OPENAI_API_KEY", server_search=True, structured_output=True, search_usd=0.01,
        prices={"gpt-5": (1.25, 10.0), "gpt-5-mini": (0.25, 2.0), "gpt-5-nano": (0.05, 0.4), "gpt-4.1": (2.0, 8.0),
                "gpt-4.1-mini": (0.4, 1.6), "gpt-4o": (2.5, 10.0), "gpt-4o-mini": (0.15, 0.6)})

    def __init__(self, api_key: str | None = None, base_url: str | None = None, http_client: Any = None,
                 max_retries: int = 4, timeout: float = 300.0) -> None:
        from openai import AsyncOpenAI

        self.client = AsyncOpenAI(api_key=api_key or os.environ.get("OPENAI_API_KEY"), base_url=base_url,
                                  http_client=http_client, max_retries=max_retries, timeout=timeout)

    @staticmethod
    def input_items(transcript: list[Turn]) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        for t in transcript:
            if t.role == "user":
                items.append({"role": "user", "content": t.text})
            elif t.role == "assistant":
                if t.native is not None:
                    items.extend(t.native)
                    continue
                if t.text:
                    items.append({"role": "assistant", "content": t.text})
                items.extend({"type": "function_call", "call_id": c.id, "name": c.name, "arguments": c.arguments}
                             for c in t.tool_calls)
            else:
                items.append({"type": "function_call_output", "call_id": t.call_id, "output": t.text})
        return items

    async def step(self, req: StepRequest) -> StepResult:
        spec = req.task.spec
        tools: list[dict[str, Any]] = [{"type": "function", "name": t.name, "description": t.description,
                                        "parameters": t.parameters, "strict": False} for t in req.tools]
        if req.server_search:
            tools.insert(0, {"type": "web_search"})
        body: dict[str, Any] = {"model": spec.model, "instructions": req.task.system,
                                "input": self.input_items(req.transcript), "store": False,
                                "include": ["web_search_call.action.sources", "reasoning.encrypted_content"]}
        if tools:
            body["tools"] = tools
        if req.max_tokens:
            body["max_output_tokens"] = req.max_tokens
        if not spec.model.startswith(FIXED_TEMPERATURE):
            body["temperature"] = spec.temperature
        if req.response_schema is not None:
            body["text"] = {"format": {"type": "json_schema", "name": "verdict", "schema": req.response_schema,
                                       "strict": False}}
        resp = await self.client.responses.create(**body, timeout=spec.timeout)
        if not hasattr(resp, "model_dump"):
            raise ProviderError(f"the server answered with a {type(resp).__name__}, not a response object")
        raw = resp.model_dump(mode="json", exclude_none=True)
        output = raw.get("output")
        if not isinstance(output, list):
            raise ProviderError("the response has no output list")
        texts, calls, searches = [], [], []
        for item in output:
            kind = item.get("type")
            if kind == "message":
                texts += [c.get("text", "") for c in item.get("content") or [] if c.get("type") == "output_text"]
            elif kind == "function_call":
                calls.append(ToolCall(id=str(item.get("call_id", "")), name=str(item.get("name", "")),
                                      arguments=str(item.get("arguments") or "{}")))
            elif kind == "web_search_call":
                searches.append(self.search_record(item))
        u = raw.get("usage") or {}
        i, o = int(u.get("input_tokens", 0)), int(u.get("output_tokens", 0))
        n = sum(1 for s in searches if s.query)
        reason = (raw.get("incomplete_details") or {}).get("reason")
        return StepResult(
            text="\n".join(texts), tool_calls=calls, native=output, searches=searches,
            usage=Usage(input_tokens=i, output_tokens=o, web_searches=n, calls=1,
                        cost_usd=self.capabilities.price(spec.model, i, o, n)),
            truncated=reason == "max_output_tokens",
            exchange={"request": {k: v for k, v in body.items() if k not in ("instructions", "input")}
                      | {"n_input_items": len(body["input"])}, "response": raw})

    @staticmethod
    def search_record(item: dict[str, Any]) -> ServerSearch:
        action = item.get("action") or {}
        query = action.get("query") or "; ".join(action.get("queries") or []) or action.get("url") or ""
        sources = [s.get("url") for s in action.get("sources") or [] if isinstance(s, dict)]
        return ServerSearch(query=str(query), result=json.dumps({"action": action.get("type"), "status":
                                                                 item.get("status"), "sources": sources},
                                                                ensure_ascii=False))


PROVIDER = OpenAIJudge
