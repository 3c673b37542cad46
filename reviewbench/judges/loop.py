"""The one judge loop: every provider's run goes through here, one :meth:`JudgeProvider.step` at a time.

The loop owns what must not differ between providers: the step limit, usage sums, tool execution and the
``submit_verdict`` tool (or, in ``output = "json_schema"`` mode, the verdict as the reply's content), the
nudge when a model answers without a tool call, the arena's search rule (a verdict submitted before any
web search, or leaving a cited source unchecked, goes back once with the reason), giving up after repeated
invalid outputs, fitting the conversation into the judge's ``max_context``, and turning ANY exception of a
step — an API error, an HTML or non-UTF-8 body, a truncated JSON — into this judge's recorded error, so one
judge's failure never touches another's verdict.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from reviewbench.judges.base import (
    JudgeOutcome,
    JudgeProvider,
    JudgeTask,
    StepRequest,
    ToolCall,
    ToolCallRecord,
    Turn,
    Usage,
    describe_error,
)
from reviewbench.judges.inputs import CitationRef, JudgeInputs
from reviewbench.judges.schema import NUDGE, SUBMIT_TOOL, InvalidOutput, parse_submission, verdict_schema
from reviewbench.judges.tools import ToolBox, tool_specs
from reviewbench.verdict import JudgeVerdict

WAIT_TICK_S = 5.0  # how often "waiting for judge X (N s)" is said while a model request is outstanding
MAX_INVALID = 3  # invalid structured outputs sent back to the model before the judge gives up
_RESERVE_TOKENS = 64  # chat-template overhead per request, on top of the estimate


def can_web_search(task: JudgeTask, provider: JudgeProvider) -> bool:
    caps = provider.capabilities
    if not task.spec.web_search:
        return False
    return caps.server_search or (caps.client_search and task.spec.output == "tools")


def estimate_tokens(text: str) -> int:
    """An over-estimate (3 bytes a token; English and code run at about 4): safe for fitting a context."""
    return len(text.encode("utf-8")) // 3 + 1


@dataclass
class SearchRule:
    """The arena's rule for judges that can search: look for prior work, check every citation."""

    applies: bool
    citations: list[CitationRef]  # from DESCRIPTION.md
    reminded: bool = False

    def unchecked(self, verdict: JudgeVerdict) -> list[str]:
        checked = [f"{c.citation} {c.note}".lower() for c in verdict.citations_checked if c.status != "unchecked"]
        missing = []
        for ref in self.citations:
            parts = ref.key.lower().split()
            if not any(all(p in c for p in parts) for c in checked):
                missing.append(ref.text)
        return missing

    def objection(self, verdict: JudgeVerdict, web_searches: int) -> str | None:
        if not self.applies or self.reminded:
            return None
        reasons = []
        if web_searches == 0:
            reasons.append("you submitted before any web search: search for prior work of this mechanism first")
        missing = self.unchecked(verdict)
        if missing:
            reasons.append("these citations of DESCRIPTION.md are not reported as checked (search each, then list it "
                           "in citations_checked): " + "; ".join(missing[:12]))
        if not reasons:
            return None
        self.reminded = True
        return ". ".join(reasons)


@dataclass
class Loop:
    provider: JudgeProvider
    task: JudgeTask
    toolbox: ToolBox
    inputs: JudgeInputs
    exchanges: list[dict[str, Any]] = field(default_factory=list)
    # a live line while a request is outstanding: a CPU server can take many minutes a reply, and a review that
    # says nothing for that long looks hung
    progress: Callable[[str], None] | None = None

    async def step(self, req: StepRequest) -> Any:
        """One provider step; while it is outstanding, "waiting for judge X (N s)" every ``WAIT_TICK_S``."""
        if self.progress is None:
            return await self.provider.step(req)
        say, t0 = self.progress, time.perf_counter()

        async def tick() -> None:
            while True:
                say(f"waiting for judge {self.task.judge_id} ({time.perf_counter() - t0:.0f} s)")
                await asyncio.sleep(WAIT_TICK_S)

        ticker = asyncio.create_task(tick())
        try:
            return await self.provider.step(req)
        finally:
            ticker.cancel()

    async def run(self) -> JudgeOutcome:
        task, spec, caps = self.task, self.task.spec, self.provider.capabilities
        out = JudgeOutcome(judge_id=task.judge_id, family=spec.family, provider=spec.provider, model=spec.model,
                           local=caps.embedded, role=task.role)
        structured = spec.output == "json_schema"
        web = can_web_search(task, self.provider)
        client_web = web and not caps.server_search
        tools = [] if structured else tool_specs(task.rubric, client_web_search=client_web,
                                                 submit=not caps.scores_directly)
        rule = SearchRule(applies=web and not caps.scores_directly, citations=self.inputs.citations)
        transcript: list[Turn] = [Turn(role="user", text=task.user)]
        usage = Usage()
        t0 = time.perf_counter()
        max_tokens = spec.max_tokens or caps.default_max_tokens
        for _ in range(spec.max_steps):
            req = StepRequest(task=task, transcript=fit_context(task, transcript, tools, spec.max_context, max_tokens),
                              tools=tools, response_schema=verdict_schema(task.rubric) if structured else None,
                              max_tokens=max_tokens, server_search=web and caps.server_search)
            try:
                res = await self.step(req)
            except Exception as e:  # any failure of this judge's step is this judge's error, and only its
                out.error = describe_error(e)
                break
            if res.exchange:
                self.exchanges.append(res.exchange)
            usage = usage.add(res.usage)
            for s in res.searches:
                self.toolbox.note_server_search(s.query, s.result)
            if res.verdict is not None:
                out.verdict = res.verdict
                break
            transcript.append(Turn(role="assistant", text=res.text, tool_calls=res.tool_calls, native=res.native))
            if res.paused:
                continue
            if structured:
                reply, _ = self.submit(out, res.text, rule, raw=True)
                if out.verdict is not None or self.give_up(out):
                    break
                transcript.append(Turn(role="user", text=reply))
                continue
            results: list[Turn] = []
            for call in res.tool_calls:
                text, err = await self.call(out, call, rule)
                results.append(Turn(role="tool", text=text, call_id=call.id, name=call.name, error=err))
            if out.verdict is not None or self.give_up(out):
                break
            if results:
                transcript.extend(results)
            else:
                cut = " Your last answer was cut at max_tokens: keep it short." if res.truncated else ""
                transcript.append(Turn(role="user", text=NUDGE + cut))
        else:
            out.error = f"no verdict within {spec.max_steps} steps"
        out.usage = usage
        out.tool_calls = self.toolbox.calls
        out.searches = [c.argument("query") for c in self.toolbox.calls if c.name == "web_search" and not c.error]
        if out.verdict is not None:
            out.error = None
            out.citations_checked = [c.citation for c in out.verdict.citations_checked if c.status != "unchecked"]
        out.seconds = round(time.perf_counter() - t0, 2)
        return out

    async def call(self, out: JudgeOutcome, call: ToolCall, rule: SearchRule) -> tuple[str, bool]:
        if call.name == SUBMIT_TOOL:
            return self.submit(out, call.arguments, rule)
        try:
            args = json.loads(call.arguments or "{}")
        except json.JSONDecodeError as e:
            args = None
            reason = f"arguments are not valid JSON: {e}"
        else:
            reason = "arguments must be a JSON object"
        if not isinstance(args, dict):
            self.toolbox.calls.append(ToolCallRecord(name=call.name[:80], arguments=call.arguments[:2000],
                                                     result=reason, error=True))
            return reason, True
        return await self.toolbox.call(call.name, args)

    def submit(self, out: JudgeOutcome, text: str, rule: SearchRule, raw: bool = False) -> tuple[str, bool]:
        """A submitted verdict: recorded, or the reason it is not, which goes back to the model."""
        try:
            data = json.loads(extract_json(text) if raw else (text or "{}"))
        except json.JSONDecodeError as e:
            data = f"the verdict is not valid JSON: {e}"
        try:
            verdict = parse_submission(data, self.task, self.provider.capabilities)
        except InvalidOutput as e:
            out.invalid_outputs.append(str(e)[:500])
            again = f"Call {SUBMIT_TOOL} again" if not raw else "Answer again with the verdict JSON object only"
            return f"invalid verdict: {e}. {again}, fixed.", True
        web_searches = sum(1 for c in self.toolbox.calls if c.name == "web_search")
        objection = rule.objection(verdict, web_searches)
        if objection:
            out.reminders.append(objection)
            # the citations named in the reason are the submission's text: they go back fenced
            return (f"verdict not recorded: the arena's rule is not met. {self.inputs.show('rule_objection', objection)} "
                    f"Do that, then submit again."), True
        out.verdict = verdict
        return "recorded", False

    @staticmethod
    def give_up(out: JudgeOutcome) -> bool:
        if out.verdict is None and len(out.invalid_outputs) >= MAX_INVALID:
            out.error = f"no valid verdict after {MAX_INVALID} attempts: {out.invalid_outputs[-1]}"
            return True
        return False


_FENCED_JSON = re.compile(r"```(?:json)?\s*(\{.*\})\s*```", re.S)


def extract_json(text: str) -> str:
    """The verdict object from a content reply: the whole reply, or a fenced ```json block, or the outermost
    braces (servers that ignore response_format wrap JSON in prose)."""
    s = (text or "").strip()
    if s.startswith("{"):
        return s
    m = _FENCED_JSON.search(s)
    if m:
        return m.group(1)
    lo, hi = s.find("{"), s.rfind("}")
    return s[lo:hi + 1] if 0 <= lo < hi else s


def fit_context(task: JudgeTask, transcript: list[Turn], tools: list[Any], max_context: int | None,
                max_tokens: int | None) -> list[Turn]:
    """The transcript cut to fit the judge's context window: the largest fenced bodies are shortened first
    (a fence is never broken: its tags stay, the cut says how much is gone)."""
    if not max_context:
        return transcript
    budget = max_context - (max_tokens or 0) - _RESERVE_TOKENS
    fixed = estimate_tokens(task.system) + estimate_tokens(json.dumps([getattr(t, "parameters", {}) for t in tools]))
    fixed += sum(estimate_tokens(json.dumps([c.__dict__ for c in t.tool_calls])) for t in transcript)
    texts = [t.text for t in transcript]
    over = fixed + sum(estimate_tokens(x) for x in texts) - budget
    if over <= 0:
        return transcript
    from reviewbench.judges.sanitize import shrink_fenced

    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    for i in order:
        if over <= 0:
            break
        before = estimate_tokens(texts[i])
        target = max(200, len(texts[i]) - over * 3 - 200)
        texts[i] = shrink_fenced(texts[i], target)
        over -= before - estimate_tokens(texts[i])
    return [Turn(role=t.role, text=x, tool_calls=t.tool_calls, call_id=t.call_id, name=t.name, error=t.error,
                 native=t.native) for t, x in zip(transcript, texts)]
