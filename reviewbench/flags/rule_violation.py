"""RULE_VIOLATION from the audit: each violation is a candidate flag whose proof is the logged action."""

from __future__ import annotations

from collections.abc import Iterable

from reviewbench.logs.rules import AuditFinding
from reviewbench.verdict import FlagClaim


def rule_violation_flags(findings: Iterable[AuditFinding], agent: str) -> list[FlagClaim]:
    """One claim per violating category of this agent (the first proof of each); warnings never flag."""
    by_category: dict[str, AuditFinding] = {}
    for f in findings:
        if f.severity == "violation" and f.agent == agent and f.category not in by_category:
            by_category[f.category] = f
    return [FlagClaim(flag="RULE_VIOLATION", quote=f.evidence, location=f.source, raised_by="audit",
                      explanation=f"{f.category}: {f.rule}") for f in by_category.values()]
