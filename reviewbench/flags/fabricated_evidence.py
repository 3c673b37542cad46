"""FABRICATED_EVIDENCE from the citation check: a cited paper that cannot exist or that arXiv does not know.

A real paper with a wrong year or author is a soundness matter, not fabrication, and raises nothing here.
The rubric requires a judge to confirm this flag.
"""

from __future__ import annotations

from collections.abc import Iterable

from reviewbench.evidence.citations import CitationCheck
from reviewbench.verdict import FlagClaim


def fabricated_citation_flags(checks: Iterable[CitationCheck]) -> list[FlagClaim]:
    return [FlagClaim(flag="FABRICATED_EVIDENCE", quote=c.citation.text, location=f"DESCRIPTION.md:{c.citation.line}",
                      raised_by="evidence:citations", explanation=c.detail)
            for c in checks if c.status == "not_found"]
