"""Live progress for long work: which stage runs, harness items done, judge calls so far.

On a terminal the current activity is one status line that updates in place; anywhere else (a log file, CI)
each update is a plain line, at most one every few seconds per stage, so hours-long runs stay readable.
Text from submissions or logs is printed without markup interpretation.
"""

from __future__ import annotations

import time
from typing import Any

from rich.console import Console
from rich.markup import escape

PLAIN_EVERY_S = 5.0


class StageProgress:
    def __init__(self, console: Console, quiet: bool = False) -> None:
        self.console = console
        self.quiet = quiet
        self.status: Any = None
        self.stage = ""
        self.t0 = time.monotonic()
        self.last_plain = 0.0

    def start(self, stage: Any) -> None:
        self.stage, self.t0 = stage.title, time.monotonic()
        if self.quiet:
            return
        if self.console.is_terminal:
            self.status = self.console.status(f"{escape(stage.title)} …")
            self.status.start()
        else:
            self.console.print(f"  {stage.title} …", highlight=False, markup=False)

    def line(self, text: str) -> None:
        if self.quiet:
            return
        elapsed = time.monotonic() - self.t0
        if self.status is not None:
            self.status.update(f"{escape(self.stage)}: {escape(text)} ({elapsed:.0f} s)")
        elif time.monotonic() - self.last_plain >= PLAIN_EVERY_S:
            self.last_plain = time.monotonic()
            self.console.print(f"    {self.stage}: {text} ({elapsed:.0f} s)", highlight=False, markup=False)

    def done(self, report: Any) -> None:
        if self.status is not None:
            self.status.stop()
            self.status = None
        if self.quiet:
            return
        tag = {"ok": "[green]ok[/]", "not_run": "[yellow]not run[/]", "failed": "[red]failed[/]"}[report.status]
        cached = " [dim](replayed)[/]" if report.cached else ""
        detail = escape(report.summary if report.status == "ok" else report.reason)
        self.console.print(f"  {escape(report.title):<22} {tag}{cached}  [dim]{detail}[/]", highlight=False)
