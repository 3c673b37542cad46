"""Open models as judges through any OpenAI-compatible server (vLLM, Ollama, llama.cpp server, ``transformers
serve``), by ``base_url``, over Chat Completions: the API these servers actually implement.

What real servers need, learned from them: an assistant turn's ``content`` is a string (``""``, never
``null``: llama.cpp answers 500 and chat templates concatenate it), ``max_tokens`` is always sent (a model
that ignores the tools otherwise generates until the timeout), only fields the server needs are sent (no
``tool_choice``: "auto" is the default and some servers reject or ignore it), and ``output = "json_schema"``
sends ``response_format`` with the verdict's JSON Schema for models without reliable tool calling — the
loop then reads the verdict from the content, so a server that ignores ``response_format`` still gets
through when its model writes the JSON. Web search is our client-side ``web_search`` tool.
"""

from __future__ import annotations

import os
from typing import Any

from reviewbench.judges.base import (
    Capabilities,
    JudgeProvider,
    ProviderError,
    StepRequest,
    StepResult,
    ToolCall,
    Turn,
    Usage,
)


class OpenAICompatibleJudge(JudgeProvider):
    capabilities = Capabilities(client_search=True, structured_output=True, free=True, default_max_tokens=2048)

    def __init__(self, api_key: str | None = None, base_url: str | None = None, http_client: Any = None,
                 max_retries: int = 2, timeout: float = 300.0) -> None:
        from openai import AsyncOpenAI

        key = api_key or os.environ.get("OPENAI_COMPATIBLE_API_KEY") or "not-needed"
        self.client = AsyncOpenAI(api_key=key, base_url=base_url, http_client=http_client, max_retries=max_retries,
                                  timeout=timeout)

    @staticmethod
    def messages(system: str, transcript: list[Turn]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = [{"role": "system", "content": system}]
        for t in transcript:
            if t.role == "user":
                out.append({"role": "user", "content": t.text})
            elif t.role == "assistant":
                msg: dict[str, Any] = {"role": "assistant", "content": t.text or ""}
                if t.tool_calls:
                    msg["tool_calls"] = [{"id": c.id, "type": "function",
                                          "function": {"name": c.name, "arguments": c.arguments}}
                                         for c in t.tool_calls]
                out.append(msg)
            else:
                out.append({"role": "tool", "tool_call_id": t.call_id, "content": t.text})
        return out

    async def step(self, req: StepRequest) -> StepResult:
        spec = req.task.spec
        body: dict[str, Any] = {"model": spec.model, "messages": self.messages(req.task.system, req.transcript),
                                "temperature": spec.temperature, "max_tokens": req.max_tokens or 2048}
        if req.tools:
            body["tools"] = [{"type": "function", "function": {"name": t.name, "description": t.description,
                                                               "parameters": t.parameters}} for t in req.tools]
        if req.response_schema is not None:
            body["response_format"] = {"type": "json_schema", "json_schema": {"name": "verdict",
                                                                              "schema": req.response_schema}}
        resp = await self.client.chat.completions.create(**body, timeout=spec.timeout)
        if not hasattr(resp, "model_dump"):
            raise ProviderError(f"the server answered with a {type(resp).__name__}, not a chat completion")
        raw = resp.model_dump(mode="json", exclude_none=True)
        choices = raw.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0].get("message"), dict):
            raise ProviderError("the chat completion has no choices[0].message")
        msg, finish = choices[0]["message"], choices[0].get("finish_reason")
        calls = [ToolCall(id=str(c.get("id") or f"call_{n}"), name=str((c.get("function") or {}).get("name", "")),
                          arguments=str((c.get("function") or {}).get("arguments") or "{}"))
                 for n, c in enumerate(msg.get("tool_calls") or []) if isinstance(c, dict)]
        u = raw.get("usage") or {}
        i, o = int(u.get("prompt_tokens") or 0), int(u.get("completion_tokens") or 0)
        return StepResult(
            text=str(msg.get("content") or ""), tool_calls=calls, truncated=finish == "length",
            usage=Usage(input_tokens=i, output_tokens=o, calls=1, cost_usd=0.0),
            exchange={"request": {k: v for k, v in body.items() if k != "messages"}
                      | {"n_messages": len(body["messages"])}, "response": raw})


PROVIDER = OpenAICompatibleJudge
