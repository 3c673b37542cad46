"""Progress that shows a long run is alive: the worker's heartbeat, the rates and ETA, the ticking status line and
the plain lines of a log (fake clocks: no test waits for real seconds)."""

import io
import json
import time
from types import SimpleNamespace

from rich.console import Console

from harness.evaluate import Heartbeat
from harness.sandbox import _progress
from reviewbench.executor import _item_lines, progress_text
from reviewbench.terminal import PLAIN_EVERY_S, QUIET_EVERY_S, StageProgress


class Clock:
    def __init__(self, t: float = 100.0, step: float = 0.0) -> None:
        self.t, self.step = t, step

    def __call__(self) -> float:
        self.t += self.step
        return self.t


def test_the_line_gives_items_and_tokens_per_second_and_an_eta():
    assert progress_text("benchmark", 0, 8, 0, 0.0) == "benchmark: item 1/8"
    assert progress_text("benchmark", 2, 8, 2400, 60.0) == "benchmark: item 3/8, 30 s/item, 40 tok/s, ETA 3 min 00 s"
    assert progress_text("b", 30, 40, 100, 10.0) == "b: item 31/40, 3.0 items/s, 10 tok/s, ETA 3 s"
    assert progress_text("b", 1, 100, 0, 4000.0).endswith("ETA 110 h 00 min")


def test_item_lines_measure_rates_from_the_first_report_and_skip_done():
    clock, lines = Clock(), []
    on = _item_lines(lines.append, "bench", clock)
    on({"progress": 0, "total": 4, "item": "a", "tokens": 500})  # tokens before the first report do not count
    clock.t += 20
    on({"progress": 0, "total": 4, "item": "a", "tokens": 1500})  # a heartbeat inside the first item
    clock.t += 20
    on({"progress": 1, "total": 4, "item": "b", "tokens": 2500})
    clock.t += 30
    on({"progress": 1, "total": 4, "item": "b", "tokens": 3500})  # a heartbeat 30 s into the second item
    on({"progress": 4, "total": 4, "item": "done", "tokens": 9000})
    assert lines == ["bench: item 1/4", "bench: item 1/4, 50 tok/s",
                     "bench: item 2/4, 40 s/item, 50 tok/s, ETA 2 min 00 s",
                     # the rate stays that of the finished item; the ETA counts down (160 s expected - 70 s spent)
                     "bench: item 2/4, 40 s/item, 43 tok/s, ETA 1 min 30 s"]


def test_the_worker_heartbeat_repeats_the_latest_report_with_live_tokens_until_done():
    out = io.StringIO()
    tokens = [0]
    with Heartbeat(every=0.01, out=out) as beat:
        beat.tokens = lambda: tokens[0]
        beat(0, 3, "item-0", 0)
        tokens[0] = 77
        deadline = time.monotonic() + 5
        while '"tokens": 77' not in out.getvalue() and time.monotonic() < deadline:
            time.sleep(0.01)
        beat(3, 3, "done", 90)
        before = out.getvalue()
        time.sleep(0.05)
        assert out.getvalue() == before  # nothing after done
    got = [json.loads(x) for x in out.getvalue().splitlines()]
    assert got[0] == {"progress": 0, "total": 3, "item": "item-0", "tokens": 0}
    assert {"progress": 0, "total": 3, "item": "item-0", "tokens": 77} in got
    assert all(_progress(x) is not None for x in out.getvalue().splitlines())  # the driver accepts every line


def test_the_driver_accepts_the_old_shape_and_refuses_bad_tokens():
    assert _progress('{"progress": 1, "total": 2, "item": "x"}') is not None
    assert _progress('{"progress": 1, "total": 2, "item": "x", "tokens": "many"}') is None
    assert _progress('{"progress": 1, "total": 2, "item": "x", "tokens": 3, "extra": 1}') is None


def test_a_log_gets_plain_lines_at_most_every_few_seconds_and_one_a_minute_when_quiet():
    out, clock = io.StringIO(), Clock()
    p = StageProgress(Console(file=out, force_terminal=False, width=200), clock=clock, tick_s=3600)
    p.start(SimpleNamespace(title="Benchmark"))
    p.line("item 1/3")  # within PLAIN_EVERY_S of the stage's own line: held back
    clock.t += PLAIN_EVERY_S
    p.line("item 2/3")
    clock.t += 30
    p.tick()  # quiet for 30 s: nothing yet
    clock.t += QUIET_EVERY_S
    p.tick()  # quiet for a minute: the latest line again, with the elapsed time
    p.done(SimpleNamespace(status="ok", cached=False, summary="fine", reason="", title="Benchmark"))
    lines = [x.strip() for x in out.getvalue().splitlines()]
    assert lines[:3] == ["Benchmark …", "Benchmark: item 2/3 (5 s)", "Benchmark: item 2/3 (95 s)"]
    assert lines[3].startswith("Benchmark") and "ok" in lines[3] and len(lines) == 4
    assert "\x1b" not in out.getvalue()


def test_on_a_terminal_a_background_ticker_moves_the_elapsed_time_without_events():
    out = io.StringIO()
    p = StageProgress(Console(file=out, force_terminal=True, width=200), clock=Clock(step=1.0), tick_s=0.01)
    p.start(SimpleNamespace(title="Benchmark"))
    seen: list[str] = []
    real = p.status.update
    p.status.update = lambda text: (seen.append(str(text)), real(text))
    p.line("item 1/3")  # one event, then only the ticker
    deadline = time.monotonic() + 5
    while len({s for s in seen}) < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    p.done(SimpleNamespace(status="ok", cached=False, summary="fine", reason="", title="Benchmark"))
    assert len(set(seen)) >= 4 and all("item 1/3" in s for s in seen)
    assert p._ticker is None  # stopped with the stage
