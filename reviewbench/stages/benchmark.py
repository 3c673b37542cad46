"""The board benchmark stage: the submission measured on its board's hidden test split (``reviewbench.benchmark``
runs it behind the trust boundary). The costliest stage, an hour of GPU a board in the arena: keyed by method.py
alone, not by the rubric, the Overall weights or the earlier submissions."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from harness.fingerprint_grid import grid_revision
from harness.results import ModelFacts, Row, harness_version
from harness.split import read_manifest
from reviewbench.arena import ArenaConfig
from reviewbench.bars import public_row
from reviewbench.benchmark import kept_folder, run_config, scored_kept, split_manifest
from reviewbench.evidence.behaviour import ScoredKept
from reviewbench.pipeline import Stage, StageContext, StageKey, StageOutput
from reviewbench.stages.bundle import BUNDLE


class BenchmarkData(BaseModel):
    """The submission measured on its board's hidden test split: raw rows (the method's and the full cache's,
    predictions removed), from which the Overall score is computed with the board's current weights."""

    model_config = ConfigDict(extra="forbid")

    board: str
    harness_board: str
    method: str
    split_hash: str
    harness_version: str
    model: ModelFacts
    rows: list[Row]  # the method's
    full: list[Row]  # the full cache's, on the same items
    reference: str | None  # "computed" / "reused": the shared full-cache reference
    sandbox: str
    seconds: float
    method_error: str | None = None
    kept: ScoredKept | None = None  # boards A/B: the kept sets of the scored calls, the evidence's behaviour source
    # the lines of method.py that ran on the scored calls (reviewbench.evidence.scored_code reads the code as it
    # ran); None: no record (a result stored before it, or the method's trace was lost: trace_lost)
    executed_lines: list[int] | None = None
    trace_lost: bool = False


BENCHMARK = StageKey("benchmark", BenchmarkData)


def benchmark_config(config: ArenaConfig) -> dict[str, Any]:
    """What of arena.toml the benchmark depends on: not the Overall weights (applied afterwards to the stored
    rows), the bars, the labels, the judges or the rules."""
    return {"boards": [b.model_dump(mode="json", exclude={"weights", "bars", "setting", "benchmark"})
                       for b in config.boards],
            "harness": config.harness.model_dump(mode="json", exclude={"claim_items", "claim_seeds"})}


def benchmark_inputs(ctx: StageContext) -> dict[str, Any]:
    """The split's content and the harness version: a rewritten split or a new harness reruns the benchmark."""
    from harness.sandbox import sandbox_kind

    board = ctx.arena.config.board(ctx.bundle.board) if ctx.bundle.board else None
    if board is None:
        return {}
    try:
        split = read_manifest(board.split_dir(ctx.arena.root)).content_hash
    except (OSError, ValueError):
        split = None
    return {"split": split, "harness": harness_version(board.harness_board), "sandbox": sandbox_kind()}


def benchmark_submission(ctx: StageContext) -> dict[str, Any]:
    """What the benchmark reads of the submission: its method.py (the harness stages that file alone into the
    sandbox; the bundle stage's method class is read from it too), its id and its board. A description edit
    replays the measurement."""
    method = next((f.sha256 for f in ctx.bundle.files if f.path == "method.py"), None)
    return {"id": ctx.bundle.id, "board": ctx.bundle.board, "method.py": method}


def benchmark_stage(ctx: StageContext) -> StageOutput[BenchmarkData]:
    from harness.sandbox import SandboxError, isolates_files, sandbox_kind

    b = ctx.bundle
    board = ctx.arena.config.board(b.board) if b.board else None
    if board is None:
        return StageOutput(status="not_run", reason="the bundle names no board declared in arena.toml")
    bundle = ctx.get(BUNDLE)
    if bundle is None or bundle.method_class is None:
        return StageOutput(status="not_run", reason="method.py defines no class on the harness interface")
    kind = sandbox_kind()
    if not isolates_files(kind) and not ctx.arena.config.harness.allow_unsandboxed_test_split:
        return StageOutput(status="not_run", reason=f"no file-system sandbox here ({kind}; bubblewrap is missing): "
                                                    "an untrusted method must not run beside the hidden test split")
    manifest = split_manifest(ctx.arena, board)
    cfg = run_config(ctx.arena, board, manifest, [str(b.path)])
    try:
        result = ctx.harness().run_harness(cfg, ctx.arena.config.harness.worker_wall_hours * 3600, ctx.progress,
                                           f"benchmark {board.name}")
    except SandboxError as e:
        return StageOutput(status="failed", reason=str(e))
    if result.data_hash != manifest.content_hash:
        return StageOutput(status="failed", reason="the test split changed during the run (content hash differs)")
    names = [m for m in result.code_hashes]
    method = names[0] if names else b.id
    error = next(iter(result.method_errors.values()), None)
    rows = [public_row(r) for r in result.rows if r.method == method and r.method != "full"]
    full = [public_row(r) for r in result.rows if r.method == "full"]
    data = BenchmarkData(board=board.name, harness_board=board.harness_board, method=method,
                         split_hash=manifest.content_hash, harness_version=result.harness_version, model=result.model,
                         rows=rows, full=full, reference=result.reference, sandbox=result.environment.sandbox,
                         seconds=result.environment.seconds, method_error=error,
                         kept=scored_kept(kept_folder(ctx.arena, board, manifest), result.code_hashes[method])
                         if method in result.code_hashes else None,
                         executed_lines=result.executed_lines.get(method), trace_lost=method in result.trace_lost)
    items = len({r.item for r in full})
    summary = (f"{method} on board {board.name}'s hidden test split: {items} items x {len(board.budgets)} budgets "
               f"in {result.environment.seconds:.0f} s ({result.environment.sandbox}; full-cache reference "
               f"{result.reference})" + (f"; the method failed: {error}" if error else ""))
    return StageOutput(status="ok", summary=summary, data=data)



# The benchmark before the evidence: the behaviour that decides novelty and the flags is measured on the
# benchmark's own scored calls (the bank, a set of inputs a method could recognise, is the second source).
STAGE = Stage(BENCHMARK, "Board benchmark", (BUNDLE,), benchmark_stage, extra_inputs=benchmark_inputs,
              config_inputs=benchmark_config, reads_rubric=False, submission_inputs=benchmark_submission,
              reads_earlier=False,
              code=("reviewbench.benchmark", "reviewbench.bars", "reviewbench.executor", "harness"),
              waits_on_workers=True, revision=grid_revision())
