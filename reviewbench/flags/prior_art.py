"""UNDISCLOSED_PRIOR_ART and MISSING_ATTRIBUTION candidates from behaviour and code similarity.

Behaviour: the candidate keeps nearly the same tokens as a baseline or an earlier submission (mean Jaccard
>= ``BEHAVIOUR_SAME``) that DESCRIPTION.md never names. Code: a large share of the candidate's fingerprints
(containment >= ``CODE_SHARED``) stands in an uncredited reference, with the spans as proof. Both are
candidates only: the rubric makes a judge confirm them, since no similarity number decides alone.
"""

from __future__ import annotations

from reviewbench.evidence.behaviour import BehaviourMatch
from reviewbench.evidence.similarity import CodeMatch
from reviewbench.verdict import FlagClaim

BEHAVIOUR_SAME = 0.9
CODE_SHARED = 0.5


def _first_line(source: str, spans) -> tuple[str, int]:
    lines = source.splitlines()
    for s in spans:
        for n in range(s.start, s.end + 1):
            if 0 < n <= len(lines) and lines[n - 1].strip():
                return lines[n - 1].strip(), n
    return (lines[0].strip(), 1) if lines else ("", 1)


def prior_art_flags(behaviour: list[BehaviourMatch], code: list[CodeMatch], names: dict[str, list[str]],
                    description: str, method_src: str, class_line: tuple[str, int]) -> list[FlagClaim]:
    """``names``: for each reference label, the names by which a description would credit it."""
    text = description.lower()

    def uncredited(ref: str) -> bool:
        return not any(n.lower() in text for n in names.get(ref, []))

    out: list[FlagClaim] = []
    for m in behaviour:
        if m.jaccard >= BEHAVIOUR_SAME and uncredited(m.reference):
            out.append(FlagClaim(flag="UNDISCLOSED_PRIOR_ART", quote=class_line[0], location=f"method.py:{class_line[1]}",
                                 raised_by="evidence:behaviour",
                                 explanation=f"keeps the same tokens as {m.reference} (Jaccard {m.jaccard:.2f}, rank "
                                             f"correlation {m.rank_corr:.2f} on the fingerprint bank); the description "
                                             "does not name it"))
            break
    for c in code:
        if c.containment >= CODE_SHARED and uncredited(c.reference):
            quote, line = _first_line(method_src, c.candidate_spans)
            spans = ", ".join(f"{s.start}-{s.end}" for s in c.candidate_spans[:6])
            out.append(FlagClaim(flag="MISSING_ATTRIBUTION", quote=quote, location=f"method.py:{line}",
                                 raised_by="evidence:code",
                                 explanation=f"{c.containment:.0%} of the code's fingerprints stand in {c.reference} "
                                             f"(lines {spans}); 'Builds on' does not credit it"))
            break
    return out
