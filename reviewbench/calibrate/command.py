"""`review calibrate`: run a panel over the suite, compute the numbers, write the report, decide --fail-under.

A full run reviews 16 cases through the real stages (about 13 minutes on 2 cores), so it says what it is doing as
it goes: a line per case, the stages as they start and end (the review's own StageProgress: a status line on a
terminal, plain lines in a log) and a line per judge with its scores or why it gave none."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from reviewbench.arena import JudgeSpec
from reviewbench.calibrate.metrics import compute, failures
from reviewbench.calibrate.report import CalibrationReport, now, write
from reviewbench.calibrate.runner import CaseResult, Hooks, check_keys, run_suite
from reviewbench.calibrate.suite import AnswerKey, load_key, load_panels
from reviewbench.errors import ConfigError, UserError
from reviewbench.judges.panel import default_provider
from reviewbench.review import arena_rubric
from reviewbench.arena import load_arena


def default_suite() -> Path:
    """./calibration when it is a suite, else the one in the reviewbench checkout."""
    here = Path("calibration")
    if (here / "arena.toml").is_file():
        return here
    return Path(__file__).resolve().parents[2] / "calibration"


def resolve_panel_specs(root: Path, panel: str) -> list[JudgeSpec]:
    panels = load_panels(root)
    if panel not in panels:
        raise ConfigError(root / "panels.toml", f"no panel {panel!r} (panels: {', '.join(panels)})")
    specs = panels[panel]
    from reviewbench.arena import Panel
    from reviewbench.judges.panel import check_panel

    check_panel(Panel(judges=specs), root / "panels.toml")
    return specs


def _twin(key: AnswerKey, code: str) -> str | None:
    case = key.case(code)
    return case.twin if case is not None else None


class CalibrationProgress:
    """Prints a calibration run as it goes (see the module docstring); text from judges is printed verbatim."""

    def __init__(self, console: Console) -> None:
        from reviewbench.terminal import StageProgress

        self.console = console
        self.stages = StageProgress(console)
        self.t0 = time.monotonic()

    def hooks(self) -> Hooks:
        return Hooks(case_start=self.case_start, stage_start=self.stages.start, stage_done=self.stages.done,
                     line=self.stages.line, case_done=self.case_done)

    def _say(self, text: str) -> None:
        self.console.print(text, highlight=False, markup=False, soft_wrap=True)

    def case_start(self, n: int, total: int, code: str) -> None:
        self._say(f"[{n}/{total}] case {code} ({time.monotonic() - self.t0:.0f} s so far)")

    def case_done(self, r: CaseResult) -> None:
        for j in r.judges:
            if j.scores:
                got = ", ".join(f"{k} {v:g}" for k, v in j.scores.items())
                got += f"; flags {', '.join(j.flags)}" if j.flags else ""
            else:
                got = f"no verdict ({j.error or 'no reason given'})"
            usage = "replayed" if j.cached else f"{j.input_tokens}/{j.output_tokens} tokens, {j.seconds:.1f} s"
            self._say(f"    judge {j.judge_id} ({j.role}): {got} [{usage}]")
        self._say(f"  case {r.code} done in {r.seconds:.1f} s" + (f"; stage errors: {'; '.join(r.stage_errors)}"
                                                                   if r.stage_errors else ""))


def calibrate(root: Path, panel: str, *, only: list[str] | None = None, fail_under: dict[str, float] | None = None,
              with_evidence: bool = True, evidence_to_judges: bool = False, make_provider: Callable | None = None,
              env: dict[str, str] | None = None, out_dir: Path | None = None,
              on_case: Callable[[CaseResult], None] | None = None,
              hooks: Hooks = Hooks()) -> tuple[CalibrationReport, list[Path]]:
    t0 = time.perf_counter()
    root = root.resolve()
    key = load_key(root)
    specs = resolve_panel_specs(root, panel)
    check_keys(specs, dict(os.environ) if env is None else env)
    cases = key.cases
    if only:
        unknown = [c for c in only if key.case(c) is None]
        if unknown:
            raise UserError(root / "answer_key.toml", f"unknown case code {unknown[0]!r} (codes: "
                                                      f"{', '.join(c.code for c in key.cases)})")
        wanted = set(only) | {t for c in only if (t := _twin(key, c))}  # a canary needs its clean twin
        cases = [c for c in key.cases if c.code in wanted]
    results = run_suite(root, cases, specs, with_evidence=with_evidence, evidence_to_judges=evidence_to_judges,
                        make_provider=make_provider or default_provider, on_case=on_case, hooks=hooks)
    rubric = arena_rubric(load_arena(root))
    cal = compute(results, key, [c.id for c in rubric.criteria])
    report = CalibrationReport(generated_at=now(), panel=panel, judges=specs, rubric=rubric.version,
                               only=sorted(c.code for c in cases) if only else [],
                               evidence_to_judges=evidence_to_judges, calibration=cal, cases=results, answer_key=key,
                               fail_under=fail_under or {}, failed=failures(cal, fail_under or {}),
                               seconds=round(time.perf_counter() - t0, 1))
    paths = write(report, out_dir or root / "reports")
    return report, paths


def export(report: CalibrationReport, fmt: str, out: Path | None) -> None:
    """The report as data: json (the whole report), csv or parquet (one row per case and judge, the columns of
    ``reviewbench.api.calibration_df``); to ``out`` atomically, or to stdout (json, csv)."""
    import csv
    import io
    import sys

    from harness.io import atomic_write_bytes, atomic_write_text
    from reviewbench.api import CALIBRATION_COLUMNS, calibration_frame, calibration_rows

    data = report.model_dump(mode="json", by_alias=True)
    if fmt == "parquet":
        assert out is not None
        buf = io.BytesIO()
        calibration_frame(data).to_parquet(buf, index=False)
        atomic_write_bytes(out, buf.getvalue())
        return
    if fmt == "json":
        text = report.model_dump_json(by_alias=True, indent=1) + "\n"
    else:
        rows = calibration_rows(data)
        sink = io.StringIO()
        w = csv.DictWriter(sink, fieldnames=CALIBRATION_COLUMNS + sorted({k for r in rows for k in r} -
                                                                         set(CALIBRATION_COLUMNS)))
        w.writeheader()
        w.writerows(rows)
        text = sink.getvalue()
    if out is not None:
        atomic_write_text(out, text)
    else:
        sys.stdout.write(text)
