"""What every judge provider shares: what it can do, the one step it implements, and what a run hands back.

A provider (one module in :mod:`reviewbench.judges.providers`) declares its :class:`Capabilities` and
implements :meth:`JudgeProvider.step`: one request to its model, given the provider-neutral transcript so
far, answered with a :class:`StepResult`. Everything around the step — the step limit, usage sums, the
``submit_verdict`` tool, nudges, the search rule, giving up, API errors — is the one loop in
:mod:`reviewbench.judges.loop`, so two providers cannot drift apart in how a verdict is reached.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from reviewbench.arena import JudgeSpec
from reviewbench.rubric import Rubric
from reviewbench.verdict import JudgeVerdict

Role = Literal["primary", "tie_break", "advisory"]  # advisory: run and reported, never counted


class Capabilities(BaseModel):
    """What a provider can do; the panel, the loop and the cost accounting read this, never a provider name."""

    model_config = ConfigDict(frozen=True)

    key_env: str | None = None  # the environment variable holding its API key; None: no key needed
    server_search: bool = False  # the provider runs web search itself (its results come back in the response)
    client_search: bool = False  # the judge may call our client-side web_search tool
    structured_output: bool = False  # supports output = "json_schema" (the verdict as schema-constrained content)
    scores_directly: bool = False  # the provider hands back a finished verdict (no submit tool, no JSON to parse)
    deterministic: bool = False  # the same prompt gives the same verdict: runs are cached across arenas
    embedded: bool = False  # runs in this process on this machine (the report labels such judges "local")
    raises_flags: bool = True
    reads_prose: bool = True  # False: scores from measured facts only, so no text a submission writes can move it
    free: bool = False
    prices: dict[str, tuple[float, float]] = Field(default_factory=dict)  # model prefix -> USD per Mtok (in, out)
    search_usd: float = 0.0  # per server-side search
    default_max_tokens: int | None = None  # sent when the judge sets no max_tokens (None: the API's own limit)
    tie_break_variant: str = ""  # how a second run of the same model differs (deterministic providers need one)
    version: str = "1"  # of the provider's own scoring code: part of every cache key, so a change never replays

    def price(self, model: str, input_tokens: int, output_tokens: int, searches: int = 0) -> float | None:
        """USD for one step; None when the model is not in the price table (unknown is not free)."""
        if self.free:
            return 0.0
        key = max((k for k in self.prices if model.startswith(k)), key=len, default=None)
        if key is None:
            return None
        p_in, p_out = self.prices[key]
        return round(input_tokens * p_in / 1e6 + output_tokens * p_out / 1e6 + searches * self.search_usd, 6)


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


class ToolCallRecord(BaseModel):
    """One tool call as the judge made it. ``arguments`` stays the JSON text the model wrote: a closed type in
    review.json, and the record of a malformed call is the malformed text itself."""

    name: str
    arguments: str = "{}"
    result: str = ""
    error: bool = False
    server_side: bool = False  # run by the provider (its own web search), result as the provider gave it

    def argument(self, key: str) -> str:
        try:
            data = json.loads(self.arguments)
        except json.JSONDecodeError:
            return ""
        return str(data.get(key, "")) if isinstance(data, dict) else ""


class JudgeTask(BaseModel):
    """One judge run: who judges, with which prompts, under which rubric."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    judge_id: str
    spec: JudgeSpec
    role: Role = "primary"
    sample: int = 0
    system: str
    user: str
    rubric: Rubric
    variant: str = ""  # a provider-specific variation of the run (e.g. the local judge's anchor order)


class JudgeOutcome(BaseModel):
    """A judge run as the report shows it. The raw provider exchanges are kept in the judge-call store only."""

    judge_id: str
    family: str
    provider: str
    model: str
    local: bool
    role: Role
    verdict: JudgeVerdict | None = None
    error: str | None = None  # why there is no verdict (never a score of 0)
    invalid_outputs: list[str] = Field(default_factory=list)  # rejected structured outputs, each sent back
    reminders: list[str] = Field(default_factory=list)  # verdicts sent back once (no search, unchecked citation)
    searches: list[str] = Field(default_factory=list)  # every web search query the judge ran, in order
    citations_checked: list[str] = Field(default_factory=list)  # citations the verdict reports as checked
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    seconds: float = 0.0
    cached: bool = False


# --- the provider-neutral transcript and the one step ------------------------------------------------------------
@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text as the model wrote it (may be malformed: the loop answers with the reason)


@dataclass
class Turn:
    """One message of the transcript. An assistant turn keeps the provider's own items (``native``) so that the
    same provider can send it back verbatim (server-side search results, reasoning items)."""

    role: Literal["user", "assistant", "tool"]
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    call_id: str = ""  # tool: the call it answers
    name: str = ""  # tool: the tool's name
    error: bool = False  # tool: the result is an error
    native: Any = None


@dataclass
class ServerSearch:
    query: str
    result: str  # JSON text: what the provider returned (titles, URLs)


@dataclass
class StepResult:
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    native: Any = None
    usage: Usage = field(default_factory=Usage)
    searches: list[ServerSearch] = field(default_factory=list)
    paused: bool = False  # the provider asks for the turn back unchanged to finish it (a long server search)
    truncated: bool = False  # stopped at max_tokens
    verdict: JudgeVerdict | None = None  # from a provider that scores directly
    exchange: dict[str, Any] = field(default_factory=dict)  # request and response bodies, for the store


class StepRequest(BaseModel):
    """What the loop asks of one step."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    task: JudgeTask
    transcript: list[Turn]
    tools: list[ToolSpec]  # function tools the judge may call (the provider adds its own server search)
    response_schema: dict[str, Any] | None = None  # output = "json_schema": the verdict's JSON Schema
    max_tokens: int | None = None
    server_search: bool = False


class ProviderError(RuntimeError):
    """The provider's answer cannot be used (a non-JSON body, a wrong shape); the message says why."""


class JudgeProvider(ABC):
    """One model API. ``step`` may raise: the loop records any exception as this judge's error, and only its."""

    capabilities: ClassVar[Capabilities]

    @abstractmethod
    async def step(self, req: StepRequest) -> StepResult: ...


def describe_error(e: BaseException) -> str:
    """One line for a failed step: the SDK's message when it has one, else the exception."""
    msg = getattr(e, "message", None) or str(e) or type(e).__name__
    status = getattr(e, "status_code", None)
    line = " ".join(f"{type(e).__name__}{f' (HTTP {status})' if status else ''}: {msg}".split())
    return line[:500]
