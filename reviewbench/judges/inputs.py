"""What the judges are shown, gathered once from the pipeline's upstream stages and sanitised.

Every string that a submission or a log wrote — method.py, DESCRIPTION.md, the title, the meta fields, the
names of earlier submissions, commands quoted by the audit, quotes in the evidence digest — passes through
:mod:`reviewbench.judges.sanitize` and reaches a prompt only inside the nonce fence. What the arena itself
measured (``benchmark_digest``) is trusted and stands outside it. The author's own account of related work
("Relation to prior work", "Builds on") is held back from the first prompt and handed over by a tool only
after the judge has searched for prior work itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from reviewbench.description import SECTION_TITLES, parse_description
from reviewbench.evidence.facts import EvidenceFacts
from reviewbench.judges.sanitize import InjectionFinding, defang, fence, nonce, safe_label

AUTHOR_RELATED = ("relation_to_prior_work", "builds_on")


class EarlierRef(BaseModel):
    id: str
    agent: str
    board: str | None
    short_name: str | None
    path: str


class CitationRef(BaseModel):
    """A citation of DESCRIPTION.md the judge must check: its text as written and the key that identifies it."""

    text: str
    key: str  # arXiv id, DOI, URL, or "Surname YEAR" (all words must appear in the judge's citation entry)


class JudgeInputs(BaseModel):
    submission_id: str
    board: str | None
    board_setting: str = ""
    tag: str  # fence nonce, from the sanitised content
    method_py: str  # sanitised
    sections: dict[str, str]  # sanitised DESCRIPTION.md sections the judge reads first
    related: dict[str, str]  # sanitised author's related-work sections, behind the read_author_related_work tool
    title: str | None = None  # sanitised; shown fenced
    meta: dict[str, str] = Field(default_factory=dict)  # sanitised meta fields (short_name, agent); shown fenced
    audit_digest: list[str] = Field(default_factory=list)  # quotes the agent's commands: shown fenced
    evidence_digest: list[str] = Field(default_factory=list)  # quotes the submission: shown fenced
    benchmark_digest: list[str] = Field(default_factory=list)  # the arena's own measurements: trusted, unfenced
    earlier: list[EarlierRef] = Field(default_factory=list)
    citations: list[CitationRef] = Field(default_factory=list)
    injection: list[InjectionFinding] = Field(default_factory=list)
    log_dir: str | None = None
    facts: EvidenceFacts | None = None  # measured facts only (the evidence judge's whole input): never prose

    def fence_text(self, text: str, label: str) -> str:
        return fence(text, label, self.tag)

    def fenced_method(self) -> str:
        return self.fence_text(self.method_py, "method.py")

    def fenced_sections(self, keys: tuple[str, ...] | None = None) -> str:
        parts = [f"## {SECTION_TITLES[k]}\n{v}" for k, v in self.sections.items() if keys is None or k in keys]
        return self.fence_text("\n\n".join(parts) or "(no sections)", "DESCRIPTION.md")

    def fenced_related(self) -> str:
        parts = [f"## {SECTION_TITLES[k]}\n{v}" for k, v in self.related.items()]
        return self.fence_text("\n\n".join(parts) or "(the description has no related-work or builds-on section)",
                               "DESCRIPTION.md")

    def fenced_header(self) -> str:
        """The title and meta fields as the author wrote them."""
        lines = [f"title: {self.title}" if self.title else "title: (none)"]
        lines += [f"{k}: {v}" for k, v in sorted(self.meta.items())]
        return self.fence_text("\n".join(lines), "DESCRIPTION.md title and meta.toml")

    def fenced_audit(self) -> str:
        return self.fence_text("\n".join(self.audit_digest), "log audit (quotes the agent's logs)")

    def fenced_evidence(self) -> str:
        return self.fence_text("\n".join(self.evidence_digest) or "(none)",
                               "machine evidence (quotes the submission)")

    def fenced_earlier(self) -> str:
        if not self.earlier:
            return "(none)"
        lines = [f"- {e.id} by {e.agent}, board {e.board or '-'}" + (f": {e.short_name}" if e.short_name else "")
                 for e in self.earlier]
        return self.fence_text("\n".join(lines), "earlier submissions (names as their authors gave them)")

    def injection_report(self) -> list[str]:
        """Where hidden text was removed, by hash: the text itself never reaches a judge."""
        return [f"{f.kind} at {safe_label(f.location)}: {f.chars} characters, sha256 {f.sha256[:16]}"
                for f in self.injection]

    def corpus(self) -> list[str]:
        """Every text shown to a judge by the prompt itself; tool results are added by the panel."""
        return [self.method_py, *self.sections.values(), *self.related.values(), *self.audit_digest,
                *self.evidence_digest, *self.benchmark_digest, self.title or ""]


def _clean(text: str, name: str, classify: bool) -> tuple[str, list[InjectionFinding]]:
    s = defang(text, name, classify=classify)
    return s.text, s.findings


def sanitise_bundle(method_src: str, description: str, classify: bool = True
                    ) -> tuple[str, dict[str, str], dict[str, str], str | None, list[InjectionFinding]]:
    m = defang(method_src, "method.py", classify=classify)
    d = defang(description, "DESCRIPTION.md", classify=classify)
    parsed, _ = parse_description(d.text)
    sections = {k: s.text.strip() for k, s in parsed.sections.items() if k not in AUTHOR_RELATED}
    related = {k: s.text.strip() for k, s in parsed.sections.items() if k in AUTHOR_RELATED}
    ordered = {k: sections[k] for k in SECTION_TITLES if k in sections}
    return m.text, ordered, related, parsed.title, [*m.findings, *d.findings]


def citation_refs(description: str) -> list[CitationRef]:
    """The citations a judge with web search must check (the evidence stage's extractor, on the sanitised text)."""
    from reviewbench.evidence.citations import extract

    out: dict[str, CitationRef] = {}
    for c in extract(description):
        key = c.key if c.kind != "author_year" else f"{c.surname or ''} {c.year or ''}".strip()
        if key and key.lower() not in out:
            out[key.lower()] = CitationRef(text=c.text[:200], key=key)
    return list(out.values())[:40]


def build_inputs(*, submission_id: str, board: str | None, board_setting: str, method_src: str, description: str,
                 audit_summary: str | None, audit_findings: list[dict[str, Any]], evidence_lines: list[str],
                 earlier: list[EarlierRef], log_dir: Path | None, benchmark_lines: list[str] | None = None,
                 short_name: str | None = None, agent: str | None = None, classify: bool = True) -> JudgeInputs:
    """The judges' inputs. ``classify=False`` skips the multilingual classifier (structural checks still run)."""
    method_py, sections, related, title, injection = sanitise_bundle(method_src, description, classify)
    tag = nonce(method_py, *sections.values(), *related.values())

    def one_line(text: str, name: str) -> str:
        clean, found = _clean(" ".join(str(text).split())[:300], name, classify)
        injection.extend(found)
        return " ".join(clean.split())

    meta = {k: one_line(v, f"meta.{k}") for k, v in (("short_name", short_name), ("agent", agent)) if v}
    audit = [one_line(x, "audit") for x in audit_digest(audit_summary, audit_findings)]
    evidence = [one_line(x, "evidence") for x in evidence_lines]
    refs = [r.model_copy(update={"short_name": one_line(r.short_name, f"{r.id}.short_name") if r.short_name
                                 else None}) for r in earlier]
    all_sections = "\n".join([*sections.values(), *related.values()])
    return JudgeInputs(submission_id=submission_id, board=board, board_setting=board_setting, tag=tag,
                       method_py=method_py, sections=sections, related=related,
                       title=one_line(title, "DESCRIPTION.md:title") if title else None, meta=meta,
                       audit_digest=audit, evidence_digest=evidence, benchmark_digest=list(benchmark_lines or []),
                       earlier=refs, citations=citation_refs(all_sections), injection=injection,
                       log_dir=str(log_dir) if log_dir else None)


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
