"""UNDISCLOSED_PRIOR_ART and MISSING_ATTRIBUTION candidates from behaviour and code similarity.

Behaviour: the candidate keeps nearly the same tokens as a baseline or an earlier submission (mean Jaccard
>= ``BEHAVIOUR_SAME``) that DESCRIPTION.md does not credit. Code: a large share of the candidate's code stands
in an uncredited reference — the project's baselines, an earlier submission, or the public reference code of
a baseline (kvpress, the papers' repositories) — (token containment >= ``CODE_SHARED``, or the similarity
score, which also counts what the code computes, >= ``CODE_SCORE``), with the spans as proof.

"Credited" means attributed, not named: see ``priorart_evidence.credit`` (a citation in "Builds on", or a
sentence stating use; a contrast, a negation, a common phrase or a bare common surname is no credit). Both
flags are candidates only: the rubric makes a judge confirm them, since no similarity number decides alone.
"""

from __future__ import annotations

from collections.abc import Sequence

from reviewbench.evidence.behaviour import BehaviourMatch
from reviewbench.evidence.priorart_evidence import Credit, credit_for
from reviewbench.evidence.similarity import CodeMatch, Span
from reviewbench.verdict import FlagClaim

BEHAVIOUR_SAME = 0.9
CODE_SHARED = 0.5
CODE_SCORE = 0.6  # measured: disguised public ports vs another baseline <= 0.47; honest example submissions <= 0.50


def _first_line(source: str, spans: Sequence[Span]) -> tuple[str, int]:
    lines = source.splitlines()
    for s in spans:
        for n in range(s.start, s.end + 1):
            if 0 < n <= len(lines) and lines[n - 1].strip():
                return lines[n - 1].strip(), n
    return (lines[0].strip(), 1) if lines else ("", 1)


def _credit(reference: str, implements: str | None, names: dict[str, list[str]], description: str) -> Credit:
    """A public reference is credited when the baseline it implements is."""
    label = f"baseline:{implements}" if reference.startswith("public:") and implements else reference
    return credit_for(label, description, names.get(label, []) or names.get(reference, []))


def _describe(c: CodeMatch) -> str:
    if c.source is None:
        return c.reference
    s = c.source
    return (f"{c.reference} ({s.repo} {s.path} at {s.commit[:7]}, {s.licence}; an implementation of "
            f"{c.implements})")


def prior_art_flags(behaviour: list[BehaviourMatch], code: list[CodeMatch], names: dict[str, list[str]],
                    description: str, method_src: str, class_line: tuple[str, int]) -> list[FlagClaim]:
    """``names``: for each reference label, other names by which a description would credit it (earlier
    submissions: their id and short name); baselines and public references are credited through their papers."""
    out: list[FlagClaim] = []
    for m in behaviour:
        if m.jaccard < BEHAVIOUR_SAME:
            continue
        cr = _credit(m.reference, None, names, description)
        if not cr.credited:
            out.append(FlagClaim(flag="UNDISCLOSED_PRIOR_ART", quote=class_line[0], location=f"method.py:{class_line[1]}",
                                 raised_by="evidence:behaviour",
                                 explanation=f"keeps the same tokens as {m.reference} (Jaccard {m.jaccard:.2f}, rank "
                                             f"correlation {m.rank_corr:.2f} on the fingerprint bank); the description "
                                             f"does not credit it ({cr.reason})"))
            break
    for c in code:
        if c.containment < CODE_SHARED and c.score < CODE_SCORE:
            continue
        cr = _credit(c.reference, c.implements, names, description)
        if cr.credited:
            continue
        quote, line = _first_line(method_src, c.candidate_spans)
        spans = ", ".join(f"{s.start}-{s.end}" for s in c.candidate_spans[:6])
        out.append(FlagClaim(flag="MISSING_ATTRIBUTION", quote=quote, location=f"method.py:{line}",
                             raised_by="evidence:code",
                             explanation=f"the code matches {_describe(c)}: token containment {c.containment:.0%}, "
                                         f"operation containment {c.op_containment:.0%}, score {c.score:.2f} (lines "
                                         f"{spans}); the description does not credit it ({cr.reason})"))
        break
    return out
