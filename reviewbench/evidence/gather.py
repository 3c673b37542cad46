"""Gathering the evidence judge's facts from the stages' typed outputs (the judges stage passes them in)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Literal

from reviewbench.evidence.facts import (BoardFact, CitationFact, ComputedFact, EvidenceFacts, LedgerFact, PriorArtFact,
                                        SimilarityFact)
from reviewbench.evidence.behaviour import told_apart
from reviewbench.evidence.priorart_evidence import credit_for, declared_port, source_order
from reviewbench.rubric import EvidenceRules

if TYPE_CHECKING:  # the stages' output models (the judges stage calls this; nothing here imports the stages)
    from reviewbench.stages.evidence import EvidenceData
    from reviewbench.stages.ledger import LedgerData


def gather_facts(*, evidence: EvidenceData | None, ledger: LedgerData | None, sections_missing: list[str],
                 description: str,
                 earlier_names: dict[str, list[str]], board: BoardFact | None, board_reason: str,
                 rules: EvidenceRules | None = None) -> EvidenceFacts:
    """Facts from the typed stage outputs (``EvidenceData``, ``LedgerData``); ``rules`` (the rubric's) say when
    behaviour can name a published rule's reference."""
    rules = rules or EvidenceRules()
    def credit(reference: str, implements: str | None) -> tuple[bool, str]:
        label = f"baseline:{implements}" if reference.startswith("public:") and implements else reference
        c = credit_for(label, description, earlier_names.get(label, []) or earlier_names.get(reference, []))
        return c.credited, c.reason

    code: list[SimilarityFact] = []
    behaviour: list[SimilarityFact] = []
    prior: list[PriorArtFact] = []
    measured = False
    cites = CitationFact()
    computed: list[ComputedFact] = []
    misstated: list[str] = []
    n_citations = 0
    if evidence is not None:
        for m in evidence.code[:5]:
            ok, why = credit(m.reference, m.implements)
            code.append(SimilarityFact(reference=m.reference, implements=m.implements, via="code", score=m.score,
                                       containment=m.weighted_containment, credited=ok, credit_reason=why,
                                       detail=f"operation containment {m.op_containment:.2f}"))
        if evidence.behaviour is not None:
            measured = bool(evidence.behaviour.matches)
            matches = evidence.behaviour.matches
            for b in matches[:5]:
                if not told_apart(b, matches, rules.behaviour_margin, rules.behaviour_identical):
                    continue  # a published rule behaviour cannot tell from its neighbours names nothing
                implements = getattr(b, "implements", None) or (
                    b.reference.split(":", 1)[1].split("?")[0] if b.reference.startswith("baseline:") else None)
                ok, why = credit(b.reference, implements)
                behaviour.append(SimilarityFact(reference=b.reference, implements=implements, via="behaviour",
                                                score=b.jaccard, credited=ok, credit_reason=why,
                                                detail=f"rank correlation {b.rank_corr:.2f}"))
        prior = [PriorArtFact(short_name=h.short_name, title=h.title, arxiv=h.arxiv, via=h.via, credited=h.credited)
                 for h in evidence.prior_art.hits[:6]]
        counts = {s: sum(c.status == s for c in evidence.citations)
                  for s in ("real", "wrong_metadata", "not_found", "unreachable")}
        cites = CitationFact(**counts)
        n_citations = len(evidence.citations)
        computed = [ComputedFact(short_name=c.short_name, title=c.title, arxiv=c.arxiv, level=c.level,
                                 ops=list(c.matched), extra=c.extra, credited=c.credited)
                    for c in evidence.prior_art.computed
                    if c.short_name in {m.short_name for m in evidence.prior_art.computed[:4]
                                        + source_order(evidence.prior_art.computed)[:4]}]
        for f in evidence.candidate_flags:  # the mechanism named by flags.misstated (our text, not the submission's)
            said = re.match(r"the description states (.+?) \(DESCRIPTION\.md", f.explanation)
            if f.flag == "MISSTATED_METHOD" and f.strength == "proof" and said:
                misstated.append(said.group(1))
    led = LedgerFact()
    n_claims = 0
    if ledger is not None:
        n_claims = len(ledger.ledger)
        led = LedgerFact(reproduced=sum(e.status == "reproduced" for e in ledger.ledger),
                         contradicted=sum(e.status == "contradicted" for e in ledger.ledger),
                         contradicted_every_seed=sum(e.status == "contradicted" and e.reproducible
                                                     for e in ledger.ledger),
                         unverifiable=sum(e.status == "unverifiable" for e in ledger.ledger))
    roles, role_papers = _head_roles(evidence, rules)
    port = declared_port(description) if description else None
    return EvidenceFacts(code=code, behaviour=behaviour, behaviour_measured=measured, prior_art=prior, ledger=led,
                         citations=cites, sections_missing=sections_missing, board=board, board_reason=board_reason,
                         computed=computed, misstated=misstated, claims=n_claims, citations_found=n_citations,
                         declared_port=port.short_name if port else "",
                         declared_port_arxiv=(port.arxiv or "") if port else "", head_roles=roles,
                         head_role_papers=role_papers,
                         evidence_missing="" if evidence is not None else
                         "the evidence stage gave no result (not run, skipped or failed)")


def _head_roles(evidence: EvidenceData | None, rules: EvidenceRules) -> tuple[Literal["", "same", "family"], list[str]]:
    """Whether the kept sets show the streaming/content-head split (either source), and whether the code computes
    anything of its own beside it (``flags.prior_art``'s filler test)."""
    from reviewbench.flags.prior_art import head_role_papers, role_extras, split_roles

    if evidence is None or evidence.behaviour is None or not split_roles(evidence.behaviour.head_roles, rules):
        return "", []
    names = [p.short_name for p in head_role_papers()]
    return ("family" if role_extras(evidence.prior_art.features) else "same"), names
