"""The review's stages, one module each, registered in one place in the order data flows:

    bundle -> audit -> benchmark -> evidence -> ledger -> standing -> judges -> verdict -> points (the report follows)

Each module is its stage's home: its output model (a closed pydantic model), its ``StageKey`` (the typed handle
other stages read it by), its run function (what it reads through ``ctx.get`` of a stage in its ``needs``, and how
it calls the domain code: ``reviewbench.evidence``, ``reviewbench.judges``, ``reviewbench.benchmark`` ...), the
inputs it hashes, and ``STAGE``. The names, the report's discriminated union and its JSON Schema, the lookups
and the CLI's ``--only``/``--skip``/``--rerun`` all derive from :data:`STAGES`. Domain code never imports this
package; the report, the leaderboard, the site and the CLI read it.

To add a stage: one module here (model, key, ``STAGE``) and its line in ``STAGES``.

A stage that cannot run here says so with its reason (status ``not_run``); it is never skipped silently and never
produces invented results.
"""

from __future__ import annotations

from typing import Any

from reviewbench.pipeline import Stage, StageKey
from reviewbench.stages import audit, benchmark, bundle, evidence, judges, ledger, points, standing, verdict

STAGES: tuple[Stage[Any], ...] = (
    bundle.STAGE,
    audit.STAGE,
    benchmark.STAGE,  # before the evidence: behaviour is measured on the benchmark's own scored calls
    evidence.STAGE,
    ledger.STAGE,
    standing.STAGE,
    judges.STAGE,
    verdict.STAGE,
    points.STAGE,
)
# reviewbench.stagelist.STAGE_NAMES (the CLI's import-free list) names these in this order (tested).


def stage(name: str) -> Stage[Any] | None:
    """The registered stage of that name (a stage added to STAGES included)."""
    return next((s for s in STAGES if s.name == name), None)


def keys() -> dict[str, StageKey[Any]]:
    """Every registered stage's key by name."""
    return {s.name: s.key for s in STAGES}


def ahead() -> tuple[str, ...]:
    """The stages that read no other submission's review results, directly or through a stage they need: they
    may run ahead of submission order (``review arena run``); the rest wait for the submissions before."""
    late: set[str] = set()
    for s in STAGES:
        if s.reads_results or any(k.name in late for k in s.needs):
            late.add(s.name)
    return tuple(s.name for s in STAGES if s.name not in late)
