"""The claim ledger: every claimed number re-run by the trusted harness (the submission's method in its own
sandboxed process) on the public dev split (the stage: ``reviewbench.stages.ledger``).

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
from reviewbench.evidence.claims import (METRICS, LedgerClaim, LedgerEntry, decide_outcomes, failed_elsewhere,
                                         per_seed_outcomes, unverifiable)

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
