"""The claim ledger stage (formerly named "harness"): every number the submission claims (claims.json and the
description) re-run by the trusted harness on the public dev split (``reviewbench.evidence.ledger``), decided
reproduced / contradicted / unverifiable; a contradicted claim raises FABRICATED_EVIDENCE.

The re-run's size is the reviewer's: at least ``[harness] claim_items`` items per seed and ``claim_seeds``
disjoint seeds (the tolerance comes from their spread); a claim that says it used more items raises the count,
never lowers it.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from reviewbench.evidence.claims import LedgerEntry, from_claims_json, from_description
from reviewbench.evidence.ledger import run_claims
from reviewbench.findings import Finding
from reviewbench.flags.fabricated_evidence import contradicted_claim_flags
from reviewbench.pipeline import Stage, StageContext, StageKey, StageOutput, config_tables
from reviewbench.stages.bundle import BUNDLE
from reviewbench.verdict import FlagClaim


class LedgerData(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ledger: list[LedgerEntry]
    digest: list[str]
    candidate_flags: list[FlagClaim]


LEDGER = StageKey("ledger", LedgerData)


def ledger_stage(ctx: StageContext) -> StageOutput[LedgerData]:
    b = ctx.bundle
    claims = from_claims_json(b.claims, b.board) + from_description(b.description.text, b.board)
    if not claims:
        return StageOutput(status="ok", summary="no numeric claims to verify (the description and claims.json state "
                                                 "no metric with a value and a budget)",
                           data=LedgerData(ledger=[], digest=["claim ledger: the submission claims no numbers"],
                                           candidate_flags=[]))
    hs = ctx.arena.config.harness
    entries = run_claims(claims, b.path, ctx.arena, ctx.harness())
    flags = contradicted_claim_flags(entries)
    findings = [Finding(code=f"ledger.claim_{e.status}", location=e.claim.source,
                        severity={"reproduced": "info", "contradicted": "error", "unverifiable": "warning"}[e.status],
                        message=f"{e.claim.text[:160]} — {e.reason}") for e in entries]
    counts = {s: sum(e.status == s for e in entries) for s in ("reproduced", "contradicted", "unverifiable")}
    summary = f"{len(entries)} claims: " + ", ".join(f"{v} {k}" for k, v in counts.items() if v)
    digest = [f"claim ledger (harness re-runs, dev split, {hs.claim_seeds} seeds of at least {hs.claim_items} items): "
              f"{summary}"]
    digest += [f"- {e.status}: \"{e.claim.text[:120]}\" — {e.reason}" for e in entries]
    return StageOutput(status="ok", summary=summary, findings=findings,
                       data=LedgerData(ledger=entries, digest=digest, candidate_flags=flags))


STAGE = Stage(LEDGER, "Claim ledger", (BUNDLE,), ledger_stage, config_inputs=config_tables("boards", "harness"),
              code=("reviewbench.evidence.ledger", "reviewbench.evidence.claims", "reviewbench.flags.fabricated_evidence",
                    "reviewbench.benchmark", "reviewbench.executor", "harness"), waits_on_workers=True)
