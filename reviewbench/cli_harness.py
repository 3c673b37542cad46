"""``review harness ...``: the embedded eviction harness from the command line.

Every untrusted method runs in its own sandboxed process under the same limits as in a review; the trusted
worker owns the model, the items and the scores. Heavy imports (torch) happen only inside the commands.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.table import Table

from harness.results import BOARDS as HARNESS_BOARDS  # one list of the harness's boards
from reviewbench.errors import UserError

console = Console()
err_console = Console(stderr=True)

harness_app = typer.Typer(help="The embedded eviction harness: run, check or measure methods (each untrusted method "
                               "in its own sandbox).", no_args_is_help=True, rich_markup_mode="rich",
                          context_settings={"help_option_names": ["-h", "--help"]})

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def _model(model: str) -> str:
    return "embedded:smollm2-135m-instruct" if model in ("embedded", "default") else str(Path(model).resolve())


def _methods(methods: list[str]) -> list[str]:
    from harness.methods import REFERENCE_METHODS

    out = []
    for m in methods:
        if m in REFERENCE_METHODS:
            out.append(m)
            continue
        p = Path(m)
        if not (p / "method.py").is_file():
            raise UserError(p, f"no method.py here (and not a reference method: {', '.join(REFERENCE_METHODS)})")
        out.append(str(p.resolve()))
    return out


def _floats(text: str | None, what: str) -> list[float] | None:
    if not text:
        return None
    try:
        return [float(b) for b in text.split(",") if b.strip()]
    except ValueError:
        raise UserError(None, f"--{what}: expected a comma list of numbers, got {text!r}") from None


def _progress_printer(label: str, quiet: bool) -> Any:
    t0 = time.monotonic()

    def show(line: str) -> None:
        if not quiet:
            err_console.print(f"{line} ({time.monotonic() - t0:.0f} s)", highlight=False, markup=False)

    return show


def _run(cfg: Any, wall_hours: float, quiet: bool, label: str, executor: Any = None) -> Any:
    """One run on the active executor; with ``executor``, all of cfg's methods on it (one Ray task each)."""
    from harness.sandbox import SandboxError
    from reviewbench.executor import run_harness

    try:
        if executor is not None:
            return executor.run_methods(cfg, wall_hours * 3600, _progress_printer(label, quiet), label)
        return run_harness(cfg, wall_hours * 3600, _progress_printer(label, quiet), label)
    except SandboxError as e:
        raise UserError(None, str(e)) from None
    except ValueError as e:
        raise UserError(None, f"the harness returned an invalid result: {e}") from None


@harness_app.command("run", help="Evaluate methods on a board (plus the full cache as reference). Untrusted "
                                  "methods run in their own sandbox.")
def harness_run_cmd(
    methods: Annotated[list[str], typer.Argument(help="Method folders (with method.py) or reference names: "
                                                "full, random, window (StreamingLLM), snapkv, snapkv_qa, pyramidkv, "
                                                "adakv, tova, knorm, expected_attention, kvzip, h2o, rkv.")],
    board: Annotated[str, typer.Option(help="A | B_online | B_offline | C")] = "A",
    split: Annotated[str, typer.Option(help="dev (generated from public seeds) or test (needs --data: the arena's "
                                            "stored split)")] = "dev",
    model: Annotated[str, typer.Option(help="embedded (SmolLM2-135M) or a local transformers model folder")] = "embedded",
    items: Annotated[int, typer.Option(help="Items per task.", min=1)] = 20,
    seeds: Annotated[int, typer.Option(help="Repeat on K disjoint item sets and report the spread.", min=1)] = 1,
    length: Annotated[Optional[int], typer.Option(help="Context tokens (A, B; default 2048) or trace tokens "
                                                  "(C; default 384).", min=16)] = None,
    budgets: Annotated[Optional[str], typer.Option(help="Comma list (fractions for A/B, tokens for C).")] = None,
    tasks: Annotated[Optional[str], typer.Option(help="Comma list of tasks (default per board).")] = None,
    data: Annotated[Optional[Path], typer.Option(help="Folder of stored items (the test split, LongBench v2, "
                                                 "MATH-500).")] = None,
    device: Annotated[str, typer.Option(help="cpu or cuda")] = "cpu",
    dtype: Annotated[Optional[str], typer.Option(help="float32 (CPU default) or bfloat16 (CUDA default)")] = None,
    out: Annotated[Optional[Path], typer.Option(help="Write the harness result JSON here.")] = None,
    wall_hours: Annotated[float, typer.Option(help="Stop the run after this long (a watchdog).", min=0.001)] = 1.0,
    as_json: JsonOpt = False,
) -> None:
    from harness.io import write_json_atomic
    from harness.results import RunConfig

    if board not in HARNESS_BOARDS:
        raise UserError(None, f"unknown board {board!r} ({', '.join(HARNESS_BOARDS)})")
    if split == "test" and data is None:
        raise UserError(None, "--split test needs --data DIR: the test split is the arena's, stored where it declares")
    if data is not None and not data.is_dir():
        raise UserError(data, "no such folder of stored items")
    cfg = RunConfig(board=board, methods=_methods(methods), budgets=_floats(budgets, "budgets"),
                    tasks=tasks.split(",") if tasks else None, split=split, items=items, length=length, seeds=seeds,
                    model=_model(model), device=device, dtype=dtype, data=str(data.resolve()) if data else None)
    result = _run(cfg, wall_hours, as_json, f"board {board}")
    if out:
        write_json_atomic(out, result.to_json(), indent=1)
    if as_json:
        sys.stdout.write(json.dumps(result.to_json()) + "\n")
        return
    print_result(result)
    if out:
        console.print(f"result: {out}")


def _fmt(v: float | None, spec: str = ".3f") -> str:
    return "–" if v is None else format(v, spec)


def print_result(result: Any) -> None:
    cfg = result.config
    t = Table(title=f"Board {cfg.board} · {', '.join(cfg.resolved_tasks())} · {cfg.items} items/task · "
                    f"{result.environment.sandbox}", box=None, pad_edge=False)
    for col in ("method", "keep", "acc/full", "CI95", "KL", "top1", "evict", "oracle", "KV", "comp s", "tok/s"):
        t.add_column(col, justify="left" if col == "method" else "right", overflow="fold")
    for a in result.aggregates:
        if a.task != "*":
            continue
        ci = a.normalized_ci95
        if a.error:
            t.add_row(a.method, f"{a.budget:g}", f"error: {a.error[:50]}")
            continue
        t.add_row(a.method, f"{a.budget:g}", _fmt(a.normalized_accuracy, ".2f"),
                  f"{ci[0]:.2f}-{ci[1]:.2f}" if ci else "–", _fmt(a.kl), _fmt(a.top1, ".2f"),
                  _fmt(a.eviction_cost, ".2f"), _fmt(a.eviction_cost_oracle, ".2f"),
                  f"{_fmt(a.kv_bytes_ratio, '.3f')}x", _fmt(a.compress_s), _fmt(a.decode_tok_s, ".1f"))
    console.print(t)
    console.print("acc/full: accuracy normalised to the full cache on the same items; evict: attention mass of the "
                  "answer's queries lost (oracle: the best keep-set of that size); KV: bytes vs full",
                  style="dim", highlight=False)
    for name, err in result.method_errors.items():
        console.print(f"{name}: {err}", style="red", highlight=False, markup=False)


def _arena_board(arena_dir: Path, board: str) -> tuple[Any, Any]:
    from reviewbench.review import open_arena

    arena = open_arena(None, arena_dir)
    b = arena.config.board(board)
    if b is None:
        raise UserError(arena.root / "arena.toml", f"no board {board!r} (boards: "
                                                   f"{', '.join(x.name for x in arena.config.boards) or 'none'})")
    return arena, b


@harness_app.command("baselines", help="Run a board's published baselines (plus random and the full cache). With "
                                        "--arena: on the board's hidden test split, writing its bars file (the "
                                        "starting bar every submission is compared with); else on the dev split, "
                                        "writing table.md, table.csv, accuracy.png and result.json to --out.")
def harness_baselines_cmd(
    board: Annotated[str, typer.Option(help="A board of the arena (with --arena), else A | B_online | B_offline | C")] = "A",
    arena: Annotated[Optional[Path], typer.Option(help="An arena: measure on its test split and write the board's "
                                                  "bars file.", file_okay=False)] = None,
    out: Annotated[Optional[Path], typer.Option(help="Output folder (default harness/results/<board>_<split>).")] = None,
    items: Annotated[int, typer.Option(help="Items per task (dev split).", min=1)] = 20,
    length: Annotated[Optional[int], typer.Option(help="Context (A, B) or trace (C) tokens (dev split).", min=16)] = None,
    budgets: Annotated[Optional[str], typer.Option(help="Comma list (dev split).")] = None,
    tasks: Annotated[Optional[str], typer.Option(help="Comma list of tasks (dev split).")] = None,
    model: Annotated[str, typer.Option(help="embedded or a local model folder (dev split)")] = "embedded",
    wall_hours: Annotated[float, typer.Option(help="Stop the run after this long (boards B and C with 20 items "
                                                   "take hours on 2 CPU cores).", min=0.001)] = 6.0,
    ray: Annotated[Optional[str], typer.Option("--ray", help="One Ray task per baseline (after the full cache): "
                                               "auto, HOST:PORT or ray://HOST:PORT. Default: the arena's [harness] "
                                               "executor, else local.")] = None,
) -> None:
    from harness.report import BOARD_BASELINES, write_all
    from harness.results import RunConfig
    from reviewbench.arena import HarnessSettings
    from reviewbench.executor import executor_for

    if arena is not None:
        a = _arena_board(arena, board)[0]
        _baselines_on_test_split(arena, board, wall_hours, out,
                                 executor_for(a.config.harness, ray, a.root / "arena.toml"))
        return
    if board not in BOARD_BASELINES:
        raise UserError(None, f"unknown board {board!r} ({', '.join(BOARD_BASELINES)})")
    cfg = RunConfig(board=board, methods=list(BOARD_BASELINES[board]), budgets=_floats(budgets, "budgets"),
                    tasks=tasks.split(",") if tasks else None, split="dev", items=items, length=length,
                    model=_model(model))
    result = _run(cfg, wall_hours, False, f"baselines {board}", executor_for(HarnessSettings(), ray))
    print_result(result)
    for p in write_all(result, out or Path("harness") / "results" / f"{board}_dev"):
        console.print(f"wrote {p}", highlight=False)


def _baselines_on_test_split(arena_dir: Path, board_name: str, wall_hours: float, out: Path | None,
                             executor: Any) -> None:
    from harness.io import write_json_atomic
    from harness.report import BOARD_BASELINES, write_all
    from reviewbench.bars import bars_from_result, bars_path_hint
    from reviewbench.benchmark import run_config, split_manifest

    arena, board = _arena_board(arena_dir, board_name)
    manifest = split_manifest(arena, board)
    cfg = run_config(arena, board, manifest, list(BOARD_BASELINES[board.harness_board]))
    result = _run(cfg, wall_hours, False, f"baselines {board.name} (test split)", executor)
    if result.data_hash != manifest.content_hash:
        raise UserError(board.split_dir(arena.root), "the test split changed during the run")
    print_result(result)
    bars = bars_from_result(result, board, manifest.content_hash, f"review harness baselines --arena . --board {board.name}")
    target = arena.root / bars_path_hint(board)
    write_json_atomic(target, bars.model_dump(mode="json", by_alias=True), indent=1)
    console.print(f"wrote {target}" + ("" if board.bars else f" (name it in arena.toml: bars = \"{bars_path_hint(board)}\")"),
                  highlight=False)
    if out is not None:  # the full tables too (they hold per-item predictions: keep them with the split)
        for p in write_all(result, out):
            console.print(f"wrote {p}", highlight=False)


@harness_app.command("split", help="Write a board's hidden test split into the arena (data/test/<board>/ by default): "
                                    "items drawn from a fresh secret seed, opaque ids, a manifest with its content "
                                    "hash. Or, without --arena, into --out.")
def harness_split_cmd(
    arena: Annotated[Optional[Path], typer.Option(help="The arena whose board gets the split.", file_okay=False)] = None,
    board: Annotated[Optional[str], typer.Option(help="The board (with --arena).")] = None,
    out: Annotated[Optional[Path], typer.Option(help="Folder to write into (without --arena).")] = None,
    tasks: Annotated[Optional[str], typer.Option(help="Comma list of tasks (default: the board's, else "
                                                 "niah_single).")] = None,
    items: Annotated[Optional[int], typer.Option(help="Items per task (default: the board's items, else 100).",
                                                 min=1)] = None,
    length: Annotated[Optional[int], typer.Option(help="Context tokens (default: the board's length; A, B 2048; "
                                                  "C 384 trace tokens).", min=16)] = None,
    model: Annotated[str, typer.Option(help="The tokenizer's model: embedded or a local folder.")] = "embedded",
    force: Annotated[bool, typer.Option(help="Replace an existing split (every result on it becomes stale).")] = False,
) -> None:
    from harness.results import DEFAULT_TASKS
    from harness.split import write_test_split

    if arena is not None:
        if board is None:
            raise UserError(None, "--arena needs --board")
        a, b = _arena_board(arena, board)
        task_list = tasks.split(",") if tasks else (b.tasks or DEFAULT_TASKS[b.harness_board])
        folder, model_spec = b.split_dir(a.root), b.model_spec
        n_items, n_tokens = items or b.items, length or b.resolved_length
    elif out is not None:
        folder, task_list, model_spec = out, (tasks or "niah_single").split(","), _model(model)
        n_items, n_tokens = items or 100, length or 2048
    else:
        raise UserError(None, "give --arena DIR --board B, or --out DIR")
    if (folder / "split.json").exists() and not force:
        raise UserError(folder / "split.json", "a test split is already there (replace it with --force)")
    try:
        manifest = write_test_split(folder, board or "", task_list, n_items, n_tokens, model_spec)
    except (ValueError, FileNotFoundError) as e:
        raise UserError(None, str(e)) from None
    console.print(f"wrote {folder}: {', '.join(manifest.tasks)}, {manifest.items} items each, {manifest.length} "
                  f"tokens, content hash {manifest.content_hash[:16]}", highlight=False)


@harness_app.command("bars", help="A board's bars file from a harness result measured on its test split (what "
                                   "`baselines --arena` writes directly).")
def harness_bars_cmd(
    result: Annotated[Path, typer.Argument(help="A harness result JSON file (run on the board's test split).")],
    arena: Annotated[Path, typer.Option(help="The arena.", file_okay=False)],
    board: Annotated[str, typer.Option(help="The board.")],
) -> None:
    from harness.io import read_json, write_json_atomic
    from harness.results import Result, ResultFormatError
    from reviewbench.bars import bars_from_result, bars_path_hint
    from reviewbench.benchmark import split_manifest

    a, b = _arena_board(arena, board)
    manifest = split_manifest(a, b)
    try:
        r = Result.from_json(read_json(result))
    except (OSError, ValueError, ResultFormatError) as e:
        raise UserError(result, f"not a harness result: {e}") from None
    if r.data_hash != manifest.content_hash:
        raise UserError(result, f"measured on other items than board {b.name}'s test split (content hash differs)")
    target = a.root / bars_path_hint(b)
    write_json_atomic(target, bars_from_result(r, b, manifest.content_hash, str(result)).model_dump(
        mode="json", by_alias=True), indent=1)
    console.print(f"wrote {target}", highlight=False)


@harness_app.command("check", help="Load a method in its own sandbox, under a review's limits, and run it on a "
                                    "tiny synthetic layer per board.")
def harness_check_cmd(method_dir: Annotated[Path, typer.Argument(help="Folder with method.py")],
                      as_json: JsonOpt = False,
                      timeout: Annotated[float, typer.Option(help="Seconds per hook call.", min=0.1)] = 60.0) -> None:
    from harness.results import MethodLimits
    from harness.sandbox import SandboxError, run_worker

    spec = _methods([str(method_dir)])[0]
    try:
        report = run_worker({"method": spec, "limits": asdict(MethodLimits(call_timeout_s=timeout))},
                            module="harness.check", wall_s=600)
    except SandboxError as e:
        raise UserError(method_dir, str(e)) from None
    if as_json:
        sys.stdout.write(json.dumps(report) + "\n")
    else:
        if report.get("error"):
            console.print(f"{method_dir}: {report['error']}", style="red", highlight=False, markup=False)
        for c in report["checks"]:
            mark = "ok" if c["ok"] else "FAIL"
            detail = c.get("error") or f"kept per head {c['kept_per_head']} (budget {c['budget']})"
            console.print(f"  board {c['board']:<9} {c['phase']:<8} {mark}  {detail}", highlight=False, markup=False)
        console.print(f"{report.get('name', method_dir)}: {'interface OK' if report['ok'] else 'interface errors'} "
                      f"({report.get('sandbox', '?')})", highlight=False, markup=False)
    if not report["ok"]:
        raise typer.Exit(1)
