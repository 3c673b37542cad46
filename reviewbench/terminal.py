"""Live progress for long work: which stage runs, harness items done, judge calls so far.

On a terminal the current activity is one status line that updates in place, its elapsed time refreshed every
second by a background ticker even while one step takes minutes (a line that only moved on events froze for
41 minutes and looked hung). Anywhere else (a log file, CI) each update is a plain line, at most one every few
seconds per stage, and a quiet stage still prints a line once a minute, so hours-long runs stay readable and
visibly alive. Text from submissions or logs is printed without markup interpretation.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.markup import escape

PLAIN_EVERY_S = 5.0  # off a terminal: at most one line this often per stage
QUIET_EVERY_S = 60.0  # off a terminal: a stage with no news still says it is alive this often
TICK_S = 1.0  # on a terminal: the status line's elapsed time is refreshed this often


class StageProgress:
    def __init__(self, console: Console, quiet: bool = False, clock: Callable[[], float] = time.monotonic,
                 tick_s: float = TICK_S) -> None:
        self.console = console
        self.quiet = quiet
        self.clock = clock
        self.tick_s = tick_s
        self.status: Any = None
        self.stage = ""
        self.text = ""
        self.t0 = clock()
        self.last_plain = float("-inf")
        self._lock = threading.Lock()
        self._stop: threading.Event | None = None
        self._ticker: threading.Thread | None = None

    def start(self, stage: Any) -> None:
        self._halt()
        with self._lock:
            self.stage, self.text, self.t0 = stage.title, "", self.clock()
            self.last_plain = self.t0  # the stage's own line below counts as its first
        if self.quiet:
            return
        if self.console.is_terminal:
            self.status = self.console.status(f"{escape(stage.title)} …")
            self.status.start()
        else:
            self.console.print(f"  {stage.title} …", highlight=False, markup=False)
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick, args=(self._stop,), daemon=True)
        self._ticker.start()

    def line(self, text: str) -> None:
        """New text for the current stage (shown at once on a terminal; off one, at most every few seconds)."""
        if self.quiet:
            return
        with self._lock:
            self.text = text
            self._show(force=False)

    def tick(self) -> None:
        """What the ticker does each second: refresh the elapsed time (terminal) or, off a terminal, print the
        latest line again when nothing was printed for a minute."""
        with self._lock:
            if self.status is not None:
                self._show(force=True)
            elif self.clock() - self.last_plain >= QUIET_EVERY_S:
                self._show(force=True)

    def _show(self, force: bool) -> None:
        now = self.clock()
        elapsed = now - self.t0
        what = self.text or "running"
        if self.status is not None:
            self.status.update(f"{escape(self.stage)}: {escape(what)} ({elapsed:.0f} s)")
        elif force or now - self.last_plain >= PLAIN_EVERY_S:
            self.last_plain = now
            self.console.print(f"    {self.stage}: {what} ({elapsed:.0f} s)", highlight=False, markup=False)

    def _tick(self, stop: threading.Event) -> None:
        while not stop.wait(self.tick_s):
            self.tick()

    def _halt(self) -> None:
        if self._stop is not None:
            self._stop.set()
        if self._ticker is not None and self._ticker is not threading.current_thread():
            self._ticker.join()
        self._stop = self._ticker = None

    def done(self, report: Any) -> None:
        self._halt()
        if self.status is not None:
            self.status.stop()
            self.status = None
        if self.quiet:
            return
        tag = {"ok": "[green]ok[/]", "not_run": "[yellow]not run[/]", "failed": "[red]failed[/]"}[report.status]
        cached = " [dim](replayed)[/]" if report.cached else ""
        detail = escape(report.summary if report.status == "ok" else report.reason)
        self.console.print(f"  {escape(report.title):<22} {tag}{cached}  [dim]{detail}[/]", highlight=False)
