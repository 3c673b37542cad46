"""The board benchmark: the submission measured on its board's hidden test split, behind the trust boundary (the
stage that runs it: ``reviewbench.stages.benchmark``).

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

from harness.results import RunConfig, harness_version
from harness.split import SplitManifest, read_manifest
from reviewbench.arena import Arena, Board
from reviewbench.errors import ConfigError
from reviewbench.evidence.behaviour import ScoredKept
from reviewbench.executor import run_harness  # the active executor's (local or Ray); re-exported here


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
    key = hashlib.sha256(f"{manifest.content_hash}|{board.model_spec}|{board.harness_board}|{harness_version(board.harness_board)}"
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
