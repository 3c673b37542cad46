"""The pipeline's harness-verification stage: the claim ledger, run in the sandboxed harness."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict

from reviewbench.evidence.claims import (LedgerClaim, LedgerEntry, decide, from_claims_json, from_description,
                                         per_seed_values, unverifiable)
from reviewbench.findings import Finding
from reviewbench.pipeline import StageContext, StageOutput
from reviewbench.flags.fabricated_evidence import contradicted_claim_flags


def run_claims(claims: list[LedgerClaim], method_dir, boards: set[str], items: int, seeds: int) -> list[LedgerEntry]:
    from harness.evaluate import RunConfig
    from harness.model import resolve_model_path
    from harness.sandbox import Limits, SandboxError, run_worker

    entries: list[LedgerEntry] = []
    groups: dict[tuple, list[LedgerClaim]] = defaultdict(list)
    for c in claims:
        why = unverifiable(c, boards)
        if why:
            entries.append(LedgerEntry(claim=c, status="unverifiable", reason=why))
        else:
            groups[(c.board, c.task, c.items or items, c.length)].append(c)
    for (board, task, n_items, length), group in groups.items():
        cfg = RunConfig(board=board, methods=[str(method_dir.resolve())], budgets=sorted({c.budget for c in group}),
                        tasks=[task] if task else None, split="dev", items=n_items, length=length, seeds=seeds)
        try:
            result = run_worker(asdict(cfg), [method_dir.resolve()], [resolve_model_path(cfg.model)], Limits())
        except (SandboxError, FileNotFoundError) as e:
            entries += [LedgerEntry(claim=c, status="unverifiable", reason=f"the harness run failed: {e}") for c in group]
            continue
        name = next((m for m in {r["method"] for r in result["rows"]} if m != "full"), None)
        err = result.get("method_errors", {})
        for c in group:
            vals = per_seed_values(result, name, c) if name else []
            if not vals:
                why = "; ".join(f"{k}: {v}" for k, v in err.items()) or "no measurement for this budget/metric"
                entries.append(LedgerEntry(claim=c, status="unverifiable", reason=f"the re-run produced none: {why}"))
            else:
                entries.append(decide(c, vals, n_items))
    order = {id(c): i for i, c in enumerate(claims)}
    return sorted(entries, key=lambda e: order.get(id(e.claim), 0))


def ledger_stage(ctx: StageContext) -> StageOutput:
    b = ctx.bundle
    claims = from_claims_json(b.claims, b.board) + from_description(b.description.text, b.board)
    if not claims:
        return StageOutput(status="ok", summary="no numeric claims to verify (the description and claims.json state "
                                                 "no metric with a value and a budget)",
                           data={"ledger": [], "digest": ["claim ledger: the submission claims no numbers"]})
    hs = ctx.arena.config.harness
    entries = run_claims(claims, b.path, {bd.name for bd in ctx.arena.config.boards}, hs.claim_items, hs.claim_seeds)
    flags = contradicted_claim_flags(entries)
    findings = [Finding(code=f"harness.claim_{e.status}", location=e.claim.source,
                        severity={"reproduced": "info", "contradicted": "error", "unverifiable": "warning"}[e.status],
                        message=f"{e.claim.text[:160]} — {e.reason}") for e in entries]
    counts = {s: sum(e.status == s for e in entries) for s in ("reproduced", "contradicted", "unverifiable")}
    summary = f"{len(entries)} claims: " + ", ".join(f"{v} {k}" for k, v in counts.items() if v)
    digest = [f"claim ledger (harness re-runs, dev split, {hs.claim_seeds} seeds): {summary}"]
    digest += [f"- {e.status}: \"{e.claim.text[:120]}\" — {e.reason}" for e in entries]
    return StageOutput(status="ok", summary=summary, findings=findings,
                       data={"ledger": [e.model_dump() for e in entries], "digest": digest,
                             "candidate_flags": [f.model_dump(mode="json") for f in flags]})
