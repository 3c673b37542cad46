"""``review arena ...``: the whole arena at once. ``review arena run`` reviews every pending submission in
submission order (the plan and the order are explained in ``reviewbench.arena_run``), with a progress bar on a
terminal and plain lines anywhere else."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from reviewbench.arena_run import Listener, Outcome, Planned
from reviewbench.errors import UserError

console = Console()
PLAIN_EVERY_S = 5.0  # off a terminal: at most one progress line per submission this often (stage changes always)

arena_app = typer.Typer(help="The whole arena: review every pending submission in submission order.",
                        no_args_is_help=True, rich_markup_mode="rich",
                        context_settings={"help_option_names": ["-h", "--help"]})

RayOpt = Annotated[Optional[str], typer.Option(
    "--ray", help="Run the harness workers (benchmark, claim ledger) as Ray tasks: auto (a cluster running on this "
                  "machine, else a new local one), HOST:PORT or ray://HOST:PORT. Default: [harness] executor of "
                  "arena.toml (local).")]


class ArenaProgress(Listener):
    """One overall bar and a line per submission in flight on a terminal; plain lines anywhere else."""

    def __init__(self, out: Console, total: int) -> None:
        self.out = out
        self.lock = threading.Lock()
        self.started: dict[str, float] = {}
        self.last_plain: dict[str, tuple[float, str]] = {}
        self.done = 0
        self.total = total
        self.bar: Any = None
        self.rows: dict[str, Any] = {}
        if out.is_terminal:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

            self.bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(bar_width=20),
                                MofNCompleteColumn(), TimeElapsedColumn(), console=out)
            self.overall = self.bar.add_task("reviews", total=total)
            self.bar.start()

    def activity(self, sub_id: str, text: str) -> None:
        with self.lock:
            now = time.monotonic()
            t0 = self.started.setdefault(sub_id, now)
            if self.bar is not None:
                label = f"  {escape(sub_id)}  [dim]{escape(text[:90])}[/]"
                if sub_id not in self.rows:
                    self.rows[sub_id] = self.bar.add_task(label, total=None)
                self.bar.update(self.rows[sub_id], description=label)
                return
            last_t, last_text = self.last_plain.get(sub_id, (0.0, ""))
            news = (text.endswith("…") or " failed " in text) and text != last_text  # a stage starts or fails
            if news or now - last_t >= PLAIN_EVERY_S:
                self.last_plain[sub_id] = (now, text)
                self.out.print(f"  {sub_id}: {text} ({now - t0:.0f} s)", highlight=False, markup=False)

    def finished(self, outcome: Outcome) -> None:
        with self.lock:
            self.done += 1
            mark = {"complete": "[green]complete[/]", "refused": "[yellow]refused[/]", "failed": "[red]failed[/]"}
            line = (f"[{self.done}/{self.total}] {escape(outcome.id)} {mark[outcome.status]} "
                    f"in {outcome.seconds:.0f} s: {escape(outcome.detail)}")
            if self.bar is not None:
                if outcome.id in self.rows:
                    self.bar.remove_task(self.rows.pop(outcome.id))
                self.bar.advance(self.overall)
                self.bar.console.print(line, highlight=False)
            else:
                self.out.print(line, highlight=False)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def _plan_table(planned: list[Planned]) -> Table:
    t = Table("submission", "board", "submitted", "state", "why", box=None, pad_edge=False)
    for p in planned:
        when = p.submitted_at.strftime("%Y-%m-%d %H:%M") if p.submitted_at else "-"
        style = "bold" if p.todo else ("yellow" if p.state == "refused" else "dim")
        t.add_row(escape(p.id), escape(p.board or "-"), when, f"[{style}]{p.state}[/]", escape(p.reason))
    return t


@arena_app.command("run", help="Review every pending submission (new, changed, or scored before an earlier "
                                "submission on its board was re-reviewed) in submission order; resumable. Judges, "
                                "verdict and points run in order; with Ray the stages before them (the harness "
                                "runs) of several submissions go ahead in parallel. Exit 1 when a review failed or "
                                "no judge gave a verdict.")
def arena_run_cmd(
    arena: Annotated[Optional[Path], typer.Option("--arena", help="Arena folder (default: the current folder or "
                                                  "a parent).", file_okay=False)] = None,
    ray: RayOpt = None,
    parallel: Annotated[Optional[int], typer.Option(
        help="Submissions whose harness stages run at once (needs Ray; default: the cluster's GPUs, else its "
             "CPUs).", min=1)] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the plan and review nothing.")] = False,
) -> None:
    from reviewbench.arena_run import check_boards, plan, run_arena
    from reviewbench.executor import RayExecutor, check_address, executor_for
    from reviewbench.review import open_arena

    if ray not in (None, "auto", "local"):
        check_address(ray)
    a = open_arena(None, arena)
    if parallel is not None and parallel > 1 and ray is None and a.config.harness.executor != "ray":
        raise UserError(None, "--parallel needs Ray (--ray auto, or [harness] executor = \"ray\"): here a harness "
                              "worker already uses every core")
    planned = plan(a)
    todo = [p for p in planned if p.todo]
    console.print(_plan_table(planned))
    if not todo:
        console.print(f"Nothing to review: all {len(planned)} submissions are up to date or refused.", highlight=False)
        return
    if dry_run:
        console.print(f"{len(todo)} submissions to review (dry run: nothing reviewed).", highlight=False)
        return
    check_boards(a, todo)
    ex = executor_for(a.config.harness, ray, a.root / "arena.toml")
    if parallel is None:
        parallel = min(len(todo), ex.slots) if isinstance(ex, RayExecutor) else 1
    console.print(f"Reviewing {len(todo)} submissions of {a.config.arena.name} in submission order; harness runs: "
                  f"{ex.name}" + (f", {parallel} submissions ahead at a time" if parallel > 1 else ""),
                  highlight=False, markup=False)
    display = ArenaProgress(console, len(todo))
    try:
        outcomes = run_arena(a, todo, parallel, display, cancel=ex.cancel, executor=ex)
    finally:
        display.close()
    reviewed = [o for o in outcomes if o.status == "complete"]
    console.print(f"{len(reviewed)} of {len(todo)} reviewed; reports under {a.reviews_dir}", highlight=False)
    failed = next((o for o in outcomes if o.status == "failed"), None)
    if failed is not None:
        console.print(f"[red]stopped at {escape(failed.id)}[/]: the submissions after it wait for its result "
                      f"({len(todo) - len(outcomes)} not reviewed); fix it and run again to continue", highlight=False)
    no_judges = [o.id for o in reviewed if o.judges_failed]
    if no_judges:
        console.print(f"[red]no judge gave a verdict[/] for {', '.join(no_judges)}", highlight=False)
    if failed is not None or no_judges:
        raise typer.Exit(1)
