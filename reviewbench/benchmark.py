"""The benchmark stage: the submission measured on its board's hidden test split, behind the trust boundary.

The trusted harness worker reads the arena's stored split (``data/test/<board>/``, never generated from code),
runs the submission's method — in its own sandboxed process, which sees neither the items nor the model —
at every budget of the board with the board's settings, and compares it with the full cache on the same
items. The full cache's side is computed once per (board, split content, model, harness version) and stored
under ``data/benchmark/<board>/``; every later submission and the baselines reuse it. On boards A and B the run
also records what the method kept on a few of those items (its scored calls), and the baselines' kept sets on the
same calls (once per split, beside the reference): the behaviour evidence reads them (``harness.keptsets``).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from harness.results import HARNESS_VERSION, RunConfig
from harness.split import SplitManifest, read_manifest
from reviewbench.arena import Arena, ArenaConfig, Board
from reviewbench.bars import public_row
from reviewbench.contracts import BENCHMARK, BUNDLE, BenchmarkData
from reviewbench.errors import ConfigError
from reviewbench.evidence.behaviour import ScoredKept
from reviewbench.executor import run_harness  # the active executor's (local or Ray); re-exported here
from reviewbench.pipeline import StageContext, StageOutput


def split_manifest(arena: Arena, board: Board) -> SplitManifest:
    """The board's test split, or a one-line error saying where it should be and how to make it."""
    folder = board.split_dir(arena.root)
    try:
        return read_manifest(folder)
    except FileNotFoundError:
        raise ConfigError(folder / "split.json", f"board {board.name}'s hidden test split is missing: create it "
                                                 f"with `review harness split --arena {arena.root} --board "
                                                 f"{board.name}`") from None
    except (OSError, ValueError) as e:
        raise ConfigError(folder / "split.json", f"board {board.name}'s test split is unreadable: {e}") from None


def reference_path(arena: Arena, board: Board, manifest: SplitManifest) -> Path:
    """Where the board's shared full-cache reference lives (beside the split: as hidden as the items)."""
    key = hashlib.sha256(f"{manifest.content_hash}|{board.model_spec}|{board.harness_board}|{HARNESS_VERSION}"
                         .encode()).hexdigest()[:16]
    return arena.root / "data" / "benchmark" / board.name / f"reference-{key}.pt"


def kept_folder(arena: Arena, board: Board, manifest: SplitManifest) -> Path:
    """Where the kept sets of the board's scored calls live (``harness.keptsets``): each benchmarked method's file
    by its code hash, and the baselines' on the same calls, computed once per split like the full-cache reference."""
    return reference_path(arena, board, manifest).with_name(
        reference_path(arena, board, manifest).stem.replace("reference-", "kept-"))


def scored_kept(folder: Path, code_hash: str) -> ScoredKept | None:
    """The method's recorded sets in ``folder`` and the baselines', with their content hashes (so the evidence
    that reads them reruns when they change); None where the board records none (C) or the method kept nothing."""
    from harness.keptsets import read_meta

    mine = folder / f"{code_hash}.npz"
    meta = read_meta(mine)
    if meta is None or not (folder / str(meta.get("baselines"))).is_file():
        return None
    base = folder / str(meta["baselines"])

    def sha(p: Path) -> str:
        return hashlib.sha256(p.read_bytes()).hexdigest()[:16]

    return ScoredKept(file=str(mine), sha256=sha(mine), baselines=str(base), baselines_sha256=sha(base))


def run_config(arena: Arena, board: Board, manifest: SplitManifest, methods: list[str]) -> RunConfig:
    tasks = board.tasks or manifest.tasks
    missing = [t for t in tasks if t not in manifest.tasks]
    if missing:
        raise ConfigError(arena.root / "arena.toml", f"board {board.name}: task {missing[0]!r} is not in its test "
                                                     f"split (it has {', '.join(manifest.tasks)})")
    if manifest.length != board.resolved_length:
        raise ConfigError(arena.root / "arena.toml", f"board {board.name} declares length {board.resolved_length} but "
                                                     f"its test split was made at {manifest.length} tokens")
    hs = arena.config.harness
    return RunConfig(board=board.harness_board, methods=methods, budgets=list(board.budgets), tasks=tasks,
                     split="test", items=min(board.items, manifest.items), length=manifest.length,
                     model=board.model_spec, data=str(board.split_dir(arena.root)), threads=hs.threads,
                     reference=str(reference_path(arena, board, manifest)), limits=hs.method_limits(),
                     kept=str(kept_folder(arena, board, manifest)) if board.harness_board != "C" else None)


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
    return {"split": split, "harness": HARNESS_VERSION, "sandbox": sandbox_kind()}


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
                         if method in result.code_hashes else None)
    items = len({r.item for r in full})
    summary = (f"{method} on board {board.name}'s hidden test split: {items} items x {len(board.budgets)} budgets "
               f"in {result.environment.seconds:.0f} s ({result.environment.sandbox}; full-cache reference "
               f"{result.reference})" + (f"; the method failed: {error}" if error else ""))
    return StageOutput(status="ok", summary=summary, data=data)

