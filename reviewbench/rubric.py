"""The rubric: criteria with anchored levels, the five flags, tie-break, aggregation and points rules."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from reviewbench.errors import ConfigError
from reviewbench.tomlio import read_toml, validate_file

FLAG_IDS = (
    "MISSTATED_METHOD",
    "UNDISCLOSED_PRIOR_ART",
    "FABRICATED_EVIDENCE",
    "RULE_VIOLATION",
    "MISSING_ATTRIBUTION",
)
FlagId = Literal[
    "MISSTATED_METHOD", "UNDISCLOSED_PRIOR_ART", "FABRICATED_EVIDENCE", "RULE_VIOLATION", "MISSING_ATTRIBUTION"
]
RUBRICS_DIR = Path(__file__).resolve().parent.parent / "rubrics"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Criterion(_Strict):
    id: str
    max: int = Field(ge=1)
    question: str
    anchors: dict[int, str]

    @model_validator(mode="after")
    def _every_level_anchored(self) -> "Criterion":
        if sorted(self.anchors) != list(range(self.max + 1)):
            raise ValueError(f"criterion {self.id}: anchors must cover 0..{self.max} exactly")
        return self


class FlagRule(_Strict):
    """``deterministic``: whether machine evidence alone may raise the flag — ``alone`` (any candidate stands),
    ``proof_alone`` (a candidate whose evidence meets the ``[evidence]`` thresholds stands; a weaker one needs a
    judge to confirm it), ``confirm`` (always a judge), ``never``."""

    id: FlagId
    definition: str
    deterministic: Literal["alone", "proof_alone", "confirm", "never"] = "confirm"


class EvidenceRules(_Strict):
    """How measured evidence maps to flags and to the evidence judge's novelty level (see rubrics/default.toml)."""

    behaviour_same: float = Field(default=0.9, gt=0, le=1)  # mean Jaccard: keeps the same tokens as a reference
    behaviour_related: float = Field(default=0.75, gt=0, le=1)  # with copied code: substantially the same method
    # a published rule's reference (priorart:) identifies a port only where behaviour tells that rule apart: the
    # candidate nearer to it than to any other reference by this margin, or keeping its tokens outright
    behaviour_margin: float = Field(default=0.1, ge=0, le=1)
    behaviour_identical: float = Field(default=0.97, gt=0, le=1)
    code_same_score: float = Field(default=0.6, gt=0, le=1)  # combined code score: the same code
    code_shared: float = Field(default=0.5, gt=0, le=1)  # token containment: copied code
    novelty_cosmetic: tuple[float, float] = (0.75, 0.4)  # (behaviour, code score) at or above: novelty <= 1
    novelty_family: tuple[float, float] = (0.5, 0.25)  # at or above: novelty <= 2
    novelty_max: int = Field(default=3, ge=0)  # what measured distance alone can support
    # "on par" (effectiveness 3) needs a CI of the gain that spans 0 AND is this narrow (half-width, Overall units)
    # over at least this many items; otherwise there are too few items to tell, and the score stays at 2
    par_ci_halfwidth: float = Field(default=0.03, gt=0)
    par_min_items: int = Field(default=10, ge=1)
    # the share of a source's views where the heads split into streaming and content-chosen ones (HeadRoles)
    head_roles_split: float = Field(default=0.2, gt=0, le=1)


class FlagEffect(_Strict):
    zero_submission: bool = True
    penalty_points: float = 20
    stands_above_share: float = Field(default=0.5, ge=0, lt=1)


class TieBreak(_Strict):
    threshold: float = 1
    on_flag_disagreement: bool = True
    judge_family: Literal["non_author"] = "non_author"
    subtract_family_offsets: bool = False


class Aggregate(_Strict):
    method: Literal["median", "mean"] = "median"
    round_to: float = Field(default=0.5, ge=0)


class RuleSet(_Strict):
    description: str
    benchmark_points: float
    min_ci_gain: float
    ci_level: float = Field(gt=0, lt=1)
    bootstrap_samples: int = Field(ge=100)
    bootstrap_seed: int = 0
    first_on_board_points: float
    first_on_board_min_novelty: float
    own_best_pays: bool


class PointsRules(_Strict):
    default_rule_set: str
    rule_sets: dict[str, RuleSet]

    @model_validator(mode="after")
    def _default_exists(self) -> "PointsRules":
        if self.default_rule_set not in self.rule_sets:
            raise ValueError(f"default_rule_set {self.default_rule_set!r} is not among rule_sets")
        return self


class Rubric(_Strict):
    version: str
    name: str
    judge_points_max: float = 30
    criteria: list[Criterion] = Field(min_length=1)
    flags: list[FlagRule]
    flag_effect: FlagEffect = FlagEffect()
    tie_break: TieBreak = TieBreak()
    aggregate: Aggregate = Aggregate()
    evidence: EvidenceRules = EvidenceRules()
    points: PointsRules
    content_hash: str = ""  # filled by load_rubric: judge calls are cached per rubric content

    @model_validator(mode="after")
    def _five_flags(self) -> "Rubric":
        ids = sorted(f.id for f in self.flags)
        if ids != sorted(FLAG_IDS):
            raise ValueError(f"flags must define exactly {', '.join(FLAG_IDS)}")
        return self

    @property
    def raw_max(self) -> int:
        return sum(c.max for c in self.criteria)

    def criterion(self, cid: str) -> Criterion:
        return next(c for c in self.criteria if c.id == cid)

    def flag(self, fid: str) -> FlagRule:
        return next(f for f in self.flags if f.id == fid)

    def rule_set(self, name: str | None) -> tuple[str, RuleSet]:
        key = name or self.points.default_rule_set
        if key not in self.points.rule_sets:
            raise ConfigError(None, f"points rule set {key!r} not in rubric {self.version} "
                              f"(has {', '.join(self.points.rule_sets)})")
        return key, self.points.rule_sets[key]


def resolve_rubric_path(name_or_path: str, arena_root: Path | None = None) -> Path:
    """A rubric by path, or by name from the arena's ``rubrics/`` folder, then the shipped ``rubrics/``."""
    direct = Path(name_or_path)
    if direct.suffix == ".toml":
        return direct if direct.is_absolute() or arena_root is None else arena_root / direct
    for folder in ([arena_root / "rubrics"] if arena_root else []) + [RUBRICS_DIR]:
        candidate = folder / f"{name_or_path}.toml"
        if candidate.is_file():
            return candidate
    raise ConfigError(None, f"rubric {name_or_path!r} not found in the arena's rubrics/ or {RUBRICS_DIR}")


def load_rubric(path: Path) -> Rubric:
    data = read_toml(path)
    data["content_hash"] = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    return validate_file(Rubric, data, path)
