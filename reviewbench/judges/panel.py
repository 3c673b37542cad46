"""The judge panel: two judges of different families in parallel, a third of the non-author family when they
split, every run cached in the store so that a rerun replays without cost.

Which panel runs: the one configured in ``arena.toml``; when a judge's provider needs an API key that is not
in the environment, the embedded local panel (SmolLM2-135M-Instruct and Gemma 3 270M) runs instead, and the
panel note — the report's first line — says so and why. Each judge's failure is its own: the panel result
keeps every other judge's verdict, and says plainly when no judge produced one.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from harness.io import atomic_write_text
from reviewbench.arena import JudgeSpec, Panel
from reviewbench.judges import registry
from reviewbench.judges.base import JudgeOutcome, JudgeProvider, JudgeTask, Role, Usage, describe_error
from reviewbench.judges.inputs import JudgeInputs
from reviewbench.judges.loop import Loop, can_web_search
from reviewbench.judges.prompt import system_prompt, user_prompt
from reviewbench.judges.tools import ToolBox, tool_specs
from reviewbench.judges.websearch import WebSearch
from reviewbench.rubric import Rubric
from reviewbench.verdict import FlagClaim, JudgeVerdict, TieBreakDecision, decide_tie_break

# The offline default: the evidence judge counts (it scores measured facts only: deterministic, injection-proof by
# construction); the two small local LLMs run beside it as advisors, shown in the report and never counted.
LOCAL_PANEL = [JudgeSpec(family="evidence", provider="evidence", model="measured-facts", web_search=False),
               JudgeSpec(family="huggingface", provider="local", model="smollm2-135m-instruct", web_search=False,
                         role="advisory"),
               JudgeSpec(family="google", provider="local", model="gemma-3-270m", web_search=False, role="advisory")]
KEY_ENV = registry.key_env()  # provider -> the environment variable of its API key
CACHE_VERSION = "judge-call/2"


def check_panel(panel: Panel, where: Path) -> None:
    """The panel as the registry sees it (a one-line error naming ``where``): known providers, settings they
    support, and two counted judges of different families — or one deterministic judge, whose verdict a second
    run could not change."""
    from reviewbench.errors import ConfigError

    known = registry.known_providers()
    for i, j in enumerate(panel.judges):
        if j.provider not in known:
            raise ConfigError(where, f"panel.judges.{i}.provider: unknown judge provider {j.provider!r} "
                                     f"(known: {', '.join(known)})")
        if j.output == "json_schema" and not registry.capabilities(j.provider).structured_output:
            raise ConfigError(where, f"panel.judges.{i}: provider {j.provider!r} has no structured-output mode; "
                                     "use output = \"tools\"")
        if j.max_context is not None and j.max_tokens is not None and j.max_tokens >= j.max_context:
            raise ConfigError(where, f"panel.judges.{i}: max_tokens ({j.max_tokens}) must be below max_context "
                                     f"({j.max_context})")
    primary = [j for j in panel.judges if j.role == "primary"]
    if len(primary) == 1 and registry.capabilities(primary[0].provider).deterministic:
        return
    if len(primary) < 2:
        raise ConfigError(where, "panel: needs two counted (primary) judges of different families, or one "
                                 "deterministic judge (provider = \"evidence\")")
    if primary[0].family == primary[1].family:
        raise ConfigError(where, f"panel: the first two counted judges are both of family {primary[0].family!r}")


class ResolvedPanel(BaseModel):
    judges: list[JudgeSpec]
    local: bool
    note: str  # the report's first line


def resolve_panel(panel: Panel, env: dict[str, str] | None = None) -> ResolvedPanel:
    env = dict(os.environ) if env is None else env
    missing = sorted({KEY_ENV[j.provider] for j in panel.judges if j.provider in KEY_ENV and not env.get(KEY_ENV[j.provider])})
    configured = ", ".join(f"{j.provider}:{j.model}" for j in panel.judges)
    if missing:
        advisors = ("with SmolLM2-135M and Gemma 3 270M as advisors (shown, not counted)" if panel.offline_advisors
                    else "without advisors ([panel] offline_advisors = false)")
        return ResolvedPanel(judges=LOCAL_PANEL if panel.offline_advisors else LOCAL_PANEL[:1], local=True, note=(
            f"Judged OFFLINE by the evidence judge (scores from measured facts only: similarity to every baseline and "
            f"earlier submission, the board measurement, the claim ledger, the citation check; it reads no prose and "
            f"caps novelty at what distance can show), {advisors} — not by the configured judges ({configured}): "
            f"{', '.join(missing)} not set."))
    local = all(registry.capabilities(j.provider).embedded for j in panel.judges)
    kind = "local" if local else "API"
    return ResolvedPanel(judges=panel.judges, local=local,
                         note=f"Judged by the configured {kind} panel: {configured}.")


def call_key(task: JudgeTask, tools: list[Any], facts: Any = None) -> str:
    """Everything a judge run reads: its settings, prompts, tools, rubric, the provider's own code version and,
    for a judge that scores measured facts instead of prose, those facts (else a replay would return the verdict
    of other facts behind an unchanged prompt)."""
    s = task.spec
    caps = registry.capabilities(s.provider)
    key: dict[str, Any] = {
        "v": CACHE_VERSION, "spec": s.model_dump(mode="json", exclude={"samples"}), "sample": task.sample,
        "role": task.role, "variant": task.variant, "system": task.system, "user": task.user, "tools": tools,
        "rubric": [task.rubric.version, task.rubric.content_hash]}
    if caps.version != "1":  # (absent for version 1: the keys of runs stored before versions existed stay valid)
        key["provider"] = caps.version
    if not caps.reads_prose:
        key["facts"] = facts.model_dump(mode="json") if facts is not None else None
    return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()


def local_cache_file(key: str) -> Path:
    """Deterministic, free judges' runs are also kept in the user cache, across arenas."""
    from harness.model import cache_dir

    return cache_dir() / "local-judges" / f"{key}.json"


class PanelResult(BaseModel):
    note: str
    local: bool
    outcomes: list[JudgeOutcome]
    tie_break: TieBreakDecision
    usage: Usage
    corpus: list[str] = Field(default_factory=list)
    verdicts: int = 0  # how many judge runs produced a verdict
    no_verdict: str | None = None  # set when no configured judge produced a verdict: why, judge by judge


def default_provider(spec: JudgeSpec, inputs: JudgeInputs, http_client: Any = None) -> JudgeProvider:
    """The provider client for a judge, from the registry; providers without an HTTP API take the inputs."""
    cls: Any = registry.provider_class(spec.provider)
    if registry.capabilities(spec.provider).embedded:
        return cls(inputs)
    return cls(base_url=spec.base_url, http_client=http_client, timeout=spec.timeout)


@dataclass
class PanelRunner:
    """Runs a resolved panel on one submission. ``make_provider`` maps a spec to its client (tests inject theirs)."""

    inputs: JudgeInputs
    rubric: Rubric
    author_family: str
    store: Any  # reviewbench.store.Store, or None for no caching
    make_provider: Callable[[JudgeSpec, JudgeInputs], Any] = default_provider
    make_web: Callable[[], WebSearch | None] = WebSearch
    family_offsets: dict[str, dict[str, float]] | None = None
    replay: bool = True  # False (`review --fresh judges`): query every judge again; the new calls replace the old
    progress: Callable[[str], None] | None = None  # live lines: "waiting for judge X (N s)"
    _providers: dict[str, Any] = field(default_factory=dict)

    def provider(self, spec: JudgeSpec) -> JudgeProvider:
        key = json.dumps(spec.model_dump(mode="json", exclude={"samples"}), sort_keys=True)
        if key not in self._providers:
            self._providers[key] = self.make_provider(spec, self.inputs)
        return self._providers[key]

    def task(self, spec: JudgeSpec, role: Role, judge_id: str, sample: int = 0, variant: str = "") -> JudgeTask:
        caps = registry.capabilities(spec.provider)
        tools = spec.output == "tools"
        bare = JudgeTask(judge_id=judge_id, spec=spec, role=role, sample=sample, variant=variant, rubric=self.rubric,
                         system="", user="")
        web = spec.web_search and (caps.server_search or (caps.client_search and tools))
        return bare.model_copy(update={"system": system_prompt(self.rubric, self.inputs, web, tools),
                                       "user": user_prompt(self.inputs, tools)})

    async def run_one(self, task: JudgeTask) -> JudgeOutcome:
        """One judge run; whatever goes wrong is recorded on its outcome, never raised to the other judges."""
        try:
            return await self._run_one(task)
        except Exception as e:  # a bug or a broken cache entry for this judge must not end the panel
            return JudgeOutcome(judge_id=task.judge_id, family=task.spec.family, provider=task.spec.provider,
                                model=task.spec.model, local=False, role=task.role, error=describe_error(e))

    async def _run_one(self, task: JudgeTask) -> JudgeOutcome:
        spec = task.spec
        caps = registry.capabilities(spec.provider)
        tools_sig = [t.__dict__ for t in tool_specs(self.rubric, spec.web_search, submit=not caps.scores_directly)]
        key = call_key(task, tools_sig, self.inputs.facts)
        if self.store is not None and self.replay:
            hit = self.store.get_judge_call(key)
            if hit is not None:
                out = JudgeOutcome.model_validate(hit["response"]["outcome"])
                return out.model_copy(update={"cached": True})
        local_file = local_cache_file(key) if caps.deterministic and caps.free else None
        if local_file is not None and local_file.is_file() and self.replay:  # deterministic: the same prompt gives the same scores
            out = JudgeOutcome.model_validate_json(local_file.read_text())
            self._store(key, task, out, [])
            return out.model_copy(update={"cached": True})
        provider = self.provider(spec)
        web = self.make_web() if can_web_search(task, provider) and not caps.server_search else None
        toolbox = ToolBox(inputs=self.inputs, web=web)
        loop = Loop(provider=provider, task=task, toolbox=toolbox, inputs=self.inputs, progress=self.progress)
        try:
            out = await loop.run()
        finally:
            if web is not None:
                await web.aclose()
        if out.verdict is not None:  # only real verdicts are worth replaying
            self._store(key, task, out, loop.exchanges)
            if local_file is not None:
                atomic_write_text(local_file, out.model_dump_json())
        return out

    def _store(self, key: str, task: JudgeTask, out: JudgeOutcome, exchanges: list[dict[str, Any]]) -> None:
        """The judge-call store keeps the outcome and the raw exchanges (request and response bodies)."""
        if self.store is None:
            return
        self.store.put_judge_call(key, task.spec.provider, task.spec.model,
                                  {"judge_id": task.judge_id, "role": task.role, "sample": task.sample},
                                  {"outcome": out.model_dump(mode="json"), "exchanges": exchanges},
                                  out.usage.input_tokens, out.usage.output_tokens, out.usage.cost_usd or 0.0)

    async def run_judge(self, spec: JudgeSpec, role: Role, judge_id: str, variant: str = "") -> JudgeOutcome:
        """One judge, ``spec.samples`` times; several samples are merged per criterion by their median."""
        runs = await asyncio.gather(*(self.run_one(self.task(spec, role, judge_id, s, variant))
                                      for s in range(spec.samples)))
        return merge_samples(list(runs))

    async def run(self, panel: ResolvedPanel) -> PanelResult:
        primaries = [s for s in panel.judges if s.role == "primary"]
        advisors = [s for s in panel.judges if s.role == "advisory"]
        if not primaries:
            raise ValueError("a panel needs a counted judge")
        counted = primaries[:2]
        ids = [judge_name(s) for s in counted + advisors]
        if len(set(ids)) < len(ids):
            ids = [f"{x}-{i + 1}" for i, x in enumerate(ids)]
        roles: list[Role] = [*(["primary"] * len(counted)), *(["advisory"] * len(advisors))]  # type: ignore[list-item]
        outcomes = list(await asyncio.gather(*(self.run_judge(s, r, i) for s, r, i in
                                               zip(counted + advisors, roles, ids))))
        tie = TieBreakDecision(needed=False, reasons=[])
        verdicts = [o.verdict for o in outcomes[:len(counted)] if o.verdict is not None]
        if len(counted) == 2 and len(verdicts) == 2:
            tie = decide_tie_break(verdicts[0], verdicts[1], self.rubric, self.author_family, self.family_offsets)
            if tie.needed:
                spec = next((s for s in primaries if s.family == tie.family), counted[0])
                third_id = f"{judge_name(spec)}-tiebreak"
                # a different run of the same family: the next sample, and for a deterministic provider its variant
                variant = registry.capabilities(spec.provider).tie_break_variant
                outcomes.append(await self.run_judge(spec, "tie_break", third_id, variant))
        elif len(counted) == 2:
            missing = [o.judge_id for o in outcomes[:2] if o.verdict is None]
            tie = TieBreakDecision(needed=False, reasons=[f"no verdict from {', '.join(missing)}: no tie-break "
                                                          "possible"])
        usage = Usage()
        for o in outcomes:
            usage = usage.add(o.usage)
        corpus = self.inputs.corpus() + [c.result for o in outcomes for c in o.tool_calls]
        n = sum(1 for o in outcomes if o.verdict is not None and o.role != "advisory")
        none = None if n else "no counted judge produced a verdict: " + "; ".join(
            f"{o.judge_id}: {o.error or 'no verdict'}" for o in outcomes if o.role != "advisory")
        return PanelResult(note=panel.note, local=panel.local, outcomes=outcomes, tie_break=tie, usage=usage,
                           corpus=corpus, verdicts=n, no_verdict=none)


def judge_name(spec: JudgeSpec) -> str:
    """A judge's short name in reports and tables: its family and the model's own name, without the repository
    or folder a server or a path puts before it (``qwen-Qwen3-8B``, not ``qwen-Qwen/Qwen3-8B``;
    ``meta-llama-3.1-8b-q4`` for ``/models/gguf/llama-3.1-8b-q4.gguf``). The model as configured stays in the
    outcome's ``model``."""
    model = spec.model.rstrip("/").rsplit("/", 1)[-1] or spec.model
    for ext in (".gguf", ".safetensors", ".bin", ".pt"):
        model = model.removesuffix(ext)
    return f"{spec.family}-{model}"


def merge_samples(runs: list[JudgeOutcome]) -> JudgeOutcome:
    if len(runs) == 1:
        return runs[0]
    good: list[JudgeVerdict] = [r.verdict for r in runs if r.verdict is not None]
    base = runs[0].model_copy(deep=True)
    usage = Usage()
    for r in runs:
        usage = usage.add(r.usage)
    base.usage = usage
    base.tool_calls = [c for r in runs for c in r.tool_calls]
    base.searches = [q for r in runs for q in r.searches]
    base.reminders = [m for r in runs for m in r.reminders]
    base.cached = all(r.cached for r in runs)
    if not good:
        return base
    v = good[0].model_copy(deep=True)
    for cid in v.scores:
        v.scores[cid].score = statistics.median(g.scores[cid].score for g in good)
        v.scores[cid].rationale = f"median of {len(good)} samples; first: {v.scores[cid].rationale}"
    counts: dict[str, list[FlagClaim]] = {}
    for g in good:
        for f in {f.flag: f for f in g.flags}.values():
            counts.setdefault(f.flag, []).append(f)
    v.flags = [fs[0] for fs in counts.values() if len(fs) * 2 > len(good)]
    base.verdict = v
    base.error = None
    return base
