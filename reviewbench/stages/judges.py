"""The judges stage: the panel's inputs gathered from the upstream stages (the board standing among them), the
panel run (``reviewbench.judges``), its result as stage data."""

from __future__ import annotations

import asyncio
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from reviewbench.evidence.facts import BoardFact, BudgetGain, EvidenceFacts
from reviewbench.evidence.gather import gather_facts
from reviewbench.findings import Finding
from reviewbench.judges.base import JudgeOutcome, Usage
from reviewbench.judges.inputs import EarlierRef, JudgeInputs, build_inputs
from reviewbench.judges.panel import PanelRunner, default_provider, resolve_panel
from reviewbench.judges.sanitize import InjectionFinding
from reviewbench.offsets import load_offsets
from reviewbench.pipeline import Stage, StageContext, StageKey, StageOutput, StageReport
from reviewbench.stages.audit import AUDIT
from reviewbench.stages.benchmark import BENCHMARK, BenchmarkData
from reviewbench.stages.bundle import BUNDLE
from reviewbench.stages.evidence import EVIDENCE
from reviewbench.stages.ledger import LEDGER
from reviewbench.stages.standing import STANDING, StandingData
from reviewbench.verdict import JudgeVerdict, TieBreakDecision


class JudgesData(BaseModel):
    model_config = ConfigDict(extra="forbid")

    panel_note: str
    local: bool
    verdicts: list[JudgeVerdict]
    criteria: list[str]
    outcomes: list[JudgeOutcome]
    tie_break: TieBreakDecision
    usage: Usage
    corpus: list[str]
    injection: list[InjectionFinding]
    benchmark_digest: list[str] = Field(default_factory=list)
    facts: EvidenceFacts | None = None  # what the evidence judge scored from


JUDGES = StageKey("judges", JudgesData)


def family_offsets(ctx: StageContext) -> dict[str, dict[str, float]] | None:
    """The panel's calibrated per-family offsets, when the rubric subtracts them and the arena names a report."""
    if not ctx.rubric.tie_break.subtract_family_offsets or not ctx.arena.config.panel.calibration:
        return None
    return load_offsets(ctx.arena.root / ctx.arena.config.panel.calibration)


def panel_inputs(ctx: StageContext) -> dict[str, Any]:
    """What decides the panel besides the bundle: which judges actually run (API keys present or not), and the
    family offsets the tie-break subtracts."""
    return {**resolve_panel(ctx.arena.config.panel).model_dump(mode="json"), "offsets": family_offsets(ctx)}


def _stage_lines(name: str, report: StageReport[Any] | None, digest: list[str]) -> list[str]:
    if report is None:
        return []
    if report.status != "ok":
        return [f"{name}: not run — {report.reason}"]
    return [f"{name}: {report.summary}", *[f"- {f.message}" for f in report.findings[:20]], *digest]


def evidence_lines(ctx: StageContext) -> list[str]:
    ev, ledger = ctx.get(EVIDENCE), ctx.get(LEDGER)
    return (_stage_lines("evidence", ctx.report(EVIDENCE), ev.digest if ev else [])
            + _stage_lines("claim ledger", ctx.report(LEDGER), ledger.digest if ledger else []))


class BenchmarkText(NamedTuple):
    """The benchmark as the judges read it: the arena's numbers (trusted), and what others wrote that comes with
    them: the method's own error text and the board's earlier entries, named by their folders (untrusted)."""

    lines: list[str]
    method_errors: list[str]
    board_entries: list[str]


def benchmark_lines(ctx: StageContext, bench: BenchmarkData | None, standing: StandingData | None) -> BenchmarkText:
    """The arena's own measurement against the board before it (the standing stage's), as the judges read it
    (effectiveness is judged from this, not from claims)."""
    board = ctx.arena.config.board(ctx.bundle.board) if ctx.bundle.board else None
    if board is None:
        return BenchmarkText(["the submission names no board of this arena: it was not measured"], [], [])
    report = ctx.report(BENCHMARK)
    if bench is None:  # why may quote the method (its failure): it goes with the untrusted text
        return BenchmarkText([f"not measured on board {board.name} (why: below, in the method's own error text)"],
                             [report.reason if report and report.reason else "the benchmark did not run"], [])
    m = standing.measurement if standing is not None else None
    if standing is None or m is None:
        why = ctx.report(STANDING)
        return BenchmarkText([f"measured on board {board.name}, but the board standing was not computed ("
                              f"{why.reason if why is not None and why.reason else 'not run'})"], [], [])
    unit = "tokens per layer" if board.budget_kind == "tokens" else "of the KV cache"
    budgets = ", ".join(f"{b.budget:g}" if board.budget_kind == "tokens" else f"{100 * b.budget:g} %"
                        for b in m.per_budget)
    c = m.components
    w = m.weights
    lines = [f"Overall {m.overall:.3f} on board {board.name}'s hidden test split ({m.n_items} items; budgets {budgets} "
             f"{unit}); Overall = {w.accuracy:g} x accuracy + {w.memory:g} x memory + {w.speed:g} x speed + "
             f"{w.overhead:g} x overhead" + (f" + {w.length:g} x length" if w.length else "") + ", each vs the full cache",
             f"components (mean): accuracy {c.accuracy:.3f} ({m.accuracy_basis}, normalised to the full cache), "
             f"memory saved {c.memory:.3f}, speed {c.speed:.3f}, overhead term {c.overhead:.3f}, length {c.length:.3f}",
             "per budget: " + "; ".join(f"{b.budget:g}: Overall {b.overall:.3f}, accuracy {b.components.accuracy:.3f}"
                                        for b in m.per_budget)]
    errors: list[str] = []
    if m.errors:
        lines.append(f"the method failed at {sum(b.errors > 0 for b in m.per_budget)} of {len(m.per_budget)} budgets "
                     "(scored 0 there); its error text is shown apart")
        errors = [e[:300] for e in m.errors[:4]]
    prior = standing.board_entries()
    best = standing.best_entry()
    entries: list[str] = []
    if best is None:
        lines.append("the board has no measured entry to compare with yet")
    else:
        lines.append(f"the board's best before this submission has Overall {best.mean:.3f} (its id with the entries)")
        entries = [f"{'best: ' if e.id == best.id else ''}{e.id}: Overall {e.mean:.3f}"
                   + (" (flagged)" if e.flagged else "") for e in sorted(prior, key=lambda e: -e.mean)[:6]]
    return BenchmarkText(lines, errors, entries)


def board_fact(ctx: StageContext, bench: BenchmarkData | None,
               standing: StandingData | None) -> tuple[BoardFact | None, str]:
    """The measurement against the board's entries (the standing stage's), for the evidence judge (and why there is
    none)."""
    board = ctx.arena.config.board(ctx.bundle.board) if ctx.bundle.board else None
    if board is None:
        return None, "the submission names no board of this arena"
    if bench is None:
        report = ctx.report(BENCHMARK)
        return None, report.reason if report is not None and report.reason else "the benchmark did not run"
    if standing is None or standing.measurement is None:
        why = ctx.report(STANDING)
        return None, f"the board standing was not computed ({why.reason if why is not None and why.reason else 'not run'})"
    best = standing.best_entry()
    baselines = {e.id: e.overall for e in standing.entries if e.kind == "baseline"}
    random = baselines.get("baseline:random")
    others = [v for k, v in baselines.items() if k != "baseline:random"]
    g = standing.gate
    overall_gain = BudgetGain(budget=0, gain=round(g.gain, 6), lower=round(g.lower, 6), upper=round(g.upper, 6)) \
        if g is not None and g.n_items else None
    return BoardFact(measurement=standing.measurement, best_id=best.id if best else None,
                     best_overall=best.mean if best else None, random_overall=random,
                     weakest_overall=min(others) if others else None, gains=standing.gains, overall_gain=overall_gain,
                     margin=standing.margin), ""


def facts_for(ctx: StageContext, bench: BenchmarkData | None, standing: StandingData | None) -> EvidenceFacts:
    bundle = ctx.get(BUNDLE)
    board, why = board_fact(ctx, bench, standing)
    names = {f"submission:{e.id}": [e.id] + ([e.short_name] if e.short_name else []) for e in ctx.earlier}
    return gather_facts(evidence=ctx.get(EVIDENCE), ledger=ctx.get(LEDGER),
                        sections_missing=bundle.sections_missing if bundle else [],
                        description=ctx.bundle.description.text, earlier_names=names, board=board, board_reason=why,
                        rules=ctx.rubric.evidence)


def judge_inputs(ctx: StageContext, show_evidence: bool = True) -> JudgeInputs:
    """Everything the panel is shown, from the upstream stages: each string a field of the prompt inventory."""
    b = ctx.bundle
    board = ctx.arena.config.board(b.board) if b.board else None
    audit_report = ctx.report(AUDIT)
    audit = ctx.get(AUDIT)
    bench = ctx.get(BENCHMARK)
    standing = ctx.get(STANDING)
    bench_lines = benchmark_lines(ctx, bench, standing)
    inputs = build_inputs(
        submission_id=b.id, board=board.name if board else None, board_setting=board.setting if board else "",
        method_src=b.method.source, description=b.description.text,
        audit_summary=audit_report.summary if audit is not None and audit_report is not None else None,
        audit_findings=[f.model_dump() for f in audit_report.findings] if audit_report is not None else [],
        evidence_lines=evidence_lines(ctx) if show_evidence else [], benchmark_lines=bench_lines.lines,
        method_errors=bench_lines.method_errors, board_entries=bench_lines.board_entries,
        earlier=[EarlierRef(id=e.id, agent=e.agent, board=e.board, short_name=e.short_name, path=e.path)
                 for e in ctx.earlier],
        log_dir=ctx.arena.agent_logs(b.agent), short_name=b.meta.short_name, agent=b.meta.agent,
        meta_board=b.board if board is None else None)
    return inputs.model_copy(update={"facts": facts_for(ctx, bench, standing)})


def judges_stage(ctx: StageContext, make_provider: Any = default_provider,
                 show_evidence: bool = True) -> StageOutput[JudgesData]:
    """``show_evidence=False`` (calibration of the LLM judges) keeps the machine evidence out of the prompts; the
    evidence judge still gets its measured facts, which are its only input."""
    inputs = judge_inputs(ctx, show_evidence)
    panel = resolve_panel(ctx.arena.config.panel)
    runner = PanelRunner(inputs=inputs, rubric=ctx.rubric, author_family=ctx.author_family, store=ctx.store,
                         make_provider=make_provider, family_offsets=family_offsets(ctx), replay=not ctx.fresh_judges,
                         progress=ctx.progress)
    result = asyncio.run(runner.run(panel))
    findings = [Finding(code="judges.injection", severity="warning", location=f.location,
                        message=f"hidden instruction to the reviewer ({f.kind}, {f.chars} characters, sha256 "
                                f"{f.sha256[:12]}) removed before judging")
                for f in inputs.injection]
    for o in result.outcomes:
        if o.verdict is None:
            findings.append(Finding(code="judges.no_verdict", severity="error",
                                    message=f"judge {o.judge_id} gave no verdict: {o.error}"))
        for bad in o.invalid_outputs:
            findings.append(Finding(code="judges.invalid_output", severity="info",
                                    message=f"judge {o.judge_id}: invalid output retried: {bad}"))
    verdicts = [o.verdict for o in result.outcomes if o.verdict is not None]
    if result.no_verdict:
        return StageOutput(status="failed", reason=result.no_verdict, findings=findings)
    cost = result.usage.cost_usd
    summary = (f"{len(verdicts)} judge runs ({', '.join(o.judge_id + (' (cached)' if o.cached else '') for o in result.outcomes)}); "
               f"tie-break {'run: ' + '; '.join(result.tie_break.reasons) if result.tie_break.needed else 'not needed'}; "
               f"{result.usage.input_tokens} in / {result.usage.output_tokens} out tokens, "
               + ("cost unknown" if cost is None else f"${cost:.4f}"))
    data = JudgesData(panel_note=result.note, local=result.local, verdicts=verdicts,
                      criteria=[c.id for c in ctx.rubric.criteria],
                      outcomes=result.outcomes,
                      tie_break=result.tie_break, usage=result.usage, corpus=result.corpus,
                      injection=inputs.injection, benchmark_digest=inputs.benchmark_digest, facts=inputs.facts)
    return StageOutput(status="ok", summary=summary, findings=findings, data=data)


STAGE = Stage(JUDGES, "Judges", (BUNDLE, AUDIT, EVIDENCE, LEDGER, BENCHMARK, STANDING), judges_stage,
              extra_inputs=lambda c: {"panel": panel_inputs(c)},
              code=("reviewbench.judges", "reviewbench.evidence.gather", "reviewbench.evidence.facts",
                    "reviewbench.evidence.judge", "reviewbench.offsets", "reviewbench.verdict",
                    "reviewbench/templates/judge_*"))
