"""The review pipeline: stages run in order, each result stored under a hash of what it read.

A stage's input hash covers its name and version, the bundle's content hash, the arena config, the rubric
and the *output* hashes of the stages it needs: an unchanged input replays from the store, a changed one
reruns, and so does everything downstream whose inputs actually changed.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel, Field

from reviewbench.arena import Arena
from reviewbench.bundle import Bundle
from reviewbench.findings import Finding
from reviewbench.rubric import Rubric
from reviewbench.store import Store, StoredStage

StageStatus = Literal["ok", "not_run", "failed"]


class StageOutput(BaseModel):
    """What a stage returns. ``data`` is the stage's own typed model, dumped to JSON."""

    status: StageStatus
    reason: str = ""  # why it did not run, or why it failed
    summary: str = ""
    findings: list[Finding] = Field(default_factory=list)
    data: dict[str, Any] = Field(default_factory=dict)


class StageReport(StageOutput):
    name: str
    title: str
    cached: bool = False
    seconds: float = 0.0
    input_hash: str = ""


class EarlierSubmission(BaseModel):
    id: str
    agent: str
    board: str | None
    submitted_at: datetime | None
    short_name: str | None
    path: str


@dataclass
class StageContext:
    arena: Arena
    bundle: Bundle
    rubric: Rubric
    store: Store
    author_family: str
    earlier: list[EarlierSubmission]
    outputs: dict[str, StageOutput] = field(default_factory=dict)

    def data(self, stage: str) -> dict[str, Any]:
        out = self.outputs.get(stage)
        return out.data if out is not None and out.status == "ok" else {}


@dataclass(frozen=True)
class Stage:
    name: str
    title: str
    version: str
    needs: tuple[str, ...]
    run: Callable[[StageContext], StageOutput]
    cacheable: bool = True
    # What else the stage reads that the bundle hash does not cover (e.g. the agent's log files).
    extra_inputs: Callable[[StageContext], Any] | None = None


def _hash(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def input_hash(stage: Stage, ctx: StageContext, upstream: dict[str, str]) -> str:
    return _hash({
        "stage": stage.name, "version": stage.version, "bundle": ctx.bundle.content_hash,
        "arena": ctx.arena.config.model_dump(mode="json"), "rubric": ctx.rubric.content_hash,
        "earlier": [e.id for e in ctx.earlier], "upstream": {n: upstream.get(n, "") for n in stage.needs},
        "extra": stage.extra_inputs(ctx) if stage.extra_inputs else None,
    })


def run_stages(
    stages: Sequence[Stage],
    ctx: StageContext,
    *,
    only: set[str] | None = None,
    skip: set[str] = frozenset(),
    rerun: set[str] = frozenset(),
    on_stage: Callable[[StageReport], None] | None = None,
) -> list[StageReport]:
    reports: list[StageReport] = []
    output_hashes: dict[str, str] = {}
    for stage in stages:
        if (only is not None and stage.name not in only) or stage.name in skip:
            why = "skipped by --skip" if stage.name in skip else "not selected by --only"
            report = StageReport(name=stage.name, title=stage.title, status="not_run", reason=why)
        else:
            report = _run_one(stage, ctx, output_hashes, stage.name in rerun)
        ctx.outputs[stage.name] = report
        if report.status == "ok":
            output_hashes[stage.name] = _hash(report.model_dump(mode="json")["data"])
        reports.append(report)
        if on_stage:
            on_stage(report)
    return reports


def _run_one(stage: Stage, ctx: StageContext, output_hashes: dict[str, str], force: bool) -> StageReport:
    key = input_hash(stage, ctx, output_hashes)
    cached = None if force or not stage.cacheable else ctx.store.get_stage(stage.name, key)
    if cached is not None:
        out = StageOutput.model_validate(cached.payload)
        return StageReport(**out.model_dump(), name=stage.name, title=stage.title, cached=True,
                           seconds=cached.seconds, input_hash=key)
    t0 = time.perf_counter()
    try:
        out = stage.run(ctx)
    except Exception as e:  # a stage bug must not lose the other stages' results
        out = StageOutput(status="failed", reason=f"{type(e).__name__}: {e}")
    seconds = round(time.perf_counter() - t0, 3)
    if out.status == "ok" and stage.cacheable:  # only real results are stored: a not-run stage is re-tried next time
        payload = out.model_dump(mode="json")
        ctx.store.put_stage(ctx.bundle.id, StoredStage(
            stage=stage.name, input_hash=key, status=out.status, output_hash=_hash(payload["data"]), payload=payload,
            seconds=seconds, created_at=datetime.now(timezone.utc).isoformat()))
    return StageReport(**out.model_dump(), name=stage.name, title=stage.title, seconds=seconds, input_hash=key)
