"""The ``review`` command. ``review BUNDLE_DIR`` is the main job; the other verbs are subcommands.

User mistakes print one line on stderr and exit 2; nothing is written for a refused input.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Annotated, Optional

import click
import typer
from rich.console import Console
from rich.table import Table
from typer.core import TyperGroup

from reviewbench import __version__
from reviewbench.errors import UserError
from reviewbench.stages import STAGE_NAMES

console = Console()
err_console = Console(stderr=True)


class _ReviewGroup(TyperGroup):
    """Lets ``review BUNDLE_DIR`` stand for ``review run BUNDLE_DIR``."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and not args[0].startswith("-") and args[0] not in self.commands:
            args = ["run", *args]
        return super().parse_args(ctx, args)


app = typer.Typer(
    cls=_ReviewGroup,
    help="Review KV-cache eviction submissions: `review BUNDLE_DIR` runs a full review "
         "(bundle -> audit -> evidence -> harness -> judges -> verdict -> points) and writes "
         "reviews/<id>/review.{json,md,html} in the arena.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
)

ArenaOpt = Annotated[Optional[Path], typer.Option("--arena", help="Arena folder (default: found from the bundle's "
                                                  "parents, or the current folder).", file_okay=False)]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def _stage_set(value: str | None) -> set[str] | None:
    if value is None:
        return None
    names = {v.strip() for v in value.split(",") if v.strip()}
    for n in names:
        if n not in STAGE_NAMES:
            raise UserError(None, f"unknown stage {n!r} (stages: {', '.join(STAGE_NAMES)})")
    return names


@app.command("run", help="Review one submission bundle (also: `review BUNDLE_DIR`).")
def run_cmd(
    bundle_dir: Annotated[Path, typer.Argument(help="The submission folder, e.g. submit/agent1-003.")],
    arena: ArenaOpt = None,
    only: Annotated[Optional[str], typer.Option(help=f"Run only these stages (comma list of {', '.join(STAGE_NAMES)}).")] = None,
    skip: Annotated[Optional[str], typer.Option(help="Skip these stages (comma list).")] = None,
    rerun: Annotated[Optional[str], typer.Option(help="Recompute these stages even if stored results match.")] = None,
    as_json: JsonOpt = False,
) -> None:
    from reviewbench.review import review

    def progress(stage) -> None:
        if not as_json:
            tag = {"ok": "[green]ok[/]", "not_run": "[yellow]not run[/]", "failed": "[red]failed[/]"}[stage.status]
            cached = " [dim](replayed)[/]" if stage.cached else ""
            detail = stage.summary if stage.status == "ok" else stage.reason
            console.print(f"  {stage.title:<22} {tag}{cached}  [dim]{detail}[/]", highlight=False)

    if not as_json:
        console.print(f"[bold]Reviewing {bundle_dir}[/]")
    report, out_dir = review(bundle_dir, arena, only=_stage_set(only), skip=_stage_set(skip) or set(),
                             rerun=_stage_set(rerun) or set(), on_stage=progress)
    if as_json:
        sys.stdout.write(report.to_json())
        return
    console.print()
    console.print(f"[yellow]{report.headline}[/]", highlight=False)
    console.print(f"[bold]{report.submission.id}: {report.outcome}[/]", highlight=False)
    console.print(f"Report: {out_dir}/review.md (also review.json, review.html)", highlight=False)


@app.command("show", help="Show the last review of a submission.")
def show_cmd(
    submission_id: Annotated[str, typer.Argument(help="Submission id, e.g. agent1-003.")],
    arena: ArenaOpt = None,
    as_json: JsonOpt = False,
) -> None:
    from reviewbench.report import load_report
    from reviewbench.review import open_arena

    a = open_arena(None, arena)
    path = a.reviews_dir / submission_id / "review.json"
    if not path.is_file():
        raise UserError(path, f"no review of {submission_id} yet (run `review submit/{submission_id}`)")
    report = load_report(path)
    if as_json:
        sys.stdout.write(report.to_json())
        return
    console.print(f"[yellow]{report.headline}[/]", highlight=False)
    console.print(f"[bold]{report.submission.id}[/] ({report.submission.short_name or '-'}), board "
                  f"{report.submission.board or '-'}: {report.outcome}", highlight=False)
    table = Table("stage", "status", "summary")
    for s in report.stages:
        table.add_row(s.title, s.status + (" (replayed)" if s.cached else ""), s.summary if s.status == "ok" else s.reason)
    console.print(table)
    if report.points:
        for reason in report.points.reasons:
            console.print(f"  - {reason}", highlight=False)


@app.command("board", help="Leaderboard per board and per-agent totals (best submission per board, minus penalties).")
def board_cmd(arena: ArenaOpt = None, as_json: JsonOpt = False) -> None:
    from reviewbench.bars import load_bars
    from reviewbench.points import SubmissionPoints, board_best, standings
    from reviewbench.review import open_arena
    from reviewbench.store import Store

    a = open_arena(None, arena)
    if not a.store_path.exists():
        raise UserError(a.store_path, "no reviews yet in this arena")
    with Store(a.store_path) as store:
        points = [SubmissionPoints.model_validate(p) for p in store.all_points()]
    agents = standings(points)
    bars = {}
    for b in a.config.boards:
        best = board_best(load_bars(a.root, b.name, b.bars))
        if best is not None:
            bars[b.name] = {"best": best.id, "mean": round(best.mean, 4), "items": len(best.item_scores)}
    if as_json:
        out = {"schema": "reviewbench.board/1",
               "submissions": [p.model_dump(mode="json") for p in points],
               "agents": [s.model_dump(mode="json") for s in agents], "bars": bars}
        sys.stdout.write(json.dumps(out, indent=2) + "\n")
        return
    for board in [b.name for b in a.config.boards] + ["(no board)"]:
        rows = sorted((p for p in points if (p.board or "(no board)") == board), key=lambda p: -p.total)
        if not rows:
            continue
        bar = bars.get(board)
        caption = f"starting bar: {bar['best']} (mean score {bar['mean']:.3f})" if bar else "no starting bar"
        t = Table("submission", "agent", "judge", "benchmark", "first", "flag", "total", title=f"Board {board}",
                  caption=caption)
        for p in rows:
            t.add_row(p.submission, p.agent, f"{p.judge_points:g}", f"{p.benchmark_points:g}",
                      f"{p.first_on_board_points:g}", "FLAG" if p.flagged else "", f"{p.total:g}")
        console.print(t)
    t = Table("agent", "best per board", "board points", "penalties", "total", title="Agents")
    for s in agents:
        t.add_row(s.agent, ", ".join(f"{b}: {sid}" for b, sid in s.best_per_board.items()),
                  f"{s.board_points:g}", f"-{s.penalties:g}" if s.penalties else "0", f"{s.total:g}")
    console.print(t)


@app.command("audit", help="Audit tool-call and network logs for rule violations. PATH: files or folders "
                            "(searched recursively). Exit 0 with or without findings; 2 on unusable input; 1 with "
                            "--strict when part of the input could not be read.")
def audit_cmd(
    paths: Annotated[list[Path], typer.Argument(help="Log files or folders.")],
    arena: ArenaOpt = None,
    agent: Annotated[Optional[str], typer.Option(help="The agent these logs belong to (default: the folder "
                                                 "under the arena's logs/, else the agent whose agent_home holds "
                                                 "the working directory the log records, else unknown).")] = None,
    fmt: Annotated[str, typer.Option("--format", help="auto|claude|codex|jsonl|squid|har|connlog")] = "auto",
    as_json: Annotated[bool, typer.Option("--json", help="Print one reviewbench.audit/1 JSON object.")] = False,
    strict: Annotated[bool, typer.Option("--strict", help="Exit 1 when a file was skipped, a record could not be "
                                         "read, or a sub-agent's transcript is missing.")] = False,
) -> None:
    from rich.markup import escape

    from reviewbench.logs.arena_audit import audit_paths

    report = audit_paths(paths, arena_dir=arena, agent=agent, fmt=fmt)
    if as_json:
        sys.stdout.write(json.dumps(report.model_dump(mode="json", by_alias=True), indent=2) + "\n")
    else:
        st = report.stats
        console.print(f"{st.files} files, {st.events} tool calls/connections, {st.parse_warnings} parse warnings, "
                      f"{st.bytes / 1e6:.1f} MB in {st.seconds:.2f} s", highlight=False)
        for fo in report.files[:20]:
            who = f"{fo.agent} ({fo.agent_from})" if fo.agent else "agent unknown"
            console.print(f"  {fo.path}: {fo.format}{' ' + fo.client if fo.client else ''}, {fo.events} events, "
                          f"{who}", highlight=False, markup=False)
        if len(report.files) > 20:
            console.print(f"  ... {len(report.files) - 20} more files (see --json)", highlight=False)
        if report.findings:
            t = Table("severity", "category", "agent", "source", "evidence", "rule")
            for f in report.findings:  # log text is hostile: never rich markup
                t.add_row(f.severity, f.category, escape(f.agent or "unknown"), escape(f.source.split("/")[-1]),
                          escape(f.evidence[:80]), escape(f.rule))
            console.print(t)
        else:
            console.print("[green]no findings[/]")
        for b in report.blind_spots:
            console.print(f"[yellow]not seen[/] {escape(b.message)}", highlight=False)
        for n in report.notes:
            console.print(f"[dim]note: {escape(n)}[/]", highlight=False)
        for w in report.warnings[:10]:
            console.print(f"[yellow]warning[/] {escape(w.source)}: {escape(w.message)}", highlight=False)
        if len(report.warnings) > 10:
            console.print(f"[yellow]... {st.parse_warnings - 10} more parse warnings (see --json)[/]")
    if strict and report.incomplete():
        for why in report.incomplete():
            err_console.print(f"strict: {why}", highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(1)


harness_app = typer.Typer(help="The embedded eviction harness: run or check a method (sandboxed).",
                          no_args_is_help=True, rich_markup_mode="rich")
app.add_typer(harness_app, name="harness")


def _model_dirs(model: str) -> list[Path]:
    from harness.model import resolve_model_path

    try:
        return [resolve_model_path(model)]
    except FileNotFoundError as e:
        raise UserError(None, str(e)) from None


def _method_dirs(methods: list[str]) -> list[Path]:
    from harness.methods import REFERENCE_METHODS

    dirs = []
    for m in methods:
        if m in REFERENCE_METHODS:
            continue
        p = Path(m)
        if not (p / "method.py").is_file():
            raise UserError(p, f"no method.py here (and not a reference method: {', '.join(REFERENCE_METHODS)})")
        dirs.append(p.resolve())
    return dirs


@harness_app.command("run", help="Evaluate a method on a board (plus the full cache as reference), in the sandbox.")
def harness_run_cmd(
    methods: Annotated[list[str], typer.Argument(help="Method folders (with method.py) or reference names: "
                                                "full, random, window (StreamingLLM), snapkv, snapkv_qa, pyramidkv, "
                                                "adakv, tova, knorm, expected_attention, kvzip, h2o, rkv.")],
    board: Annotated[str, typer.Option(help="A | B_online | B_offline | C")] = "A",
    split: Annotated[str, typer.Option(help="dev (generated) or test (needs --data: the arena's stored split)")] = "dev",
    model: Annotated[str, typer.Option(help="embedded (SmolLM2-135M) or a local transformers model folder")] = "embedded",
    items: Annotated[int, typer.Option(help="Items per task.")] = 20,
    seeds: Annotated[int, typer.Option(help="Repeat on K disjoint item sets and report the spread.")] = 1,
    length: Annotated[Optional[int], typer.Option(help="Context tokens (A, B; default 2048) or trace tokens "
                                                  "(C; default 384).")] = None,
    budgets: Annotated[Optional[str], typer.Option(help="Comma list (fractions for A/B, tokens for C).")] = None,
    tasks: Annotated[Optional[str], typer.Option(help="Comma list of tasks (default per board).")] = None,
    data: Annotated[Optional[Path], typer.Option(help="Folder of stored items (test split, LongBench v2, MATH-500).")] = None,
    device: Annotated[str, typer.Option(help="cpu or cuda")] = "cpu",
    dtype: Annotated[Optional[str], typer.Option(help="float32 (CPU default) or bfloat16 (CUDA default)")] = None,
    out: Annotated[Optional[Path], typer.Option(help="Write the harness.result/1 JSON here.")] = None,
    wall_hours: Annotated[float, typer.Option(help="Kill the sandboxed worker after this long (CPU cost of "
                                                   "large runs; the CPU-time limit is twice this).")] = 1.0,
    as_json: JsonOpt = False,
) -> None:
    from dataclasses import asdict

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from harness.evaluate import RunConfig
    from harness.runner import BOARDS
    from harness.sandbox import Limits, SandboxError, run_worker

    if board not in BOARDS:
        raise UserError(None, f"unknown board {board!r} ({', '.join(BOARDS)})")
    if split == "test" and data is None:
        raise UserError(None, "--split test needs --data DIR: the test split is the arena's, stored where it declares")
    cfg = RunConfig(board=board, methods=[str(Path(m).resolve()) if Path(m).exists() else m for m in methods],
                    budgets=[float(b) for b in budgets.split(",")] if budgets else None,
                    tasks=tasks.split(",") if tasks else None, split=split, items=items, length=length, seeds=seeds,
                    model="embedded:smollm2-135m-instruct" if model == "embedded" else str(Path(model).resolve()),
                    device=device, dtype=dtype, data=str(data.resolve()) if data else None)
    dirs = _method_dirs(methods) + ([data.resolve()] if data else [])
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.fields[item]}"), console=err_console, transient=as_json) as bar:
        task = bar.add_task(f"board {board}", total=None, item="loading model")

        t_start = time.monotonic()

        def progress(p: dict) -> None:
            bar.update(task, total=p["total"], completed=p["progress"], item=p["item"])
            if not err_console.is_terminal:  # a log file (hours-long runs): one plain line per item
                err_console.print(f"board {board}: {p['progress']}/{p['total']} items done, "
                                  f"{time.monotonic() - t_start:.0f} s, next {p['item']}", highlight=False)

        try:
            limits = Limits(wall_s=wall_hours * 3600, cpu_s=int(wall_hours * 7200))
            result = run_worker(asdict(cfg), dirs, _model_dirs(cfg.model), limits, progress)
        except SandboxError as e:
            raise UserError(None, str(e)) from None
    if out:
        out.write_text(json.dumps(result, indent=1))
    if as_json:
        sys.stdout.write(json.dumps(result) + "\n")
        return
    _print_result(result)
    if out:
        console.print(f"result: {out}")


def _fmt(v, spec=".3f") -> str:
    return "–" if v is None else format(v, spec)


def _print_result(result: dict) -> None:
    cfg = result["config"]
    t = Table(title=f"Board {cfg['board']} · {', '.join(cfg['tasks'])} · {cfg['items']} items/task · "
                    f"{result['environment']['sandbox']}", box=None, pad_edge=False)
    for col in ("method", "keep", "acc/full", "CI95", "KL", "top1", "evict", "oracle", "KV", "comp s", "tok/s"):
        t.add_column(col, no_wrap=True, justify="left" if col == "method" else "right")
    for a in result["aggregates"]:
        if a["task"] != "*":
            continue
        ci = a["normalized_ci95"]
        if a["error"]:
            t.add_row(a["method"], f"{a['budget']:g}", f"[red]error: {a['error'][:50]}[/]")
            continue
        t.add_row(a["method"], f"{a['budget']:g}", _fmt(a["normalized_accuracy"], ".2f"),
                  f"{ci[0]:.2f}-{ci[1]:.2f}" if ci else "–", _fmt(a["kl"]), _fmt(a["top1"], ".2f"),
                  _fmt(a["eviction_cost"], ".2f"), _fmt(a["eviction_cost_oracle"], ".2f"),
                  f"{_fmt(a['kv_bytes_ratio'], '.3f')}x", _fmt(a["compress_s"]), _fmt(a["decode_tok_s"], ".1f"))
    console.print(t)
    console.print("[dim]acc/full: accuracy normalised to the full cache on the same items; evict: attention mass "
                  "of the answer's queries lost (oracle: the best keep-set of that size); KV: bytes vs full[/]")
    for name, err in result.get("method_errors", {}).items():
        console.print(f"[red]{name}: {err}[/]", highlight=False)


@harness_app.command("baselines", help="Run a board's published baselines (plus random and the full cache) and "
                                        "write table.md, table.csv, accuracy.png and result.json to --out.")
def harness_baselines_cmd(
    board: Annotated[str, typer.Option(help="A | B_online | B_offline | C")] = "A",
    split: Annotated[str, typer.Option(help="dev (generated) or test (needs --data)")] = "dev",
    out: Annotated[Optional[Path], typer.Option(help="Output folder (default harness/results/<board>_<split>).")] = None,
    items: Annotated[int, typer.Option(help="Items per task.")] = 20,
    length: Annotated[Optional[int], typer.Option(help="Context (A, B) or trace (C) tokens.")] = None,
    budgets: Annotated[Optional[str], typer.Option(help="Comma list.")] = None,
    tasks: Annotated[Optional[str], typer.Option(help="Comma list of tasks.")] = None,
    model: Annotated[str, typer.Option(help="embedded or a local model folder")] = "embedded",
    data: Annotated[Optional[Path], typer.Option(help="Folder of stored items.")] = None,
    wall_hours: Annotated[float, typer.Option(help="Kill the sandboxed worker after this long (boards B and C "
                                                   "with 20 items take hours on 2 CPU cores).")] = 6.0,
) -> None:
    from harness.report import BOARD_BASELINES, write_all

    if board not in BOARD_BASELINES:
        raise UserError(None, f"unknown board {board!r} ({', '.join(BOARD_BASELINES)})")
    target = out or Path("harness") / "results" / f"{board}_{split}"
    tmp = target.with_name(target.name + ".json.partial")
    harness_run_cmd(["full", *BOARD_BASELINES[board]], board=board, split=split, model=model, items=items, seeds=1,
                    length=length, budgets=budgets, tasks=tasks, data=data, device="cpu", dtype=None, out=tmp,
                    as_json=False, wall_hours=wall_hours)
    paths = write_all(json.loads(tmp.read_text()), target)
    tmp.unlink()
    for p in paths:
        console.print(f"wrote {p}", highlight=False)


@harness_app.command("bars", help="Derive a board's starting bar (reviewbench.bars/1: each baseline's per-item "
                                   "scores) from a harness.result/1, e.g. a `baselines` table, for an arena's baselines/.")
def harness_bars_cmd(
    result: Annotated[Path, typer.Argument(help="A harness.result/1 JSON file.")],
    out: Annotated[Path, typer.Option(help="Where to write the bars file (board it in arena.toml with bars = ...).")],
) -> None:
    from reviewbench.bars import compact_bars

    try:
        data = json.loads(result.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise UserError(result, f"cannot read: {e}") from None
    if data.get("schema") != "harness.result/1":
        raise UserError(result, "not a harness.result/1 file")
    bars = compact_bars(data, str(result))
    tmp = out.with_name(out.name + ".partial")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp.write_text(json.dumps(bars, indent=1, sort_keys=True) + "\n")
    tmp.replace(out)
    console.print(f"wrote {out}: board {bars['board']}, baselines {', '.join(bars['baselines'])}", highlight=False)


@harness_app.command("split", help="Write a split's items to DIR as <task>.jsonl (e.g. the arena's hidden "
                                    "test split, where its audit rules watch); read back with `run --data DIR`.")
def harness_split_cmd(
    out: Annotated[Path, typer.Option(help="Folder to write <task>.jsonl into.")],
    tasks: Annotated[str, typer.Option(help="Comma list of tasks.")] = "niah_single",
    split: Annotated[str, typer.Option(help="dev or test")] = "test",
    items: Annotated[int, typer.Option(help="Items per task.")] = 100,
    length: Annotated[int, typer.Option(help="Context tokens.")] = 2048,
    model: Annotated[str, typer.Option(help="The tokenizer's model: embedded or a local folder.")] = "embedded",
) -> None:
    from harness.evaluate import write_split
    from harness.tasks import SPLIT_SEED

    if split not in SPLIT_SEED:
        raise UserError(None, f"unknown split {split!r} ({', '.join(SPLIT_SEED)})")
    try:
        paths = write_split(tasks.split(","), split, items, length,
                            "embedded:smollm2-135m-instruct" if model == "embedded" else model, out)
    except (ValueError, FileNotFoundError) as e:
        raise UserError(None, str(e)) from None
    for p in paths:
        console.print(f"wrote {p}", highlight=False)


@harness_app.command("check", help="Load a method in the sandbox and run it on a tiny synthetic layer per board.")
def harness_check_cmd(method_dir: Annotated[Path, typer.Argument(help="Folder with method.py")],
                      as_json: JsonOpt = False) -> None:
    from harness.sandbox import SandboxError, run_worker

    dirs = _method_dirs([str(method_dir)])
    try:
        report = run_worker({"method": str(dirs[0])}, dirs, [], module="harness.check")
    except SandboxError as e:
        raise UserError(method_dir, str(e)) from None
    if as_json:
        sys.stdout.write(json.dumps(report) + "\n")
    else:
        if report.get("error"):
            console.print(f"[red]{method_dir}: {report['error']}[/]", highlight=False)
        for c in report["checks"]:
            mark = "[green]ok[/]" if c["ok"] else "[red]FAIL[/]"
            detail = c.get("error") or f"kept per head {c['kept_per_head']} (budget {c['budget']})"
            console.print(f"  board {c['board']:<9} {c['phase']:<8} {mark}  {detail}", highlight=False)
        console.print(f"{report.get('name', method_dir)}: {'interface OK' if report['ok'] else 'interface errors'}")
    if not report["ok"]:
        raise typer.Exit(1)


calibrate_app = typer.Typer(
    help="Check a judge panel on the blinded baselines and planted cases (calibration/): novelty <= 1, source named, "
         "inter-judge agreement, family offsets, flag recall, injection canary. `review calibrate build` rebuilds the suite.",
    invoke_without_command=True, no_args_is_help=False)
app.add_typer(calibrate_app, name="calibrate")
SuiteOpt = Annotated[Optional[Path], typer.Option("--suite", help="The calibration folder (default: ./calibration, "
                                                  "else the one shipped with reviewbench).", file_okay=False)]


@calibrate_app.callback()
def calibrate_cmd(
    ctx: typer.Context,
    panel: Annotated[str, typer.Option(help="A panel of calibration/panels.toml: local (offline), api, vllm, ...")] = "local",
    only: Annotated[Optional[list[str]], typer.Option("--only", help="Run only this case code (repeatable).")] = None,
    as_json: JsonOpt = False,
    fail_under: Annotated[Optional[str], typer.Option(help="Exit 1 when the panel misses a threshold, e.g. "
                                                      "novelty=1.0,source=0.9,recall=1,alpha=0.5.")] = None,
    no_evidence: Annotated[bool, typer.Option("--no-evidence", help="Skip the evidence and harness stages (faster; "
                                              "no evidence-only row, planted fabrications go unseen).")] = False,
    evidence_to_judges: Annotated[bool, typer.Option(help="Show the judges the machine evidence on the blinded "
                                                     "baselines too (as in a real review).")] = False,
    suite: SuiteOpt = None,
) -> None:
    if ctx.invoked_subcommand is not None:
        return
    from reviewbench.calibrate.command import calibrate, default_suite
    from reviewbench.calibrate.metrics import parse_fail_under
    from reviewbench.calibrate.report import HEADER_HELP, HEADERS, table_rows

    try:
        thresholds = parse_fail_under(fail_under)
    except ValueError as e:
        raise UserError(None, str(e)) from None
    root = suite or default_suite()

    def progress(r) -> None:
        if not as_json:
            scores = "; ".join(f"{j.judge_id} " + ("/".join(f"{v:g}" for v in j.scores.values()) if j.scores else
                                                    f"no verdict ({j.error})") for j in r.judges)
            console.print(f"  {r.code}  {r.seconds:6.1f}s  {scores}", highlight=False)

    if not as_json:
        console.print(f"Calibrating the [bold]{panel}[/] panel on {root}", highlight=False)
    report, paths = calibrate(root, panel, only=only, fail_under=thresholds, with_evidence=not no_evidence,
                              evidence_to_judges=evidence_to_judges, on_case=progress)
    if as_json:
        sys.stdout.write(report.model_dump_json(by_alias=True) + "\n")
    else:
        table = Table(*HEADERS, caption=HEADER_HELP, caption_justify="left")
        for row in table_rows(report.calibration):
            table.add_row(*row)
        console.print(table)
        alpha = ", ".join(f"{k} {'—' if v is None else v}" for k, v in report.calibration.alpha.items())
        offsets = "; ".join(f"{f}: " + " ".join(f"{k} {v:+.2f}" for k, v in by.items())
                            for f, by in report.calibration.family_offsets.items()) or "none"
        console.print(f"Krippendorff's alpha: {alpha}\nFamily offsets: {offsets}", highlight=False)
        console.print("Wrote " + ", ".join(str(p) for p in paths), highlight=False)
        if report.failed:
            err_console.print("FAILED --fail-under: " + "; ".join(report.failed), highlight=False)
    if report.failed:
        raise typer.Exit(1)


@calibrate_app.command("build", help="Rebuild calibration/blinded, calibration/logs and answer_key.toml from "
                                     "harness/methods and calibration/sources.toml (deterministic).")
def calibrate_build_cmd(suite: SuiteOpt = None) -> None:
    from reviewbench.calibrate.blind import write_suite
    from reviewbench.calibrate.command import default_suite

    root = suite or default_suite()
    key = write_suite(root)
    console.print(f"Wrote {len(key.cases)} cases under {root / 'blinded'} and {root / 'answer_key.toml'}",
                  highlight=False)


@app.command("schema", help="Print (or write) the JSON Schema of review.json.")
def schema_cmd(out: Annotated[Optional[Path], typer.Option(help="Write to this file instead of stdout.")] = None) -> None:
    from reviewbench.report import review_json_schema

    text = json.dumps(review_json_schema(), indent=2, sort_keys=True) + "\n"
    if out is None:
        sys.stdout.write(text)
    else:
        out.write_text(text, encoding="utf-8")


def _version(value: bool) -> None:
    if value:
        console.print(f"reviewbench {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                help="Print the version.")] = False) -> None:
    """Review KV-cache eviction submissions."""


def main(argv: list[str] | None = None) -> int:
    try:
        rc = app(args=argv, standalone_mode=False)  # click returns an Exit's code here rather than raising it
    except UserError as e:
        err_console.print(f"error: {e.one_line()}", highlight=False, soft_wrap=True)
        return e.exit_code
    except click.exceptions.Exit as e:
        return e.exit_code
    except click.exceptions.Abort:
        err_console.print("aborted")
        return 130
    except click.ClickException as e:
        e.show()
        return e.exit_code
    return rc if isinstance(rc, int) else 0


if __name__ == "__main__":
    sys.exit(main())
