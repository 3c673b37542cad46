"""Runs a judge panel over the calibration suite, case by case, through the real review stages.

Each case is reviewed like a submission (bundle -> audit -> evidence -> harness -> judges -> verdict) in the
calibration arena, with the panel under test in place of the arena's. On the blinded baselines (and the
canary, which must be comparable with its clean twin) the machine evidence is withheld from the judges, so
their novelty scores and named sources measure the judges, not the code-similarity stage; the evidence-only
row is computed from the same evidence separately. Every stage result and judge call is stored, so a rerun
replays what was already paid for. The answer key is not read here.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from reviewbench.arena import Arena, JudgeSpec, Panel, load_arena
from reviewbench.calibrate.suite import Case
from reviewbench.errors import UserError
from reviewbench.judges.panel import KEY_ENV, default_provider
from reviewbench.pipeline import Stage, StageContext, run_stages
from reviewbench.review import open_review
from reviewbench.stages import STAGES
from reviewbench.stages.audit import AUDIT
from reviewbench.stages.evidence import EVIDENCE
from reviewbench.stages.judges import JUDGES, JudgesData, judges_stage
from reviewbench.stages.ledger import LEDGER
from reviewbench.stages.verdict import VERDICT
from reviewbench.store import Store

WITHHELD = "withheld from the judges during calibration (the evidence-only row reports it)"
EVIDENCE_SHOWN = {"fabricated_numbers", "undisclosed_copy", "test_split_read"}  # plants detected through evidence


class JudgeRecord(BaseModel):
    judge_id: str
    family: str
    model: str
    role: str
    scores: dict[str, float] = Field(default_factory=dict)
    flags: list[str] = Field(default_factory=list)
    prior_work: list[dict[str, Any]] = Field(default_factory=list)  # title, arxiv_id (the first three)
    error: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0
    seconds: float = 0.0
    cached: bool = False


class EvidenceRecord(BaseModel):
    code: list[dict[str, Any]] = Field(default_factory=list)  # reference, jaccard, containment (top 3)
    behaviour: list[dict[str, Any]] = Field(default_factory=list)  # reference, jaccard, rank_corr (top 3)
    prior_art: list[dict[str, Any]] = Field(default_factory=list)  # short_name, title, arxiv (top 3)
    candidate_flags: list[str] = Field(default_factory=list)  # from the audit, evidence and claim-ledger stages
    divergence: str | None = None  # bank vs scored calls, when the case was measured on a board (``with_benchmark``)
    error: str | None = None


class CaseResult(BaseModel):
    code: str
    evidence_to_judges: bool
    judges: list[JudgeRecord] = Field(default_factory=list)
    panel_scores: dict[str, float | None] = Field(default_factory=dict)
    panel_flags: list[str] = Field(default_factory=list)
    tie_break: bool = False
    injection_findings: int = 0
    evidence: EvidenceRecord | None = None
    stage_errors: list[str] = Field(default_factory=list)
    seconds: float = 0.0


def check_keys(specs: list[JudgeSpec], env: dict[str, str]) -> None:
    """Calibration never falls back to another panel: a missing key is the user's to fix."""
    missing = sorted({KEY_ENV[s.provider] for s in specs if s.provider in KEY_ENV and not env.get(KEY_ENV[s.provider])})
    if missing:
        raise UserError(None, f"this panel needs {', '.join(missing)} in the environment (or run --panel local)")


def calibration_stages(show_evidence: bool, make_provider: Callable, with_evidence: bool,
                       with_benchmark: bool = False) -> list[Stage]:
    """The review's stages for calibration: no standing or points (a blinded case is on no board's history), and no
    benchmark unless asked (``with_benchmark``: the case is measured on its board's test split in the calibration
    arena, so its behaviour where it is scored feeds the evidence as in a review)."""
    stages: list[Stage] = []
    for s in STAGES:
        if s.name in ("points", "standing") or (s.name == "benchmark" and not with_benchmark):
            continue
        if s.name in ("evidence", "ledger") and not with_evidence:
            continue
        if s.name == "judges":  # the same stage (its code, its version), with the calibration's providers
            s = dataclasses.replace(
                s, run=lambda c: judges_stage(c, make_provider=make_provider, show_evidence=show_evidence),
                revision="" if show_evidence else "blind")
        stages.append(s)
    return stages


def _evidence_record(ctx: StageContext) -> EvidenceRecord:
    ctx.current = None  # read after the run: every stage's output is visible
    found = [ctx.get(AUDIT), ctx.get(EVIDENCE), ctx.get(LEDGER)]
    flags = sorted({f.flag for d in found if d is not None for f in d.candidate_flags})
    ev_report, ev = ctx.report(EVIDENCE), ctx.get(EVIDENCE)
    if ev is None:
        return EvidenceRecord(candidate_flags=flags, error=ev_report.reason if ev_report is not None else "not run")
    return EvidenceRecord(
        code=[{"reference": m.reference, "jaccard": m.jaccard, "containment": m.containment,
               "implements": m.implements} for m in ev.code[:3]],
        behaviour=[m.model_dump() for m in (ev.behaviour.matches if ev.behaviour else [])[:3]],
        prior_art=[{"short_name": h.short_name, "title": h.title, "arxiv": h.arxiv} for h in ev.prior_art.hits[:3]],
        candidate_flags=flags,
        divergence=ev.behaviour.divergence.summary if ev.behaviour and ev.behaviour.divergence else None)


@dataclasses.dataclass(frozen=True)
class Hooks:
    """Live progress: a case starts, a stage starts or ends, a long stage says how far it got, a case ends."""

    case_start: Callable[[int, int, str], None] | None = None  # (index from 1, number of cases, code)
    stage_start: Callable[[Any], None] | None = None
    stage_done: Callable[[Any], None] | None = None
    line: Callable[[str], None] | None = None
    case_done: Callable[[CaseResult], None] | None = None


def run_case(arena: Arena, case_dir: Path, store: Store, stages: list[Stage], show_evidence: bool,
             with_evidence: bool, hooks: Hooks = Hooks(), executor: Any = None) -> CaseResult:
    t0 = time.perf_counter()
    # opened as every review is; a blinded case is on no board and has no history (no earlier submissions)
    ctx = open_review(arena, case_dir, executor, store=store, progress=hooks.line, history=False)
    bundle = ctx.bundle
    store.upsert_submission(bundle.id, bundle.agent, bundle.board, bundle.submitted_at, bundle.content_hash, bundle.path)
    reports = run_stages(stages, ctx, on_start=hooks.stage_start, on_stage=hooks.stage_done)
    res = CaseResult(code=bundle.id, evidence_to_judges=show_evidence,
                     stage_errors=[f"{r.name}: {r.reason}" for r in reports if r.status == "failed"])
    judges: JudgesData | None = ctx.get(JUDGES)
    replayed = any(r.name == "judges" and r.cached for r in reports)  # the whole stage came from the store
    for o in judges.outcomes if judges else []:
        v = o.verdict
        res.judges.append(JudgeRecord(
            judge_id=o.judge_id, family=o.family, model=o.model, role=o.role,
            scores={k: s.score for k, s in v.scores.items()} if v else {},
            flags=sorted({f.flag for f in v.flags}) if v else [],
            prior_work=[{"title": p.title, "arxiv_id": p.arxiv_id} for p in v.prior_work[:3]] if v else [],
            error=o.error, input_tokens=o.usage.input_tokens, output_tokens=o.usage.output_tokens,
            cost_usd=o.usage.cost_usd, seconds=o.seconds, cached=replayed or o.cached))
    res.tie_break = bool(judges and judges.tie_break.needed)
    res.injection_findings = len(judges.injection) if judges else 0
    verdict = ctx.get(VERDICT)
    res.panel_scores = dict(verdict.scores) if verdict else {}
    res.panel_flags = sorted({f.flag for f in verdict.standing_flags}) if verdict else []
    if with_evidence:
        res.evidence = _evidence_record(ctx)
    res.seconds = round(time.perf_counter() - t0, 2)
    return res


def run_suite(root: Path, cases: list[Case], specs: list[JudgeSpec], *, with_evidence: bool = True,
              evidence_to_judges: bool = False, make_provider: Callable = default_provider,
              on_case: Callable[[CaseResult], None] | None = None, hooks: Hooks = Hooks(),
              with_benchmark: bool = False) -> list[CaseResult]:
    base = load_arena(root)
    arena = base.model_copy(update={"config": base.config.model_copy(
        update={"panel": Panel(judges=specs, rubric=base.config.panel.rubric)})})
    out = []
    with Store(arena.store_path) as store:
        for n, case in enumerate(cases, 1):
            if hooks.case_start:
                hooks.case_start(n, len(cases), case.code)
            show = evidence_to_judges or case.plant in EVIDENCE_SHOWN
            stages = calibration_stages(show and with_evidence, make_provider, with_evidence, with_benchmark)
            folder = root / "blinded" / case.code
            if not folder.is_dir():
                raise UserError(folder, "missing: rebuild the suite with `review calibrate build`")
            r = run_case(arena, folder, store, stages, show and with_evidence, with_evidence, hooks)
            out.append(r)
            for done in (hooks.case_done, on_case):
                if done:
                    done(r)
    return out
