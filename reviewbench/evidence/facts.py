"""The measured facts of a review, gathered for the evidence judge: numbers and names only, no prose.

Everything here comes from the deterministic stages — code and behaviour similarity, prior-art retrieval, whether
the description credits what it resembles, the claim ledger, the citation check, which sections exist, and the
board measurement against the board's entries — so a judge that reads only these facts cannot be moved by
anything the submission says to a reviewer.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from reviewbench.overall import BoardMeasurement


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SimilarityFact(_Closed):
    reference: str  # "baseline:snapkv", "public:...", "submission:agent2-003"
    implements: str | None  # the baseline it stands for (public code, a baseline's family member)
    via: str  # "code" or "behaviour"
    score: float  # code: the combined similarity score; behaviour: mean Jaccard
    # code: share of the candidate's fingerprints found there, weighted by rarity (what every family shares weighs little)
    containment: float | None = None
    detail: str = ""  # family member, rank correlation, ...
    credited: bool
    credit_reason: str


class PriorArtFact(_Closed):
    short_name: str
    title: str
    arxiv: str | None
    via: str
    credited: bool


class ComputedFact(_Closed):
    """A paper whose scoring rule the code computes, operation for operation (retrieval by computation)."""

    short_name: str
    title: str
    arxiv: str | None
    level: str  # "same": nothing of its own beside the rule; "family": the rule plus one operation of its own
    ops: list[str]  # the paper's operations found in the code
    extra: list[str] = Field(default_factory=list)  # what the code computes beyond the rule
    credited: bool


class LedgerFact(_Closed):
    reproduced: int = 0
    contradicted: int = 0
    contradicted_every_seed: int = 0
    unverifiable: int = 0


class CitationFact(_Closed):
    real: int = 0
    wrong_metadata: int = 0
    not_found: int = 0
    unreachable: int = 0


class BudgetGain(_Closed):
    budget: float
    gain: float  # the submission's Overall minus the board best's, at this budget
    lower: float  # paired-bootstrap CI over items
    upper: float


class BoardFact(_Closed):
    measurement: BoardMeasurement
    best_id: str | None
    best_overall: float | None
    random_overall: float | None  # the random-eviction baseline's Overall on the same items
    weakest_overall: float | None  # the weakest non-random baseline's
    gains: list[BudgetGain] = Field(default_factory=list)  # vs the board best, per budget
    overall_gain: BudgetGain | None = None  # vs the board best, over budgets
    margin: float  # the points rules' minimum CI gain


class EvidenceFacts(_Closed):
    code: list[SimilarityFact] = Field(default_factory=list)  # nearest first
    behaviour: list[SimilarityFact] = Field(default_factory=list)
    behaviour_measured: bool = False
    prior_art: list[PriorArtFact] = Field(default_factory=list)
    computed: list[ComputedFact] = Field(default_factory=list)  # most specific first
    misstated: list[str] = Field(default_factory=list)  # mechanisms the description states that the code lacks (proof)
    # the paper the description says this method, as a whole, is a port / (re)implementation / reproduction /
    # adaptation of (``priorart_evidence.declared_port``; an index paper, or a work the description cites by arXiv id):
    # its short name, "" when none. The one fact read from the
    # description's prose, and it can only lower a score (the method exists: novelty at most 1)
    declared_port: str = ""
    declared_port_arxiv: str = ""  # its arXiv id, when the description or the index gives one
    # the published idea its kept sets show (``behaviour.HeadRoles`` at the rubric's ``head_roles_split``): a split
    # of the heads into streaming and content-chosen ones. "same": nothing of its own beside it in the code; "family":
    # something; "" when not seen. With the papers of that idea (``flags.prior_art.head_role_papers``)
    head_roles: Literal["", "same", "family"] = ""
    head_role_papers: list[str] = Field(default_factory=list)
    ledger: LedgerFact = LedgerFact()
    citations: CitationFact = CitationFact()
    sections_missing: list[str] = Field(default_factory=list)
    claims: int = 0  # claims in claims.json (checked or not)
    citations_found: int = 0  # citations found in the description
    board: BoardFact | None = None
    board_reason: str = ""  # why there is no board measurement
    # why no code, behaviour or computation evidence was gathered ("" when it was): novelty is then not measured,
    # and an empty list of matches must not read as "distinct from every reference"
    evidence_missing: str = ""
