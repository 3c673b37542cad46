"""What every judge provider shares: the task it is given, what it hands back, and the one interface.

A provider turns a :class:`JudgeTask` (prompts, tools, rubric) into a :class:`JudgeOutcome`: the structured
verdict (or the reason there is none), every tool call with its result (the snapshot of what the judge saw,
web results included), token usage and cost, and the raw provider exchanges for replay and inspection.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

from reviewbench.arena import JudgeSpec
from reviewbench.rubric import Rubric
from reviewbench.verdict import JudgeVerdict

Role = Literal["primary", "tie_break"]

# USD per million tokens (input, output), as published by the providers; unknown models report no cost.
PRICES: dict[str, tuple[float, float]] = {
    "claude-opus-4-1": (15.0, 75.0), "claude-opus-4-5": (5.0, 25.0), "claude-sonnet-4-5": (3.0, 15.0),
    "claude-sonnet-4": (3.0, 15.0), "claude-haiku-4-5": (1.0, 5.0),
    "gpt-5": (1.25, 10.0), "gpt-5-mini": (0.25, 2.0), "gpt-5-nano": (0.05, 0.4), "gpt-4.1": (2.0, 8.0),
    "gpt-4.1-mini": (0.4, 1.6), "gpt-4o": (2.5, 10.0), "gpt-4o-mini": (0.15, 0.6),
}
WEB_SEARCH_USD = {"anthropic": 0.01}  # per server-side search


class Usage(BaseModel):
    input_tokens: int = 0
    output_tokens: int = 0
    web_searches: int = 0
    calls: int = 0
    cost_usd: float | None = 0.0  # None: the model's price is unknown

    def add(self, other: "Usage") -> "Usage":
        cost = None if self.cost_usd is None or other.cost_usd is None else round(self.cost_usd + other.cost_usd, 6)
        return Usage(input_tokens=self.input_tokens + other.input_tokens,
                     output_tokens=self.output_tokens + other.output_tokens,
                     web_searches=self.web_searches + other.web_searches, calls=self.calls + other.calls,
                     cost_usd=cost)


def price(provider: str, model: str, input_tokens: int, output_tokens: int, web_searches: int = 0) -> float | None:
    if provider in ("local", "openai_compatible"):
        return 0.0
    key = max((k for k in PRICES if model.startswith(k)), key=len, default=None)
    if key is None:
        return None
    p_in, p_out = PRICES[key]
    return round(input_tokens * p_in / 1e6 + output_tokens * p_out / 1e6 + web_searches * WEB_SEARCH_USD.get(provider, 0),
                 6)


class ToolCallRecord(BaseModel):
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: str = ""
    error: bool = False
    server_side: bool = False  # run by the provider (e.g. Anthropic's web search), result as the provider gave it


class JudgeTask(BaseModel):
    """One judge run: who judges, with which prompts and tools, under which rubric."""

    model_config = {"arbitrary_types_allowed": True}

    judge_id: str
    spec: JudgeSpec
    role: Role = "primary"
    sample: int = 0
    system: str
    user: str
    rubric: Rubric
    variant: str = ""  # a provider-specific variation of the run (e.g. the local judge's anchor order)


class JudgeOutcome(BaseModel):
    judge_id: str
    family: str
    provider: str
    model: str
    local: bool
    role: Role
    verdict: JudgeVerdict | None = None
    error: str | None = None  # why there is no verdict (never a score of 0)
    invalid_outputs: list[str] = Field(default_factory=list)  # rejected structured outputs, each retried
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    seconds: float = 0.0
    cached: bool = False
    exchanges: list[dict[str, Any]] = Field(default_factory=list)  # raw request/response bodies, in order


class Provider(Protocol):
    """A model family behind one interface. ``run`` never raises for a model's mistake: it reports it."""

    async def run(self, task: JudgeTask, tools: Any) -> JudgeOutcome: ...


def api_error(e: Exception) -> str:
    return f"{type(e).__name__}: {getattr(e, 'message', e)}"


def finish(outcome: JudgeOutcome, usage: Usage, calls: list[ToolCallRecord], t0: float) -> JudgeOutcome:
    """Close a judge run: totals, the tool calls it made, and its wall time."""
    import time

    outcome.usage = usage
    outcome.tool_calls = calls
    outcome.seconds = round(time.perf_counter() - t0, 2)
    return outcome
