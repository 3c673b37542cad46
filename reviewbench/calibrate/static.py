"""A review from the code and the description alone: the evidence that needs no sandbox (code similarity,
retrieval by computation, the stated mechanism, citations offline), the flags it proves and the measured novelty.

Seconds per bundle, so a set of methods (a held-out set, a precision round) can be read again after every change to
the reader; the behaviour bank, the claim ledger, the audit and the benchmark stage are what it leaves out.
"""

from __future__ import annotations

import asyncio
import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from reviewbench.rubric import RUBRICS_DIR

class StaticReview(BaseModel):
    """What the static review of one bundle stands on: its standing flags, the measured novelty and the arXiv ids
    of the first three prior works it names."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    flags: list[str]
    novelty: float
    prior_work: list[str | None]


def static_review(folder: Path, rubric_path: Path = RUBRICS_DIR / "default.toml",
                  executed: list[int] | None = None) -> StaticReview:
    """The static review of the bundle in ``folder`` (``method.py``, ``DESCRIPTION.md``, ``meta.toml`` for its
    board). ``executed``: the lines of method.py that ran on its benchmark calls, where recorded (the code is then
    read as it ran, as the evidence stage reads it)."""
    from reviewbench.description import parse_description
    from reviewbench.evidence.citations import check_citations
    from reviewbench.evidence.gather import gather_facts
    from reviewbench.evidence.judge import judge
    from reviewbench.evidence.priorart_evidence import prior_art
    from reviewbench.evidence.scored_code import scored_code
    from reviewbench.evidence.similarity import baseline_sources, compare, public_references
    from reviewbench.flags.fabricated_evidence import fabricated_citation_flags
    from reviewbench.flags.misstated import misstated_flags
    from reviewbench.flags.prior_art import computation_flags, prior_art_flags
    from reviewbench.rubric import load_rubric
    from reviewbench.stages.evidence import EvidenceData, reference_names
    from reviewbench.verdict import decide

    rubric = load_rubric(rubric_path)
    desc, whole = (folder / "DESCRIPTION.md").read_text(), (folder / "method.py").read_text()
    src = scored_code(whole, executed).source
    parsed, _ = parse_description(desc)

    def section(k: str) -> str:
        s = parsed.sections.get(k)
        return s.text if s else ""

    meta = folder / "meta.toml"
    board = tomllib.loads(meta.read_text()).get("board") if meta.is_file() else None
    pa = prior_art(src, section("method_summary"), section("idea"), desc, board=board)
    code = compare(src, {**baseline_sources(), **public_references()})
    cites = asyncio.run(check_citations(desc, None))
    flags = fabricated_citation_flags(cites) + prior_art_flags([], code, reference_names(),
                                                               desc, src, ("", 1), rubric.evidence)
    computed = computation_flags(pa.computed, [], src, rubric.evidence)
    if computed and not any(f.flag == "UNDISCLOSED_PRIOR_ART" and f.strength == "proof" for f in flags):
        flags = [f for f in flags if f.flag != "UNDISCLOSED_PRIOR_ART"] + computed
    flags += misstated_flags(desc, whole, [], rubric.evidence)
    ev = EvidenceData(citations=cites, prior_art=pa, code=code, behaviour=None, digest=[], candidate_flags=flags)
    facts = gather_facts(evidence=ev, ledger=None, sections_missing=[], description=desc, earlier_names={},
                         board=None, board_reason="static", rules=rubric.evidence)
    v = judge(facts, rubric)
    final = decide([], rubric, "other", flags)
    return StaticReview(flags=sorted({f.flag for f in final.standing_flags}), novelty=v.scores["novelty"].score,
                        prior_work=[p.arxiv_id for p in v.prior_work[:3]])
