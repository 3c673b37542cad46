"""The review report: one versioned JSON document, rendered to Markdown and HTML with jinja2.

Files are written to a temporary folder and moved into place in one rename, so an interrupted review
never leaves a half-written report beside a finished one.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from pydantic import BaseModel, ConfigDict, Field

from reviewbench import __version__
from reviewbench.pipeline import EarlierSubmission, StageReport
from reviewbench.points import SubmissionPoints
from reviewbench.verdict import FinalVerdict

REVIEW_SCHEMA = "reviewbench.review/1"


class SubmissionInfo(BaseModel):
    id: str
    agent: str
    family: str
    board: str | None
    short_name: str | None
    submitted_at: datetime | None
    content_hash: str
    path: str


class ReviewReport(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    schema_: Literal["reviewbench.review/1"] = Field(default=REVIEW_SCHEMA, alias="schema")
    reviewbench_version: str = __version__
    generated_at: datetime
    run_id: int
    arena: str
    rubric: str
    headline: str  # the first line of every rendering: which judges ran, and what that means
    outcome: str  # one line: the verdict and points
    submission: SubmissionInfo
    verdict: FinalVerdict | None
    points: SubmissionPoints | None
    stages: list[StageReport]
    earlier_submissions: list[EarlierSubmission]

    def stage(self, name: str) -> StageReport | None:
        return next((s for s in self.stages if s.name == name), None)

    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode="json", by_alias=True), indent=2, sort_keys=False) + "\n"


def review_json_schema() -> dict[str, Any]:
    schema = ReviewReport.model_json_schema(by_alias=True)
    schema["$id"] = REVIEW_SCHEMA
    return schema


def _env() -> Environment:
    env = Environment(loader=PackageLoader("reviewbench", "templates"), undefined=StrictUndefined,
                      autoescape=select_autoescape(enabled_extensions=("html",), default_for_string=False),
                      trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["num"] = lambda v: "–" if v is None else f"{v:g}"
    return env


def render_markdown(report: ReviewReport) -> str:
    return _env().get_template("review.md.j2").render(r=report)


def render_html(report: ReviewReport) -> str:
    return _env().get_template("review.html.j2").render(r=report)


def write_report(report: ReviewReport, reviews_dir: Path) -> Path:
    """Write review.json/md/html under reviews/<id>/ atomically (a directory rename)."""
    reviews_dir.mkdir(parents=True, exist_ok=True)
    final = reviews_dir / report.submission.id
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{report.submission.id}-", dir=reviews_dir))
    try:
        (tmp / "review.json").write_text(report.to_json(), encoding="utf-8")
        (tmp / "review.md").write_text(render_markdown(report), encoding="utf-8")
        (tmp / "review.html").write_text(render_html(report), encoding="utf-8")
        for f in tmp.iterdir():
            with open(f, "rb") as fh:
                os.fsync(fh.fileno())
        old = None
        if final.exists():
            old = reviews_dir / f".old-{report.submission.id}-{os.getpid()}"
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
