"""What the judges are shown, gathered once from the pipeline's upstream stages and sanitised.

Every string that reaches a judge is a field of :data:`PROMPT_FIELDS`, marked trusted (the arena's own: its
configuration, its rubric, its measured numbers) or untrusted (written by the submission, its agent's logs, its
method while it ran, an earlier submission, a web page). The prompts, the advisors' prompts and the tool results
are rendered only through :meth:`JudgeInputs.field` / :meth:`JudgeInputs.show`, which look the field up in that
table and put every untrusted one inside the nonce fence, sanitised by :mod:`reviewbench.judges.sanitize`: a
field not in the table cannot be rendered. The author's own account of related work ("Relation to prior work",
"Builds on") is held back from the first prompt and handed over by a tool only after the judge has searched.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from reviewbench.description import SECTION_TITLES, parse_description
from reviewbench.evidence.facts import EvidenceFacts
from reviewbench.judges.sanitize import InjectionFinding, defang, fence, nonce, safe_label

AUTHOR_RELATED = ("relation_to_prior_work", "builds_on")

Trust = Literal["trusted", "untrusted"]
Shown = Literal["system", "user", "tool", "advisor"]


@dataclass(frozen=True)
class PromptField:
    """One string that reaches a judge: who wrote it, whether it is fenced, and where it is shown."""

    name: str
    trust: Trust
    source: str  # who wrote it
    shown: tuple[Shown, ...]
    label: str  # the fence's source label (untrusted) or what the text is (trusted)


_U: Trust = "untrusted"
_T: Trust = "trusted"
# The inventory: every string that reaches a judge prompt, a judge's tool result or a local advisor's prompt.
PROMPT_FIELDS: tuple[PromptField, ...] = (
    PromptField("rubric", _T, "the arena's rubric file (criteria, anchors, flags)", ("system",), "rubric"),
    PromptField("verdict_schema", _T, "reviewbench (the verdict's JSON Schema)", ("system",), "verdict schema"),
    PromptField("fence_tag", _T, "reviewbench (a nonce from the sanitised content)", ("system",), "fence tag"),
    PromptField("board", _T, "arena.toml (the declared board the bundle names; none when undeclared)", ("user",),
                "board"),
    PromptField("board_setting", _T, "arena.toml (the board's setting)", ("user",), "board setting"),
    PromptField("benchmark", _T, "the arena's measurement on the hidden test split (numbers only)", ("user",),
                "benchmark"),
    PromptField("injection_report", _T, "the sanitiser (kinds, locations, hashes of removed text)", ("user",),
                "removed text"),
    PromptField("retrieved_prior_art", _T, "the packaged prior-art index", ("user",), "retrieved prior art"),
    PromptField("prior_art_hits", _T, "the packaged prior-art index", ("tool",), "prior_art_search"),
    PromptField("header", _U, "the bundle (its folder name; DESCRIPTION.md's title; meta's short_name, agent and "
                "board as written)", ("user",), "submission folder name, DESCRIPTION.md title and meta.toml"),
    PromptField("method_py", _U, "the bundle (method.py)", ("user", "advisor"), "method.py"),
    PromptField("sections", _U, "the bundle (DESCRIPTION.md sections)", ("user", "advisor"), "DESCRIPTION.md"),
    PromptField("related", _U, "the bundle (DESCRIPTION.md's related work and builds-on)", ("user", "tool"),
                "DESCRIPTION.md related work"),
    PromptField("method_errors", _U, "the method (its error text while the arena measured it)", ("user",),
                "the method's own error text"),
    PromptField("board_entries", _U, "earlier submissions (their ids on the board, with the arena's Overall)",
                ("user",), "the board's entries (ids as their authors named their folders)"),
    PromptField("audit", _U, "the agent's logs (the audit's digest quotes them)", ("user", "advisor"),
                "log audit (quotes the agent's logs)"),
    PromptField("evidence", _U, "the bundle (the machine evidence quotes it)", ("user", "advisor"),
                "machine evidence (quotes the submission)"),
    PromptField("earlier", _U, "earlier submissions (ids, agents, boards, short names)", ("user", "tool"),
                "earlier submissions (names as their authors gave them)"),
    PromptField("prior_submission", _U, "an earlier submission (its method.py and DESCRIPTION.md)", ("tool",),
                "earlier submission"),
    PromptField("log_lines", _U, "the agent's logs (lines that match a search)", ("tool",), "agent log lines"),
    PromptField("web_results", _U, "web pages (search results)", ("tool",), "web search results"),
    PromptField("rule_objection", _U, "the bundle (the citations the rule names, as DESCRIPTION.md wrote them)",
                ("tool",), "rule"),
)
FIELDS: dict[str, PromptField] = {f.name: f for f in PROMPT_FIELDS}


def inventory_markdown() -> str:
    """The inventory as the README's table (a test keeps the README equal to it)."""
    rows = ["| field | trust | written by | shown in |", "|---|---|---|---|"]
    rows += [f"| `{f.name}` | {f.trust} | {f.source} | {', '.join(f.shown)} |" for f in PROMPT_FIELDS]
    return "\n".join(rows)


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
    submission_id: str  # sanitised; shown fenced
    board: str | None  # the arena's board (declared in arena.toml), or None
    board_setting: str = ""
    tag: str  # fence nonce, from the sanitised content
    method_py: str  # sanitised
    sections: dict[str, str]  # sanitised DESCRIPTION.md sections the judge reads first
    related: dict[str, str]  # sanitised author's related-work sections, behind the read_author_related_work tool
    title: str | None = None  # sanitised; shown fenced
    meta: dict[str, str] = Field(default_factory=dict)  # sanitised meta fields (short_name, agent, board); fenced
    audit_digest: list[str] = Field(default_factory=list)  # quotes the agent's commands: shown fenced
    evidence_digest: list[str] = Field(default_factory=list)  # quotes the submission: shown fenced
    benchmark_digest: list[str] = Field(default_factory=list)  # the arena's own measurements: trusted, unfenced
    method_errors: list[str] = Field(default_factory=list)  # the method's error text while measured: fenced
    board_entries: list[str] = Field(default_factory=list)  # the board's earlier entries (their ids): fenced
    earlier: list[EarlierRef] = Field(default_factory=list)
    citations: list[CitationRef] = Field(default_factory=list)
    injection: list[InjectionFinding] = Field(default_factory=list)
    log_dir: str | None = None
    facts: EvidenceFacts | None = None  # measured facts only (the evidence judge's whole input): never prose

    def show(self, name: str, text: str, label: str | None = None) -> str:
        """``text`` as field ``name`` of the inventory: fenced when untrusted. ``label`` narrows the fence's
        source label (an untrusted field's own label is used otherwise). Unknown fields raise KeyError."""
        spec = FIELDS[name]
        if spec.trust == "trusted":
            return text
        return fence(text, label or spec.label, self.tag)

    def has(self, name: str) -> bool:
        return bool(_TEXT[name](self)) if name in _TEXT else False

    def field(self, name: str, limit: int | None = None) -> str:
        """Field ``name``, rendered from these inputs (cut to ``limit`` characters before it is fenced)."""
        if name not in FIELDS or name not in _TEXT:
            raise KeyError(f"{name!r} is not a prompt field these inputs render (see PROMPT_FIELDS)")
        text = _TEXT[name](self)
        if limit is not None and len(text) > limit:
            text = text[:limit] + " [...]"
        return self.show(name, text)

    def fenced_method(self) -> str:
        return self.field("method_py")

    def fenced_sections(self) -> str:
        return self.field("sections")

    def fenced_related(self) -> str:
        return self.field("related")

    def injection_report(self) -> list[str]:
        """Where hidden text was removed, by hash: the text itself never reaches a judge."""
        return [f"{f.kind} at {safe_label(f.location)}: {f.chars} characters, sha256 {f.sha256[:16]}"
                for f in self.injection]

    def corpus(self) -> list[str]:
        """Every text shown to a judge by the prompt itself; tool results are added by the panel."""
        return [self.method_py, *self.sections.values(), *self.related.values(), *self.audit_digest,
                *self.evidence_digest, *self.benchmark_digest, *self.method_errors, *self.board_entries,
                self.title or ""]


def _sections(inp: JudgeInputs, related: bool) -> str:
    parts = [f"## {SECTION_TITLES[k]}\n{v}" for k, v in (inp.related if related else inp.sections).items()]
    empty = "(the description has no related-work or builds-on section)" if related else "(no sections)"
    return "\n\n".join(parts) or empty


def _header(inp: JudgeInputs) -> str:
    lines = [f"submission: {inp.submission_id}", f"title: {inp.title}" if inp.title else "title: (none)"]
    return "\n".join(lines + [f"{k}: {v}" for k, v in sorted(inp.meta.items())])


def _earlier(inp: JudgeInputs) -> str:
    return "\n".join(f"- {e.id} by {e.agent}, board {e.board or '-'}" + (f": {e.short_name}" if e.short_name else "")
                     for e in inp.earlier) or "(none)"


# How each field that the inputs hold becomes text (before the fence). Tool and system fields are shown by the
# code that makes them (:meth:`JudgeInputs.show`, the system template).
_TEXT: dict[str, Callable[[JudgeInputs], str]] = {
    "board": lambda i: safe_label(i.board) if i.board else "",
    "board_setting": lambda i: i.board_setting,
    "benchmark": lambda i: "\n".join(i.benchmark_digest),
    "injection_report": lambda i: "\n".join(f"- {x}" for x in i.injection_report()),
    "header": _header,
    "method_py": lambda i: i.method_py,
    "sections": lambda i: _sections(i, related=False),
    "related": lambda i: _sections(i, related=True),
    "method_errors": lambda i: "\n".join(i.method_errors),
    "board_entries": lambda i: "\n".join(i.board_entries),
    "audit": lambda i: "\n".join(i.audit_digest),
    "evidence": lambda i: "\n".join(i.evidence_digest) or "(none)",
    "earlier": _earlier,
}


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
                 method_errors: list[str] | None = None, board_entries: list[str] | None = None,
                 short_name: str | None = None, agent: str | None = None, meta_board: str | None = None,
                 classify: bool = True) -> JudgeInputs:
    """The judges' inputs. ``board`` is the arena's board (declared), ``meta_board`` the board as meta wrote it;
    ``benchmark_lines`` the arena's own measurement (trusted: numbers), ``method_errors`` the method's error text
    and ``board_entries`` the board's earlier entries (untrusted: sanitised, cut, fenced). ``classify=False``
    skips the multilingual classifier (structural checks still run)."""
    method_py, sections, related, title, injection = sanitise_bundle(method_src, description, classify)
    tag = nonce(method_py, *sections.values(), *related.values())

    def one_line(text: str, name: str) -> str:
        clean, found = _clean(" ".join(str(text).split())[:300], name, classify)
        injection.extend(found)
        return " ".join(clean.split())

    meta = {k: one_line(v, f"meta.{k}") for k, v in (("short_name", short_name), ("agent", agent),
                                                      ("board", meta_board)) if v}
    audit = [one_line(x, "audit") for x in audit_digest(audit_summary, audit_findings)]
    evidence = [one_line(x, "evidence") for x in evidence_lines]
    errors = [one_line(x, "method error") for x in (method_errors or [])[:8]]
    entries = [one_line(x, "board entry") for x in (board_entries or [])[:8]]
    refs = [EarlierRef(id=one_line(r.id, f"earlier[{n}].id"), agent=one_line(r.agent, f"earlier[{n}].agent"),
                       board=one_line(r.board, f"earlier[{n}].board") if r.board else None,
                       short_name=one_line(r.short_name, f"earlier[{n}].short_name") if r.short_name else None,
                       path=r.path) for n, r in enumerate(earlier)]
    all_sections = "\n".join([*sections.values(), *related.values()])
    return JudgeInputs(submission_id=one_line(submission_id, "submission id"), board=board,
                       board_setting=board_setting, tag=tag, method_py=method_py, sections=sections, related=related,
                       title=one_line(title, "DESCRIPTION.md:title") if title else None, meta=meta,
                       audit_digest=audit, evidence_digest=evidence, benchmark_digest=list(benchmark_lines or []),
                       method_errors=errors, board_entries=entries,
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
