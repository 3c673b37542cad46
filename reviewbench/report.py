"""The review report: one versioned JSON document, rendered to Markdown and HTML with jinja2.

Every stage's report carries its own typed data (a discriminated union on the stage name), so ``review.json``'s
JSON Schema describes each stage's output precisely. Files are written to a temporary folder and moved into
place in one rename, so an interrupted review never leaves a half-written report beside a finished one.
A partial review (``--only``/``--skip``) is written as a draft under ``reviews/<id>/partial/``: it never
replaces the complete report.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final, Literal, Union

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from reviewbench import __version__
from reviewbench.arena import Arena
from reviewbench.bundle import Bundle
from reviewbench.judges.sanitize import markdown_block
from reviewbench.pipeline import EarlierSubmission, StageReport
from reviewbench.rubric import Rubric
from reviewbench.stages import STAGES
from reviewbench.stages.benchmark import BenchmarkData
from reviewbench.stages.judges import JudgesData
from reviewbench.stages.points import PointsData
from reviewbench.stages.verdict import VerdictData

# /3: the "harness" stage is named "ledger" and the "standing" stage was added. A /2 document is read (upgraded on
# load: ``ReviewReport._upgrade``); what is written is always /3.
REVIEW_SCHEMA: Final = "reviewbench.review/3"
OLD_SCHEMAS: Final = ("reviewbench.review/2",)
RENAMED_STAGES: Final = {"harness": "ledger"}


def _report_types() -> dict[str, type[StageReport[Any]]]:
    """The report type of every registered stage (``reviewbench.stages.STAGES``), made from its declared output
    model and named after it (``LedgerStageReport``): adding a stage is its module and its line in STAGES — the
    report and the schema follow."""
    types: dict[str, type[StageReport[Any]]] = {}
    for stage in STAGES:
        title = "".join(w.capitalize() for w in stage.name.split("_")) + "StageReport"
        name: Any = Literal[stage.name]
        base: Any = StageReport[stage.key.model]  # type: ignore[name-defined]
        types[stage.name] = create_model(title, __base__=base, name=(name, ...))
    return types


REPORT_TYPES: dict[str, type[StageReport[Any]]] = _report_types()
if TYPE_CHECKING:
    AnyStageReport = StageReport[Any]
else:  # the discriminated union of every registered stage's report
    AnyStageReport = Annotated[Union[tuple(REPORT_TYPES.values())], Field(discriminator="name")]


class SubmissionInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    agent: str
    family: str
    board: str | None
    short_name: str | None
    submitted_at: datetime | None
    content_hash: str
    path: str


class ReviewReport(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    schema_: Literal["reviewbench.review/3"] = Field(default=REVIEW_SCHEMA, alias="schema")
    reviewbench_version: str = __version__
    generated_at: datetime
    run_id: int
    arena: str
    rubric: str
    partial: bool = False  # --only/--skip: a draft that never replaces the complete review
    headline: str  # the first line of every rendering: which judges ran, and what that means
    outcome: str  # one line: the measured Overall, the verdict and the points
    submission: SubmissionInfo
    verdict: VerdictData | None
    points: PointsData | None
    stages: list[AnyStageReport]
    earlier_submissions: list[EarlierSubmission]

    @model_validator(mode="before")
    @classmethod
    def _upgrade(cls, data: Any) -> Any:
        """A review.json of an older schema, read as /3: its stages under their current names."""
        if isinstance(data, dict) and data.get("schema") in OLD_SCHEMAS:
            data = {**data, "schema": REVIEW_SCHEMA, "stages": [
                {**s, "name": RENAMED_STAGES.get(str(s.get("name")), s.get("name"))} if isinstance(s, dict) else s
                for s in data.get("stages", [])]}
        return data

    def stage(self, name: str) -> StageReport[Any] | None:
        return next((s for s in self.stages if s.name == name), None)

    @property
    def benchmark(self) -> BenchmarkData | None:
        s = self.stage("benchmark")
        return s.data if s is not None and s.status == "ok" and isinstance(s.data, BenchmarkData) else None

    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode="json", by_alias=True), indent=2, sort_keys=False) + "\n"


def review_json_schema() -> dict[str, Any]:
    schema = ReviewReport.model_json_schema(by_alias=True)
    schema["$id"] = REVIEW_SCHEMA
    return schema


def _headline(stages: list[StageReport[Any]]) -> str:
    judges = next((s for s in stages if s.name == "judges"), None)
    if judges is not None and judges.status == "ok" and isinstance(judges.data, JudgesData):
        return judges.data.panel_note or judges.summary
    why = judges.reason if judges is not None else "not selected"
    return (f"No judges ran ({why}). Nothing below is a judgement of quality: "
            f"only the deterministic stages that ran are reported.")


def _outcome(verdict: VerdictData | None, points: PointsData | None, stages: list[StageReport[Any]],
             partial: bool) -> str:
    parts = ["PARTIAL review (--only/--skip): a draft, not counted"] if partial else []
    bundle = next((s for s in stages if s.name == "bundle"), None)
    errors = [f for f in bundle.findings if f.severity == "error"] if bundle is not None else []
    if errors:
        parts.append(f"BUNDLE HAS {len(errors)} ERROR(S): {errors[0].message}")
    if points is not None and points.measurement is not None:
        m = points.measurement
        best = f" (board best before: {points.best_before.id} {points.best_before.overall:.4f})" \
            if points.best_before else ""
        parts.append(f"Overall {m.overall:.4f} on board {points.board}{best}")
    if verdict is None:
        parts.append("no verdict")
    elif verdict.standing_flags:
        parts.append("FLAGGED " + ", ".join(f.flag for f in verdict.standing_flags))
    elif verdict.status == "no_judges":
        parts.append("no quality verdict (no judge ran)")
    else:
        parts.append(f"verdict {verdict.status}: {verdict.judge_points:g} judge points, no flags")
    if points is not None:
        parts.append(f"{points.total:g} points" + (f", agent penalty -{points.penalty:g}" if points.penalty else ""))
    return " · ".join(parts)


def build_report(arena: Arena, bundle: Bundle, family: str, rubric: Rubric, run_id: int,
                 reports: list[StageReport[Any]], earlier: list[EarlierSubmission], partial: bool) -> ReviewReport:
    typed = [REPORT_TYPES[r.name].model_validate(r.model_dump()) for r in reports]
    verdict = next((r.data for r in typed if r.name == "verdict" and r.status == "ok"), None)
    points = next((r.data for r in typed if r.name == "points" and r.status == "ok"), None)
    return ReviewReport(
        generated_at=datetime.now(timezone.utc).replace(microsecond=0), run_id=run_id,
        arena=arena.config.arena.name, rubric=rubric.version, partial=partial, headline=_headline(typed),
        outcome=_outcome(verdict, points, typed, partial),
        submission=SubmissionInfo(id=bundle.id, agent=bundle.agent, family=family, board=bundle.board,
                                  short_name=bundle.meta.short_name, submitted_at=bundle.submitted_at,
                                  content_hash=bundle.content_hash, path=str(bundle.path)),
        verdict=verdict, points=points, stages=typed, earlier_submissions=earlier)


def _env() -> Environment:
    env = Environment(loader=PackageLoader("reviewbench", "templates"), undefined=StrictUndefined,
                      autoescape=select_autoescape(enabled_extensions=("html", "html.j2"), default_for_string=False),
                      trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["num"] = lambda v: "–" if v is None else f"{v:g}"
    env.filters["pct"] = lambda v: "–" if v is None else f"{100 * v:.1f} %"
    env.filters["tool_args"] = _tool_args
    env.filters["untrusted_block"] = markdown_block  # a method's own words: normalised, cut, in a code fence
    return env


def _tool_args(text: str) -> dict[str, Any]:
    """A tool call's arguments as recorded (the JSON text the model wrote; malformed stays unreadable: {})."""
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def render_markdown(report: ReviewReport) -> str:
    return _env().get_template("review.md.j2").render(r=report)


def render_html(report: ReviewReport, plot_svg: str = "") -> str:
    return _env().get_template("review.html.j2").render(r=report, plot_svg=plot_svg)


def report_dir(reviews_dir: Path, report: ReviewReport) -> Path:
    base = reviews_dir / report.submission.id
    return base / "partial" if report.partial else base


def write_report(report: ReviewReport, reviews_dir: Path) -> Path:
    """Write review.json/md/html under reviews/<id>/ (a draft: reviews/<id>/partial/) atomically: a folder rename.
    Folders are world-readable (an arena's site is served from them)."""
    final = report_dir(reviews_dir, report)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{report.submission.id}-", dir=final.parent))
    os.chmod(tmp, 0o755)
    try:
        from reviewbench.plots import review_plot_svg

        (tmp / "review.json").write_text(report.to_json(), encoding="utf-8")
        (tmp / "review.md").write_text(render_markdown(report), encoding="utf-8")
        (tmp / "review.html").write_text(render_html(report, review_plot_svg(report)), encoding="utf-8")
        for f in tmp.iterdir():
            os.chmod(f, 0o644)
            with open(f, "rb") as fh:
                os.fsync(fh.fileno())
        old = None
        if final.exists():  # a complete review also supersedes its drafts (they live inside it)
            old = final.parent / f".old-{final.name}-{os.getpid()}"
            os.replace(final, old)
        os.replace(tmp, final)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


def load_report(path: Path) -> ReviewReport:
    return ReviewReport.model_validate_json(path.read_text(encoding="utf-8"))
