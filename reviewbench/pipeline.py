"""The review pipeline: typed stages run in order, each result stored under a hash of what it read.

Each stage declares its output model (a :class:`StageKey`) and the stages it reads (``needs``). A stage reads
another's output only through :meth:`StageContext.get` with that stage's key, which returns the declared model
(typed: a reader cannot ask for a field nobody writes without the type checker seeing it) and refuses a stage
that is not in ``needs`` (:class:`UndeclaredRead`): the input hash covers exactly the declared stages, so an
undeclared read would silently replay stale results.

A stage's input hash covers its name and version, the bundle's content hash, the part of the arena config it
depends on, the rubric and the *output* hashes of the stages it needs: an unchanged input replays from the
store, a changed one reruns, and so does everything downstream whose inputs actually changed. The version is a
hash of the source of the code the stage declares (:attr:`Stage.version`, ``reviewbench.sources``), never bumped
by hand: editing a stage's code reruns that stage, and downstream only what then reads a different output. A stage that reads
only part of the submission says which (``submission_inputs``): the board benchmark, the costliest stage (an hour
of GPU a board in the arena), is keyed by method.py alone, so a corrected description never re-measures.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from reviewbench.arena import Arena, ArenaConfig
from reviewbench.bundle import Bundle
from reviewbench.findings import Finding
from reviewbench.rubric import Rubric
from reviewbench.sources import source_version
from reviewbench.store import Store, StoredStage

StageStatus = Literal["ok", "not_run", "failed"]
M = TypeVar("M", bound=BaseModel)


class UndeclaredRead(RuntimeError):
    """A stage read the output of a stage it does not declare in ``needs`` (a bug in the stage)."""


@dataclass(frozen=True)
class StageKey(Generic[M]):
    """A stage's name and the model its output data has: the typed handle other stages read it by."""

    name: str
    model: type[M]


class StageOutput(BaseModel, Generic[M]):
    """What a stage returns: a status, a reason when it did not run, and its own typed data when it did."""

    model_config = ConfigDict(extra="forbid")

    status: StageStatus
    reason: str = ""  # why it did not run, or why it failed
    summary: str = ""
    findings: list[Finding] = Field(default_factory=list)
    data: M | None = None


class StageReport(StageOutput[M], Generic[M]):
    name: str
    title: str
    cached: bool = False
    seconds: float = 0.0
    input_hash: str = ""


class EarlierSubmission(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    agent: str
    board: str | None
    submitted_at: datetime | None
    short_name: str | None
    path: str


@dataclass(frozen=True)
class Stage(Generic[M]):
    key: StageKey[M]
    title: str
    needs: tuple[StageKey[Any], ...]
    run: Callable[["StageContext"], StageOutput[M]]
    cacheable: bool = True
    # What else the stage reads that the bundle hash does not cover (e.g. the agent's log files).
    extra_inputs: Callable[["StageContext"], Any] | None = None
    # The part of arena.toml the stage depends on (default: all of it).
    config_inputs: Callable[[ArenaConfig], Any] | None = None
    # Whether the rubric shapes its output (the board benchmark's does not: a rubric change must not re-measure).
    reads_rubric: bool = True
    # The part of the submission the stage reads, when not all of it: replaces the bundle's content hash and the
    # bundle stage's output in the input hash, so it must cover everything the stage reads of either.
    submission_inputs: Callable[["StageContext"], Any] | None = None
    # Whether the earlier submissions (their ids) shape its output.
    reads_earlier: bool = True
    # Whether it reads other submissions' review results (the store): such a stage, and every stage downstream of
    # it, runs in submission order (``review arena run`` runs the others ahead).
    reads_results: bool = False
    # The code that decides the stage's output besides its own module: modules or packages of reviewbench/ and
    # harness/ ("harness" is every file of the package) and data files by a glob from the repository root
    # ("reviewbench/data/*.json"). Their source is the stage's version (``reviewbench.sources``): editing any of
    # them reruns this stage, and only the stages downstream whose inputs then change.
    code: tuple[str, ...] = ()
    # The module that defines the stage (default: its run function's); its source is always part of the version.
    module: str = ""
    # Added to the derived version: a change of meaning no source shows (e.g. calibration's blinded judges).
    revision: str = ""
    # Whether the stage mostly waits for harness workers and imports nothing heavy in this process: only such
    # stages overlap between submissions in ``review arena run`` (the others run one at a time).
    waits_on_workers: bool = False

    def __post_init__(self) -> None:
        if not self.module:
            object.__setattr__(self, "module", getattr(self.run, "__module__", "") or "")

    @property
    def name(self) -> str:
        return self.key.name

    @property
    def version(self) -> str:
        """A hash of the source of the code the stage declares (comments and docstrings aside), never bumped by
        hand: computed from the files on disk, each read once per process (again only when its file changes)."""
        return source_version((self.module, *self.code)) + (f"+{self.revision}" if self.revision else "")

    def parse(self, payload: dict[str, Any]) -> StageOutput[M]:
        return StageOutput[self.key.model].model_validate(payload)  # type: ignore[name-defined]


@dataclass
class StageContext:
    arena: Arena
    bundle: Bundle
    rubric: Rubric
    store: Store
    author_family: str
    earlier: list[EarlierSubmission]
    reports: dict[str, StageReport[Any]] = field(default_factory=dict)
    current: Stage[Any] | None = None  # the stage running now: what it may read
    progress: Callable[[str], None] | None = None  # live progress lines of long stages (harness items, judges)
    fresh_judges: bool = False  # query the judges again instead of replaying their stored calls
    # where this review's harness runs go (local subprocesses, Ray): chosen once by ``open_review``, carried here
    # rather than set process-wide; None: the process's default (``reviewbench.executor.current``)
    executor: Any = None

    def harness(self) -> Any:
        """The executor that runs this review's harness workers."""
        if self.executor is None:
            from reviewbench.executor import current

            return current()
        return self.executor

    def _allowed(self, key: StageKey[Any]) -> None:
        if self.current is not None and key.name not in {k.name for k in self.current.needs}:
            raise UndeclaredRead(f"stage {self.current.name!r} read {key.name!r} without declaring it in needs")

    def get(self, key: StageKey[M]) -> M | None:
        """The output data of a needed stage, when it ran; None when it did not (not run, failed)."""
        self._allowed(key)
        report = self.reports.get(key.name)
        if report is None or report.status != "ok" or report.data is None:
            return None
        data = report.data
        if not isinstance(data, key.model):
            raise TypeError(f"stage {key.name!r} holds {type(data).__name__}, expected {key.model.__name__}")
        return data

    def report(self, key: StageKey[M]) -> StageReport[M] | None:
        """A needed stage's whole report (status, reason, summary, findings), whatever its status."""
        self._allowed(key)
        return self.reports.get(key.name)


def config_tables(*tables: str) -> Callable[[ArenaConfig], Any]:
    """A stage's ``config_inputs``: the tables of arena.toml it depends on (changing the panel must not rerun the
    evidence)."""
    return lambda config: {t: getattr(config, t) for t in tables}


def _plain(obj: Any) -> Any:
    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="json")
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    return obj


def _hash(obj: Any) -> str:
    return hashlib.sha256(json.dumps(_plain(obj), sort_keys=True, default=str).encode()).hexdigest()


def input_hash(stage: Stage[Any], ctx: StageContext, upstream: dict[str, str]) -> str:
    config = stage.config_inputs(ctx.arena.config) if stage.config_inputs else ctx.arena.config
    needs = [k.name for k in stage.needs]
    if stage.submission_inputs is not None:
        submission: Any = stage.submission_inputs(ctx)
        needs = [n for n in needs if n != "bundle"]
    else:
        submission = ctx.bundle.content_hash
    return _hash({
        "stage": stage.name, "version": stage.version, "bundle": submission,
        "arena": config, "rubric": ctx.rubric.content_hash if stage.reads_rubric else None,
        "earlier": [e.id for e in ctx.earlier] if stage.reads_earlier else None,
        "upstream": {n: upstream.get(n, "") for n in needs},
        "extra": stage.extra_inputs(ctx) if stage.extra_inputs else None,
    })


def run_stages(
    stages: Sequence[Stage[Any]],
    ctx: StageContext,
    *,
    only: set[str] | None = None,
    skip: set[str] | frozenset[str] = frozenset(),
    rerun: set[str] | frozenset[str] = frozenset(),
    on_stage: Callable[[StageReport[Any]], None] | None = None,
    on_start: Callable[[Stage[Any]], None] | None = None,
) -> list[StageReport[Any]]:
    reports: list[StageReport[Any]] = []
    output_hashes: dict[str, str] = {}
    for stage in stages:
        if (only is not None and stage.name not in only) or stage.name in skip:
            why = "skipped by --skip" if stage.name in skip else "not selected by --only"
            report: StageReport[Any] = StageReport(name=stage.name, title=stage.title, status="not_run", reason=why)
        else:
            if on_start:
                on_start(stage)
            report = _run_one(stage, ctx, output_hashes, stage.name in rerun)
        ctx.reports[stage.name] = report
        if report.status == "ok":
            output_hashes[stage.name] = _hash(report.model_dump(mode="json")["data"])
        reports.append(report)
        if on_stage:
            on_stage(report)
    return reports


def _report(stage: Stage[M], out: StageOutput[M], **extra: Any) -> StageReport[M]:
    return StageReport[stage.key.model](  # type: ignore[name-defined]
        status=out.status, reason=out.reason, summary=out.summary, findings=out.findings, data=out.data,
        name=stage.name, title=stage.title, **extra)


def _failure(e: BaseException) -> str:
    return " ".join(f"{type(e).__name__}: {e}".split())[:500]


def _run_one(stage: Stage[M], ctx: StageContext, output_hashes: dict[str, str], force: bool) -> StageReport[M]:
    ctx.current = stage
    try:
        key = input_hash(stage, ctx, output_hashes)
        cached = None if force or not stage.cacheable else ctx.store.get_stage(stage.name, key)
        if cached is not None:
            try:
                return _report(stage, stage.parse(cached.payload), cached=True, seconds=cached.seconds, input_hash=key)
            except ValidationError:
                pass  # stored under an older data model: recompute
        t0 = time.perf_counter()
        try:
            out = stage.run(ctx)
            if out.status == "ok" and not isinstance(out.data, stage.key.model):
                raise TypeError(f"stage {stage.name!r} returned {type(out.data).__name__}, "
                                f"expected {stage.key.model.__name__}")
        except UndeclaredRead:
            raise  # a bug in the pipeline's wiring: never hidden as a stage failure
        except Exception as e:  # a stage bug (RecursionError, MemoryError too) must not lose the other stages' results
            out = StageOutput[stage.key.model](status="failed", reason=_failure(e))  # type: ignore[name-defined]
        seconds = round(time.perf_counter() - t0, 3)
        if out.status == "ok" and stage.cacheable:  # only real results are stored: a failed stage is re-tried
            payload = out.model_dump(mode="json")
            ctx.store.put_stage(ctx.bundle.id, StoredStage(
                stage=stage.name, input_hash=key, status=out.status, output_hash=_hash(payload["data"]),
                payload=payload, seconds=seconds, created_at=datetime.now(timezone.utc).isoformat()))
        return _report(stage, out, seconds=seconds, input_hash=key)
    finally:
        ctx.current = None
