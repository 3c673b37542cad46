"""The pipeline's harness-verification stage: the claim ledger, re-run by the trusted harness (the submission's
method in its own sandboxed process) on the public dev split.

The re-run's size is the reviewer's: at least ``[harness] claim_items`` items per seed and ``claim_seeds``
disjoint seeds (the tolerance comes from their spread); a claim that says it used more items raises the count,
never lowers it.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from harness.results import RunConfig
from reviewbench.arena import Arena
from reviewbench.benchmark import run_harness
from reviewbench.contracts import LedgerData
from reviewbench.evidence.claims import (METRICS, LedgerClaim, LedgerEntry, decide_outcomes, failed_elsewhere,
                                         from_claims_json, from_description, per_seed_outcomes, unverifiable)
from reviewbench.findings import Finding
from reviewbench.flags.fabricated_evidence import contradicted_claim_flags
from reviewbench.pipeline import StageContext, StageOutput

MAX_CLAIM_ITEMS = 200  # a claim asking for more items is re-run at this size (and says so)


def run_claims(claims: list[LedgerClaim], method_dir: Path, arena: Arena, executor: Any = None) -> list[LedgerEntry]:
    hs = arena.config.harness
    boards = {b.name: b for b in arena.config.boards}
    entries: list[LedgerEntry] = []
    groups: dict[tuple[str, str | None, int, int | None], list[LedgerClaim]] = defaultdict(list)
    for c in claims:
        why = unverifiable(c, set(boards))
        if why:
            entries.append(LedgerEntry(claim=c, status="unverifiable", reason=why))
        else:
            assert c.board is not None  # unverifiable() refuses claims without a board
            items = min(MAX_CLAIM_ITEMS, max(hs.claim_items, c.items or 0))
            groups[(c.board, c.task, items, c.length)].append(c)
    for (board_name, task, n_items, length), group in groups.items():
        entries += _run_group(group, boards[board_name], task, n_items, length, method_dir, arena, executor)
    order = {id(c): i for i, c in enumerate(claims)}
    return sorted(entries, key=lambda e: order.get(id(e.claim), 0))


def _run_group(group: list[LedgerClaim], board: Any, task: str | None, n_items: int, length: int | None,
               method_dir: Path, arena: Arena, executor: Any) -> list[LedgerEntry]:
    """One re-run for the group's budgets. The method stops at its first error: a claim whose rows failed only
    because it had failed at another budget is re-run at its own budget alone."""
    from harness.sandbox import SandboxError

    hs = arena.config.harness
    budgets = sorted({c.budget for c in group if c.budget is not None})
    cfg = RunConfig(board=board.harness_board, methods=[str(method_dir.resolve())], budgets=budgets,
                    tasks=[task] if task else None, split="dev", items=n_items, length=length,
                    seeds=hs.claim_seeds, model=board.model_spec, threads=hs.threads, limits=hs.method_limits())
    try:
        result = (executor.run_harness if executor is not None else run_harness)(cfg, hs.worker_wall_hours * 3600)
    except (SandboxError, FileNotFoundError, ValueError) as e:
        return [LedgerEntry(claim=c, status="unverifiable", reason=f"the harness run failed: {e}") for c in group]
    name = next(iter(result.code_hashes), None)
    entries: list[LedgerEntry] = []
    elsewhere = [c for c in group if failed_elsewhere(result, name, c)]
    for b in sorted({c.budget for c in elsewhere if c.budget is not None}):
        if len(budgets) > 1:
            entries += _run_group([c for c in elsewhere if c.budget == b], board, task, n_items, length, method_dir,
                                  arena, executor)
    for c in group:
        if c in elsewhere and len(budgets) > 1:
            continue
        outcomes = per_seed_outcomes(result, name, c)
        if outcomes is None:
            entries.append(LedgerEntry(claim=c, status="unverifiable",
                                       reason=f"the re-run measured no {METRICS.get(c.metric, c.metric)} at this "
                                              f"budget on board {c.board}"))
        else:
            entries.append(decide_outcomes(c, outcomes, n_items))
    return entries


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
    findings = [Finding(code=f"harness.claim_{e.status}", location=e.claim.source,
                        severity={"reproduced": "info", "contradicted": "error", "unverifiable": "warning"}[e.status],
                        message=f"{e.claim.text[:160]} — {e.reason}") for e in entries]
    counts = {s: sum(e.status == s for e in entries) for s in ("reproduced", "contradicted", "unverifiable")}
    summary = f"{len(entries)} claims: " + ", ".join(f"{v} {k}" for k, v in counts.items() if v)
    digest = [f"claim ledger (harness re-runs, dev split, {hs.claim_seeds} seeds of at least {hs.claim_items} items): "
              f"{summary}"]
    digest += [f"- {e.status}: \"{e.claim.text[:120]}\" — {e.reason}" for e in entries]
    return StageOutput(status="ok", summary=summary, findings=findings,
                       data=LedgerData(ledger=entries, digest=digest, candidate_flags=flags))
