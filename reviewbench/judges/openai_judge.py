"""GPT judges through the ``openai`` SDK's Chat Completions API with function tools, which also serves any
OpenAI-compatible server (vLLM, Ollama, llama.cpp server) by ``base_url`` — the way users run open models as
judges. Web search is our client-side ``web_search`` tool (arXiv API, DuckDuckGo). 429, 5xx and timeouts are
retried by the SDK with backoff; an invalid verdict goes back to the model as the tool's error result.
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
_FIXED_TEMPERATURE = ("gpt-5", "o1", "o3", "o4")  # reasoning models accept only their default temperature


class OpenAIJudge:
    def __init__(self, api_key: str | None = None, base_url: str | None = None,
                 http_client: Any = None, max_retries: int = 4, timeout: float = 300.0,
                 compatible: bool = False) -> None:
        from openai import AsyncOpenAI

        key = api_key or os.environ.get("OPENAI_API_KEY") or ("not-needed" if compatible else None)
        self.client = AsyncOpenAI(api_key=key, base_url=base_url, http_client=http_client, max_retries=max_retries,
                                  timeout=timeout)
        self.provider = "openai_compatible" if compatible else "openai"

    @staticmethod
    def tools(task: JudgeTask) -> list[dict[str, Any]]:
        return [{"type": "function", "function": {"name": t.name, "description": t.description,
                                                  "parameters": t.parameters}}
                for t in tool_specs(task.rubric, client_web_search=task.spec.web_search)]

    async def run(self, task: JudgeTask, tools: ToolBox) -> JudgeOutcome:
        spec = task.spec
        outcome = JudgeOutcome(judge_id=task.judge_id, family=spec.family, provider=spec.provider, model=spec.model,
                               local=False, role=task.role)
        messages: list[dict[str, Any]] = [{"role": "system", "content": task.system},
                                          {"role": "user", "content": task.user}]
        tool_defs = self.tools(task)
        usage = Usage()
        t0 = time.perf_counter()
        from openai import APIError

        try:
            for _ in range(MAX_STEPS):
                body: dict[str, Any] = {"model": spec.model, "messages": messages, "tools": tool_defs,
                                        "tool_choice": "auto"}
                if not spec.model.startswith(_FIXED_TEMPERATURE):
                    body["temperature"] = spec.temperature
                resp = await self.client.chat.completions.create(**body)
                raw = resp.model_dump(mode="json", exclude_none=True)
                outcome.exchanges.append({"request": {k: v for k, v in body.items() if k != "messages"}
                                          | {"n_messages": len(messages)}, "response": raw})
                u = resp.usage
                i, o = (u.prompt_tokens, u.completion_tokens) if u else (0, 0)
                usage = usage.add(Usage(input_tokens=i, output_tokens=o, calls=1,
                                        cost_usd=price(self.provider, spec.model, i, o)))
                msg = raw["choices"][0]["message"]
                calls = msg.get("tool_calls") or []
                messages.append({"role": "assistant", "content": msg.get("content"),
                                 **({"tool_calls": calls} if calls else {})})
                for call in calls:
                    fn = call["function"]
                    try:
                        args: Any = json.loads(fn.get("arguments") or "{}")
                    except json.JSONDecodeError as e:
                        args = f"arguments are not valid JSON: {e}"  # a string: rejected below as invalid
                    if fn["name"] == SUBMIT_TOOL:
                        reply, _ = take_submission(outcome, args, task)
                    elif isinstance(args, str):
                        reply = args
                    else:
                        reply, _ = await tools.call(fn["name"], args)
                    messages.append({"role": "tool", "tool_call_id": call["id"], "content": reply})
                if outcome.verdict is not None or give_up(outcome):
                    break
                if not calls:
                    messages.append({"role": "user", "content": NUDGE})
            else:
                outcome.error = f"no verdict within {MAX_STEPS} steps"
        except APIError as e:
            outcome.error = api_error(e)
        return finish(outcome, usage, tools.calls, t0)
