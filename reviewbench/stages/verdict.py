"""The verdict stage: the judges' verdicts aggregated by the rubric, the tie-break decision and the standing flags
(the machine-raised candidate flags of the deterministic stages among them): pure code (``reviewbench.verdict``)."""

from __future__ import annotations

from pydantic import ConfigDict

from reviewbench.findings import Finding
from reviewbench.pipeline import Stage, StageContext, StageKey, StageOutput
from reviewbench.stages.audit import AUDIT
from reviewbench.stages.bundle import BUNDLE
from reviewbench.stages.evidence import EVIDENCE
from reviewbench.stages.judges import JUDGES, family_offsets
from reviewbench.stages.ledger import LEDGER
from reviewbench.verdict import FinalVerdict, FlagClaim, decide


class VerdictData(FinalVerdict):
    model_config = ConfigDict(extra="forbid")

    bundle_errors: list[Finding]


VERDICT = StageKey("verdict", VerdictData)


def candidate_flags(ctx: StageContext) -> list[FlagClaim]:
    """Machine-raised flags of the deterministic stages, for the verdict."""
    flags: list[FlagClaim] = []
    audit, evidence, ledger = ctx.get(AUDIT), ctx.get(EVIDENCE), ctx.get(LEDGER)
    for d in (audit, evidence, ledger):
        if d is not None:
            flags += d.candidate_flags
    return flags


def verdict_stage(ctx: StageContext) -> StageOutput[VerdictData]:
    judges = ctx.get(JUDGES)
    verdicts = judges.verdicts if judges else []
    final = decide(verdicts, ctx.rubric, ctx.author_family, candidate_flags(ctx),
                   corpus=judges.corpus if judges else None, family_offsets=family_offsets(ctx))
    bundle = ctx.report(BUNDLE)
    errors = [f for f in bundle.findings if f.severity == "error"] if bundle is not None else []
    if final.status == "no_judges":
        summary = "no verdict on quality: no judge ran"
    else:
        scores = ", ".join(f"{k} {v:g}" for k, v in final.scores.items() if v is not None)
        summary = f"{final.status}: {scores}; judge points {final.judge_points:g}"
    if final.standing_flags:
        summary += "; flags: " + ", ".join(f.flag for f in final.standing_flags)
    return StageOutput(status="ok", summary=summary,
                       data=VerdictData(**final.model_dump(), bundle_errors=errors))


STAGE = Stage(VERDICT, "Verdict", (BUNDLE, AUDIT, EVIDENCE, LEDGER, JUDGES), verdict_stage,
              extra_inputs=family_offsets, code=("reviewbench.verdict",))
