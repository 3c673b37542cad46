"""What the judges are shown, gathered once from the pipeline's upstream stages and sanitised.

Everything a submission wrote passes through :mod:`reviewbench.judges.sanitize` first; the author's own
account of related work ("Relation to prior work", "Builds on") is held back from the first prompt and
handed over by a tool only after the judge has searched for prior work itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from reviewbench.description import SECTION_TITLES, parse_description
from reviewbench.judges.sanitize import InjectionFinding, defang, fence, nonce

AUTHOR_RELATED = ("relation_to_prior_work", "builds_on")


class EarlierRef(BaseModel):
    id: str
    agent: str
    board: str | None
    short_name: str | None
    path: str


class JudgeInputs(BaseModel):
    submission_id: str
    board: str | None
    board_setting: str = ""
    tag: str  # fence nonce, from the sanitised content
    method_py: str  # sanitised
    sections: dict[str, str]  # sanitised DESCRIPTION.md sections the judge reads first
    related: dict[str, str]  # sanitised author's related-work sections, behind the read_author_related_work tool
    title: str | None = None
    audit_digest: list[str] = Field(default_factory=list)
    evidence_digest: list[str] = Field(default_factory=list)
    earlier: list[EarlierRef] = Field(default_factory=list)
    injection: list[InjectionFinding] = Field(default_factory=list)
    log_dir: str | None = None

    def fenced_method(self) -> str:
        return fence(self.method_py, "method.py", self.tag)

    def fenced_sections(self, keys: tuple[str, ...] | None = None) -> str:
        parts = [f"## {SECTION_TITLES[k]}\n{v}" for k, v in self.sections.items() if keys is None or k in keys]
        return fence("\n\n".join(parts) or "(no sections)", "DESCRIPTION.md", self.tag)

    def fenced_related(self) -> str:
        parts = [f"## {SECTION_TITLES[k]}\n{v}" for k, v in self.related.items()]
        return fence("\n\n".join(parts) or "(the description has no related-work or builds-on section)",
                     "DESCRIPTION.md", self.tag)

    def corpus(self) -> list[str]:
        """Every text shown to a judge by the prompt itself; tool results are added by the panel."""
        return [self.method_py, *self.sections.values(), *self.related.values(), *self.audit_digest,
                *self.evidence_digest]


def sanitise_bundle(method_src: str, description: str) -> tuple[str, dict[str, str], dict[str, str], str | None,
                                                                list[InjectionFinding]]:
    m = defang(method_src, "method.py")
    d = defang(description, "DESCRIPTION.md")
    parsed, _ = parse_description(d.text)
    sections = {k: s.text.strip() for k, s in parsed.sections.items() if k not in AUTHOR_RELATED}
    related = {k: s.text.strip() for k, s in parsed.sections.items() if k in AUTHOR_RELATED}
    ordered = {k: sections[k] for k in SECTION_TITLES if k in sections}
    return m.text, ordered, related, parsed.title, [*m.findings, *d.findings]


def build_inputs(*, submission_id: str, board: str | None, board_setting: str, method_src: str, description: str,
                 audit_summary: str | None, audit_findings: list[dict[str, Any]], evidence_lines: list[str], earlier: list[EarlierRef],
                 log_dir: Path | None) -> JudgeInputs:
    method_py, sections, related, title, injection = sanitise_bundle(method_src, description)
    tag = nonce(method_py, *sections.values(), *related.values())
    return JudgeInputs(submission_id=submission_id, board=board, board_setting=board_setting, tag=tag,
                       method_py=method_py, sections=sections, related=related, title=title,
                       audit_digest=audit_digest(audit_summary, audit_findings), evidence_digest=evidence_lines, earlier=earlier,
                       injection=injection, log_dir=str(log_dir) if log_dir else None)


def audit_digest(summary: str | None, findings: list[dict[str, Any]], limit: int = 25) -> list[str]:
    """The audit stage's summary and one line per finding (severity says whether it is in this submission's
    window: error/warning inside it, info outside)."""
    if summary is None:
        return ["(no log audit ran for this submission)"]
    lines = [f"log audit: {summary}"]
    for f in findings[:limit]:
        lines.append(f"- [{f.get('severity')}] {f.get('code')}: {str(f.get('message'))[:240]} ({f.get('location')})")
    if len(findings) > limit:
        lines.append(f"- ... {len(findings) - limit} more (use search_log)")
    return lines
