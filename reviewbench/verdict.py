"""From judge verdicts and machine-raised candidate flags to one final verdict. Pure: no I/O, no clock.

Every threshold comes from the rubric, so the rules can change without touching this code.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, Field

from reviewbench.rubric import FlagId, Rubric


class CriterionScore(BaseModel):
    score: float
    rationale: str = ""


class FlagClaim(BaseModel):
    """A flag with its proof: a quote and where it stands (file:line, log line or URL)."""

    flag: FlagId
    quote: str
    location: str
    explanation: str = ""
    raised_by: str = ""  # judge id, or the evidence stage that raised it
    strength: Literal["proof", "indication"] = "indication"  # machine candidates: meets the rubric's proof bar?


class PriorWork(BaseModel):
    title: str
    arxiv_id: str | None = None
    url: str | None = None
    relation: str = ""


class JudgeCitationCheck(BaseModel):
    """A citation a judge reports it checked, in its own words (the machine's resolution of every citation is
    ``evidence.citations.CitationCheck``)."""

    citation: str
    status: Literal["real", "wrong_metadata", "not_found", "unchecked"]
    note: str = ""


class JudgeVerdict(BaseModel):
    judge_id: str
    family: str
    provider: str
    model: str
    local: bool = False
    role: Literal["primary", "tie_break", "advisory"] = "primary"
    deterministic: bool = False  # a judge whose same inputs always give the same verdict (no second run is needed)
    scores: dict[str, CriterionScore]
    flags: list[FlagClaim] = Field(default_factory=list)
    prior_work: list[PriorWork] = Field(default_factory=list)
    citations_checked: list[JudgeCitationCheck] = Field(default_factory=list)
    summary: str = ""

    def score(self, criterion: str) -> float:
        return self.scores[criterion].score


class TieBreakDecision(BaseModel):
    needed: bool
    family: str | None = None  # the family the third judge must be of
    reasons: list[str] = Field(default_factory=list)


class DroppedFlag(BaseModel):
    claim: FlagClaim
    reason: str


VerdictStatus = Literal["complete", "awaiting_tie_break", "single_judge", "no_judges"]


class FinalVerdict(BaseModel):
    status: VerdictStatus
    scores: dict[str, float | None]
    judge_points: float | None
    standing_flags: list[FlagClaim]
    dropped_flags: list[DroppedFlag]
    tie_break: TieBreakDecision
    n_judges: int
    judges: list[str]

    @property
    def flagged(self) -> bool:
        return bool(self.standing_flags)


def _norm(text: str) -> str:
    return " ".join(text.split()).lower()


def proof_exists(claim: FlagClaim, corpus: Sequence[str]) -> bool:
    """A proof counts only if its quote really stands in what the judge was shown."""
    quote = _norm(claim.quote)
    return bool(quote) and any(quote in _norm(doc) for doc in corpus)


def tie_break_family(author_family: str, panel_families: Sequence[str]) -> str:
    """The family that did not write the submission. If neither panel family wrote it, the first judge's."""
    others = [f for f in panel_families if f != author_family]
    if not others:
        raise ValueError(f"every judge is of the author's family {author_family!r}: no independent tie-breaker")
    return others[0]


def decide_tie_break(
    first: JudgeVerdict,
    second: JudgeVerdict,
    rubric: Rubric,
    author_family: str,
    family_offsets: dict[str, dict[str, float]] | None = None,
) -> TieBreakDecision:
    """A third judge is needed when any criterion differs by more than the threshold, or the flags differ."""
    reasons: list[str] = []
    offsets = family_offsets if rubric.tie_break.subtract_family_offsets and family_offsets else {}
    for c in rubric.criteria:
        a = first.score(c.id) - offsets.get(first.family, {}).get(c.id, 0.0)
        b = second.score(c.id) - offsets.get(second.family, {}).get(c.id, 0.0)
        if abs(a - b) > rubric.tie_break.threshold + 1e-9:
            reasons.append(f"{c.id}: {first.judge_id} {a:g} vs {second.judge_id} {b:g} "
                           f"(differ by more than {rubric.tie_break.threshold:g})")
    if rubric.tie_break.on_flag_disagreement:
        fa, fb = {f.flag for f in first.flags}, {f.flag for f in second.flags}
        for flag in sorted(fa ^ fb):
            reasons.append(f"flag {flag} raised by only one judge")
    if not reasons:
        return TieBreakDecision(needed=False)
    return TieBreakDecision(needed=True, reasons=reasons,
                            family=tie_break_family(author_family, [first.family, second.family]))


def _aggregate(values: list[float], rubric: Rubric) -> float:
    v = statistics.median(values) if rubric.aggregate.method == "median" else statistics.fmean(values)
    step = rubric.aggregate.round_to
    return round(v / step) * step if step else v


def decide(
    verdicts: Sequence[JudgeVerdict],
    rubric: Rubric,
    author_family: str,
    candidate_flags: Sequence[FlagClaim] = (),
    corpus: Sequence[str] | None = None,
    family_offsets: dict[str, dict[str, float]] | None = None,
) -> FinalVerdict:
    """The final verdict. ``corpus`` (the texts the judges saw) checks flag proofs; None skips the check."""
    dropped: list[DroppedFlag] = []
    valid: list[JudgeVerdict] = []
    for v in verdicts:
        keep = []
        for claim in v.flags:
            if corpus is not None and not proof_exists(claim, corpus):
                dropped.append(DroppedFlag(claim=claim, reason="proof quote not found in the judge's inputs"))
            else:
                keep.append(claim)
        valid.append(v.model_copy(update={"flags": keep}))

    primaries = [v for v in valid if v.role == "primary"]  # advisory verdicts are reported, never counted
    tie = TieBreakDecision(needed=False)
    if len(primaries) >= 2:
        tie = decide_tie_break(primaries[0], primaries[1], rubric, author_family, family_offsets)

    # Which verdicts count: the two primaries, plus the tie-breaker when one was needed and ran.
    counted = primaries[:2]
    breakers = [v for v in valid if v.role == "tie_break"]
    if tie.needed and breakers:
        right = [b for b in breakers if b.family == tie.family]
        if right:
            counted = counted + right[:1]
        else:
            dropped.extend(DroppedFlag(claim=f, reason=f"tie-break judge of family {b.family}, expected {tie.family}")
                           for b in breakers for f in b.flags)
    status: VerdictStatus
    if not counted:
        status = "no_judges"
    elif len(counted) == 1:
        status = "complete" if counted[0].deterministic else "single_judge"
    elif tie.needed and len(counted) < 3:
        status = "awaiting_tie_break"
    else:
        status = "complete"

    scores: dict[str, float | None] = {
        c.id: (_aggregate([v.score(c.id) for v in counted], rubric) if counted else None) for c in rubric.criteria
    }
    judge_points = None
    if counted:
        raw = sum(s for s in scores.values() if s is not None)
        judge_points = round(raw / rubric.raw_max * rubric.judge_points_max, 2)

    standing: list[FlagClaim] = []
    judge_raised: dict[str, list[FlagClaim]] = {}
    for v in counted:
        for claim in {c.flag: c for c in v.flags}.values():  # one vote per judge per flag
            judge_raised.setdefault(claim.flag, []).append(claim)
    for flag, claims in sorted(judge_raised.items()):
        share = len(claims) / len(counted)
        if share > rubric.flag_effect.stands_above_share:
            standing.append(claims[0])
        else:
            dropped.extend(DroppedFlag(claim=c, reason=f"raised by {len(claims)} of {len(counted)} judges")
                           for c in claims)
    for claim in candidate_flags:
        mode = rubric.flag(claim.flag).deterministic
        proof = mode == "proof_alone" and claim.strength == "proof"
        if mode == "alone" or proof or (mode in ("confirm", "proof_alone") and claim.flag in judge_raised):
            if all(s.flag != claim.flag for s in standing):
                standing.append(claim)
        elif mode in ("confirm", "proof_alone"):
            why = ("machine evidence needs a judge to confirm this flag" if mode == "confirm" else
                   "this evidence is below the rubric's proof bar: a judge must confirm it")
            dropped.append(DroppedFlag(claim=claim, reason=why))
        else:
            dropped.append(DroppedFlag(claim=claim, reason="the rubric does not let machine evidence raise this flag"))

    return FinalVerdict(status=status, scores=scores, judge_points=judge_points, standing_flags=standing,
                        dropped_flags=dropped, tie_break=tie, n_judges=len(counted),
                        judges=[v.judge_id for v in counted])
