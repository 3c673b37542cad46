"""FABRICATED_EVIDENCE candidates: a cited paper that cannot exist or that arXiv does not know, and a claimed
number that a harness re-run contradicts in every seed.

A real paper with a wrong year or author is a soundness matter, not fabrication, and a contradiction that
not every seed reproduces is noise: neither raises anything here. Both kinds raised are proofs (the rubric's
``proof_alone`` lets them stand without a judge): the id cannot exist or the archive does not know it, and the
contradiction holds in every seed beyond a tolerance the reviewer set.
"""

from __future__ import annotations

from collections.abc import Iterable

from reviewbench.evidence.citations import CitationCheck
from reviewbench.evidence.claims import LedgerEntry
from reviewbench.verdict import FlagClaim


def fabricated_citation_flags(checks: Iterable[CitationCheck]) -> list[FlagClaim]:
    return [FlagClaim(flag="FABRICATED_EVIDENCE", quote=c.citation.text, location=f"DESCRIPTION.md:{c.citation.line}",
                      raised_by="evidence:citations", explanation=c.detail, strength="proof")
            for c in checks if c.status == "not_found"]


def contradicted_claim_flags(entries: Iterable[LedgerEntry]) -> list[FlagClaim]:
    return [FlagClaim(flag="FABRICATED_EVIDENCE", quote=e.claim.text, location=e.claim.source, raised_by="ledger",
                      strength="proof",
                      explanation=f"claimed {e.claim.metric} {e.claim.value:g} at budget {e.claim.budget:g} on board "
                                  f"{e.claim.board}: {e.reason}")
            for e in entries if e.status == "contradicted" and e.reproducible]
