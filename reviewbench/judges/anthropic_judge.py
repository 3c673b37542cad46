"""Claude judges through the ``anthropic`` SDK's Messages API: a tool-use loop that ends in ``submit_verdict``.

Web search is Anthropic's server-side tool (``web_search_20250305``) when the judge has ``web_search`` on;
its queries and results come back in the response as ``server_tool_use`` / ``web_search_tool_result``
blocks and are recorded like our own tool calls. 429, 5xx and timeouts are retried by the SDK with
exponential backoff (``max_retries``); an invalid verdict goes back to the model as an error tool result.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from reviewbench.judges.base import JudgeOutcome, JudgeTask, Usage, api_error, finish, price
from reviewbench.judges.schema import NUDGE, SUBMIT_TOOL, give_up, take_submission
from reviewbench.judges.tools import ToolBox, tool_specs

MAX_STEPS = 16


class AnthropicJudge:
    def __init__(self, api_key: str | None = None, base_url: str | None = None,
                 http_client: Any = None, max_retries: int = 4, timeout: float = 300.0,
                 max_tokens: int = 8000) -> None:
        from anthropic import AsyncAnthropic

        self.client = AsyncAnthropic(api_key=api_key or os.environ.get("ANTHROPIC_API_KEY"), base_url=base_url,
                                     http_client=http_client, max_retries=max_retries, timeout=timeout)
        self.max_tokens = max_tokens

    def tools(self, task: JudgeTask) -> list[dict[str, Any]]:
        server_search = task.spec.web_search
        out: list[dict[str, Any]] = [{"name": t.name, "description": t.description, "input_schema": t.parameters}
                                     for t in tool_specs(task.rubric, client_web_search=False)]
        if server_search:
            out.insert(0, {"type": "web_search_20250305", "name": "web_search", "max_uses": 8})
        return out

    async def run(self, task: JudgeTask, tools: ToolBox) -> JudgeOutcome:
        spec = task.spec
        outcome = JudgeOutcome(judge_id=task.judge_id, family=spec.family, provider=spec.provider, model=spec.model,
                               local=False, role=task.role)
        messages: list[dict[str, Any]] = [{"role": "user", "content": task.user}]
        tool_defs = self.tools(task)
        usage = Usage()
        t0 = time.perf_counter()
        from anthropic import APIError

        try:
            for _ in range(MAX_STEPS):
                # no temperature: the current Messages API (SDK 2.x) has no sampling parameters
                body = {"model": spec.model, "max_tokens": self.max_tokens, "system": task.system,
                        "messages": messages, "tools": tool_defs}
                msg = await self.client.messages.create(**body)
                raw = msg.model_dump(mode="json", exclude_none=True)
                outcome.exchanges.append({"request": {k: v for k, v in body.items() if k != "system"},
                                          "response": raw})
                u = msg.usage
                searches = getattr(getattr(u, "server_tool_use", None), "web_search_requests", 0) or 0
                step = Usage(input_tokens=u.input_tokens, output_tokens=u.output_tokens, web_searches=searches,
                             calls=1, cost_usd=price("anthropic", spec.model, u.input_tokens, u.output_tokens,
                                                     searches))
                usage = usage.add(step)
                content = raw["content"]
                messages.append({"role": "assistant", "content": content})
                self._record_server_search(content, tools)
                results: list[dict[str, Any]] = []
                for block in content:
                    if block.get("type") != "tool_use":
                        continue
                    if block["name"] == SUBMIT_TOOL:
                        text, err = take_submission(outcome, block.get("input"), task)
                    else:
                        text, err = await tools.call(block["name"], block.get("input") or {})
                    results.append({"type": "tool_result", "tool_use_id": block["id"], "content": text,
                                    **({"is_error": True} if err else {})})
                if outcome.verdict is not None or give_up(outcome):
                    break
                if results:
                    messages.append({"role": "user", "content": results})
                elif raw.get("stop_reason") == "pause_turn":
                    continue  # a long server-side search turn: send it back as is to let it finish
                else:
                    messages.append({"role": "user", "content": NUDGE})
            else:
                outcome.error = f"no verdict within {MAX_STEPS} steps"
        except APIError as e:
            outcome.error = api_error(e)
        return finish(outcome, usage, tools.calls, t0)

    @staticmethod
    def _record_server_search(content: list[dict[str, Any]], tools: ToolBox) -> None:
        queries = {b["id"]: (b.get("input") or {}).get("query", "") for b in content
                   if b.get("type") == "server_tool_use" and b.get("name") == "web_search"}
        for b in content:
            if b.get("type") == "web_search_tool_result":
                res = b.get("content")
                if isinstance(res, list):
                    text = json.dumps([{"title": r.get("title"), "url": r.get("url"), "page_age": r.get("page_age")}
                                       for r in res], ensure_ascii=False)
                else:
                    text = json.dumps(res)
                tools.note_server_search(queries.get(b.get("tool_use_id"), ""), text)
