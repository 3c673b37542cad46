"""What the tests of ported rules share: a description in the arena's six sections, an index paper by name, and the
computation flags of a method's code under a description (tests/test_priorart_ported_rules.py and
tests/test_priorart_storage_ports.py)."""

from __future__ import annotations

from reviewbench.evidence.priorart_evidence import PriorArtEvidence, prior_art
from reviewbench.flags.prior_art import computation_flags
from reviewbench.priorart import load_index
from reviewbench.verdict import FlagClaim


def desc(idea: str, relation: str = "None.", builds: str = "None.") -> str:
    return (f"# M\n\n## Idea\n{idea}\n\n## Method summary\n{idea}\n\n## Relation to prior work\n{relation}\n\n"
            f"## Evidence\nNone.\n\n## Limitations\nSome.\n\n## Builds on\n{builds}\n")


def paper(short: str):
    return next(p for p in load_index().papers if p.short_name == short)


def flags(src: str, description: str) -> tuple[PriorArtEvidence, list[FlagClaim]]:
    ev = prior_art(src, "", "", description)
    return ev, computation_flags(ev.computed, [], src)
