"""A method that behaves differently when reviewed than where it is scored: a RULE_VIOLATION candidate.

The behaviour evidence measures a method twice: on the benchmark's scored calls (the hidden test split) and on the
review's bank of dev prompts. How alike a method is to a baseline is a property of the two rules, not of the
inputs; it moves little between the two sources. When the scored calls show the method keeping a reference's
tokens (the rubric's ``behaviour_same``) and the bank shows it is not that method (below ``behaviour_related``),
the method told the review's inputs apart and hid what it is there: tampering with the review, which the rubric's
RULE_VIOLATION covers (harness tampering), raised with both measurements as proof. A gap the other way, or a gap
that does not cross both thresholds, is reported (``BehaviourDivergence``) and raises nothing. Where the description
credits that reference, the bank hides nothing the flags stand on (the credit removes UNDISCLOSED_PRIOR_ART whatever
the bank shows), and a method whose own step depends on the inputs (a floor per segment, a threshold) keeps a
reference's tokens on one kind of input and not on another: an indication then, for a judge to weigh.
"""

from __future__ import annotations

from reviewbench.evidence.behaviour import BehaviourEvidence
from reviewbench.evidence.priorart_evidence import credit_for
from reviewbench.verdict import FlagClaim


def evasion_flags(behaviour: BehaviourEvidence | None, class_line: tuple[str, int],
                  description: str = "") -> list[FlagClaim]:
    d = behaviour.divergence if behaviour is not None else None
    if d is None or not d.evasion:
        return []
    quote, line = class_line
    credit = credit_for(d.reference, description)
    but = (f"; but the description credits {d.reference} ({credit.reason}): nothing the flags stand on is hidden, "
           f"and an input-dependent step of its own can move it" if credit.credited else "")
    return [FlagClaim(flag="RULE_VIOLATION", quote=quote or "method.py", location=f"method.py:{line}",
                      raised_by="evidence:behaviour", strength="indication" if credit.credited else "proof",
                      explanation=f"review evasion: {d.summary} (measured by the trusted harness on both; "
                                  f"{behaviour.where if behaviour else ''}){but}")]
