"""The data each review stage produces: one pydantic model per stage, and the typed key other stages read it by.

These models are the contracts between stages (``reviewbench.pipeline.StageContext.get``), what the store
keeps, and what ``review.json`` and its JSON Schema describe. Closed: every model forbids unknown keys, and no
field is an open ``dict[str, Any]``.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from harness.results import ModelFacts, Row
from reviewbench.bundle import BundleFile, Claim, SubmissionMeta
from reviewbench.evidence.behaviour import BehaviourEvidence, ScoredKept
from reviewbench.evidence.citations import CitationCheck
from reviewbench.evidence.claims import LedgerEntry
from reviewbench.evidence.facts import EvidenceFacts
from reviewbench.evidence.priorart_evidence import PriorArtEvidence
from reviewbench.evidence.similarity import CodeMatch
from reviewbench.findings import Finding
from reviewbench.judges.base import JudgeOutcome, Usage
from reviewbench.judges.sanitize import InjectionFinding
from reviewbench.logs.audit import AuditReport
from reviewbench.methodsrc import MethodClass
from reviewbench.overall import BoardMeasurement, BoardStanding
from reviewbench.pipeline import StageKey
from reviewbench.points import SubmissionPoints
from reviewbench.verdict import FinalVerdict, FlagClaim, JudgeVerdict, TieBreakDecision


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BundleData(_Closed):
    id: str
    agent: str
    board: str | None
    content_hash: str
    files: list[BundleFile]
    meta: SubmissionMeta
    sections_present: list[str]
    sections_missing: list[str]
    method_class: MethodClass | None
    imports: list[str]
    claims: list[Claim]
    board_known: bool


class AuditData(_Closed):
    report: AuditReport
    window_start: datetime | None  # the agent's previous submission: what this one answers for starts after it
    window_end: datetime | None
    in_window: int  # findings inside that window
    candidate_flags: list[FlagClaim]


class EvidenceData(_Closed):
    citations: list[CitationCheck]
    prior_art: PriorArtEvidence
    code: list[CodeMatch]
    behaviour: BehaviourEvidence | None
    behaviour_error: str | None = None
    digest: list[str]
    candidate_flags: list[FlagClaim]


class LedgerData(_Closed):
    ledger: list[LedgerEntry]
    digest: list[str]
    candidate_flags: list[FlagClaim]


class BenchmarkData(_Closed):
    """The submission measured on its board's hidden test split: raw rows (the method's and the full cache's,
    predictions removed), from which the Overall score is computed with the board's current weights."""

    board: str
    harness_board: str
    method: str
    split_hash: str
    harness_version: str
    model: ModelFacts
    rows: list[Row]  # the method's
    full: list[Row]  # the full cache's, on the same items
    reference: str | None  # "computed" / "reused": the shared full-cache reference
    sandbox: str
    seconds: float
    method_error: str | None = None
    kept: ScoredKept | None = None  # boards A/B: the kept sets of the scored calls, the evidence's behaviour source


class JudgesData(_Closed):
    panel_note: str
    local: bool
    verdicts: list[JudgeVerdict]
    criteria: list[str]
    outcomes: list[JudgeOutcome]
    tie_break: TieBreakDecision
    usage: Usage
    corpus: list[str]
    injection: list[InjectionFinding]
    benchmark_digest: list[str] = Field(default_factory=list)
    facts: EvidenceFacts | None = None  # what the evidence judge scored from


class VerdictData(FinalVerdict):
    model_config = ConfigDict(extra="forbid")

    bundle_errors: list[Finding]


class PointsData(SubmissionPoints):
    """The submission's points, and the board measurement they were decided on."""

    model_config = ConfigDict(extra="forbid")

    measurement: BoardMeasurement | None = None
    best_before: BoardStanding | None = None
    # every entry it was compared with: id -> budget (as written) -> Overall at that budget (the report's plot)
    compared: dict[str, dict[str, float]] = Field(default_factory=dict)


BUNDLE = StageKey("bundle", BundleData)
AUDIT = StageKey("audit", AuditData)
EVIDENCE = StageKey("evidence", EvidenceData)
HARNESS = StageKey("harness", LedgerData)
BENCHMARK = StageKey("benchmark", BenchmarkData)
JUDGES = StageKey("judges", JudgesData)
VERDICT = StageKey("verdict", VerdictData)
POINTS = StageKey("points", PointsData)
