"""`review calibrate`: run a panel over the suite, compute the numbers, write the report, decide --fail-under."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from reviewbench.arena import JudgeSpec
from reviewbench.calibrate.metrics import compute, failures
from reviewbench.calibrate.report import CalibrationReport, now, write
from reviewbench.calibrate.runner import CaseResult, check_keys, run_suite
from reviewbench.calibrate.suite import load_key, load_panels
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
    if len(specs) < 2:
        raise ConfigError(root / "panels.toml", f"panel {panel!r} needs two judges")
    return specs


def calibrate(root: Path, panel: str, *, only: list[str] | None = None, fail_under: dict[str, float] | None = None,
              with_evidence: bool = True, evidence_to_judges: bool = False, make_provider: Callable | None = None,
              env: dict[str, str] | None = None, out_dir: Path | None = None,
              on_case: Callable[[CaseResult], None] | None = None) -> tuple[CalibrationReport, list[Path]]:
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
        wanted = set(only) | {key.case(c).twin for c in only if key.case(c).twin}  # a canary needs its clean twin
        cases = [c for c in key.cases if c.code in wanted]
    results = run_suite(root, cases, specs, with_evidence=with_evidence, evidence_to_judges=evidence_to_judges,
                        make_provider=make_provider or default_provider, on_case=on_case)
    rubric = arena_rubric(load_arena(root))
    cal = compute(results, key, [c.id for c in rubric.criteria])
    report = CalibrationReport(generated_at=now(), panel=panel, judges=specs, rubric=rubric.version,
                               only=sorted(c.code for c in cases) if only else [],
                               evidence_to_judges=evidence_to_judges, calibration=cal, cases=results, answer_key=key,
                               fail_under=fail_under or {}, failed=failures(cal, fail_under or {}),
                               seconds=round(time.perf_counter() - t0, 1))
    paths = write(report, out_dir or root / "reports")
    return report, paths
