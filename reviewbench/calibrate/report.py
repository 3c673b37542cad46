"""The calibration report: a versioned JSON document, an HTML page (confusion matrix, per-criterion bar chart as
a PNG beside it) and the terminal table. Files are written under a temporary name and renamed into place."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from pydantic import BaseModel, Field

from reviewbench import __version__
from reviewbench.arena import JudgeSpec
from reviewbench.calibrate.metrics import EVIDENCE, PANEL, Calibration
from reviewbench.calibrate.runner import CaseResult
from reviewbench.calibrate.suite import AnswerKey
from reviewbench.offsets import CALIBRATION_SCHEMA, load_offsets  # noqa: F401  (re-exported)



class CalibrationReport(BaseModel):
    schema_: str = Field(default=CALIBRATION_SCHEMA, alias="schema")
    reviewbench: str = __version__
    generated_at: datetime
    panel: str
    judges: list[JudgeSpec]
    rubric: str
    only: list[str] = Field(default_factory=list)  # the codes run, when not the whole suite
    evidence_to_judges: bool
    calibration: Calibration
    cases: list[CaseResult]
    answer_key: AnswerKey  # revealed here, after judging: the report is for people, never a judge's input
    fail_under: dict[str, float] = Field(default_factory=dict)
    failed: list[str] = Field(default_factory=list)
    seconds: float = 0.0

    model_config = {"populate_by_name": True}


def _fmt(v, pct: bool = False) -> str:
    if v is None:
        return "—"
    return f"{v:.0%}" if pct else f"{v:g}"


def table_rows(cal: Calibration) -> list[list[str]]:
    out = []
    for r in cal.rows:
        shift = max((abs(v) for v in r.canary_shift.values()), default=None)
        cost = "—" if r.name == EVIDENCE else ("unknown" if r.cost_usd is None else f"${r.cost_usd:.4f}")
        name = r.name.split("-", 1)[1] if r.family and r.name.startswith(r.family + "-") else r.name
        out.append([name, str(r.n_baselines), _fmt(r.novelty_le1, True), _fmt(r.source_named, True),
                    (f"{r.flags_hit}/{r.flags_expected}" if r.flags_expected else "—"), str(r.false_flags),
                    _fmt(shift), f"{r.input_tokens}/{r.output_tokens}" if r.name != EVIDENCE else "—", cost,
                    f"{r.seconds:.0f}s" if r.name != EVIDENCE else "—"])
    return out


HEADERS = ["judge", "n", "nov<=1", "source", "flags", "false", "canary", "tokens in/out", "cost", "time"]
HEADER_HELP = ("n: blinded baselines scored; nov<=1: share with novelty <= 1; source: share whose source paper was named; "
               "flags: expected flags raised on the planted cases; false: flags neither expected nor allowed; "
               "canary: largest score shift of the injection canary against its clean twin")


def bar_chart(report: CalibrationReport, path: Path) -> None:
    """Mean score per criterion on the blinded baselines, one bar per judge and the panel."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in report.calibration.rows if r.mean_scores]
    criteria = list(rows[0].mean_scores) if rows else []
    fig, axes = plt.subplots(1, max(1, len(criteria)), figsize=(4 * max(1, len(criteria)), 3.4), squeeze=False)
    for ax, crit in zip(axes[0], criteria):
        vals = [r.mean_scores[crit] for r in rows]
        ax.bar(range(len(rows)), vals, color=["#4c72b0", "#dd8452", "#55a868", "#c44e52"][: len(rows)])
        ax.set_xticks(range(len(rows)), [r.name.replace("-", "-\n", 1) for r in rows], fontsize=7)
        ax.set_title(f"{crit} (mean on blinded baselines)", fontsize=9)
        if crit == "novelty":
            ax.axhline(1, color="black", lw=0.8, ls="--")
            ax.text(len(rows) - 0.5, 1.05, "target <= 1", fontsize=7, ha="right")
    fig.tight_layout()
    tmp = path.with_suffix(".partial.png")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    tmp.replace(path)


def _cases_in(path: Path) -> int | None:
    """How many cases the report at ``path`` holds (None: no such file, or not a report)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return len(data["cases"]) if isinstance(data, dict) and isinstance(data.get("cases"), list) else None
    except (OSError, ValueError, KeyError):
        return None


def report_stem(report: CalibrationReport, out_dir: Path) -> str:
    """``<panel>-<date>`` for a run of the whole suite, ``<panel>-<date>-only`` for ``--only``; a name already
    holding a report with more cases than this one is never reused (``-2``, ``-3``, ... instead), so a one-case
    run never replaces the same day's full report."""
    base = f"{report.panel}-{report.generated_at.date().isoformat()}" + ("-only" if report.only else "")
    n, stem = 1, base
    while (held := _cases_in(out_dir / f"{stem}.json")) is not None and held > len(report.cases):
        n += 1
        stem = f"{base}-{n}"
    return stem


def write(report: CalibrationReport, out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = report_stem(report, out_dir)
    paths = {"json": out_dir / f"{stem}.json", "html": out_dir / f"{stem}.html", "png": out_dir / f"{stem}.png"}
    bar_chart(report, paths["png"])
    env = Environment(loader=PackageLoader("reviewbench", "templates"),  # judges' text is untrusted: escape it
                      autoescape=select_autoescape(enabled_extensions=("html", "html.j2")), undefined=StrictUndefined)
    key = {c.code: c for c in report.answer_key.cases}
    baselines = [c for c in report.answer_key.cases if c.kind in ("baseline", "port")
                 and any(r.code == c.code for r in report.cases)]
    html = env.get_template("calibration.html.j2").render(
        r=report, headers=HEADERS, header_help=HEADER_HELP,
        cached=sum(j.cached for c in report.cases for j in c.judges), runs=sum(len(c.judges) for c in report.cases), rows=table_rows(report.calibration), key=key, png=paths["png"].name,
        baselines=sorted(baselines, key=lambda c: c.method), panel_name=PANEL)
    for kind, text in (("html", html), ("json", report.model_dump_json(indent=1, by_alias=True))):
        tmp = paths[kind].with_suffix(".partial")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(paths[kind])
    return [paths["json"], paths["html"], paths["png"]]


def now() -> datetime:
    return datetime.now(timezone.utc).replace(microsecond=0)
