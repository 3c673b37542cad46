"""DESCRIPTION.md split into the six sections the arena asks for. Missing sections are findings, not errors."""

from __future__ import annotations

import re

from pydantic import BaseModel

from reviewbench.findings import Finding

SECTIONS: dict[str, tuple[str, ...]] = {
    # canonical key -> heading keywords that name it (matched in order, first hit wins)
    "builds_on": ("builds on", "build on", "attribution", "credits", "acknowledg"),
    "relation_to_prior_work": ("prior work", "related work", "prior art", "relation to"),
    "method_summary": ("method summary", "summary of the method", "method", "algorithm", "how it works"),
    "evidence": ("evidence", "results", "experiments", "evaluation"),
    "limitations": ("limitation", "caveat", "failure mode", "weakness"),
    "idea": ("idea", "motivation", "intuition", "overview"),
}
SECTION_TITLES = {
    "idea": "Idea",
    "method_summary": "Method summary",
    "relation_to_prior_work": "Relation to prior work",
    "evidence": "Evidence",
    "limitations": "Limitations",
    "builds_on": "Builds on",
}
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")  # a Markdown heading: (its hashes, its text)


class Section(BaseModel):
    key: str
    heading: str
    line: int  # 1-based line of the heading
    text: str


class Description(BaseModel):
    title: str | None
    sections: dict[str, Section]
    unrecognised_headings: list[str]
    text: str

    def section_text(self, key: str) -> str:
        s = self.sections.get(key)
        return s.text if s else ""


def classify_heading(heading: str) -> str | None:
    h = heading.lower()
    for key, words in SECTIONS.items():
        if any(w in h for w in words):
            return key
    return None


def own_and_sibling_text(section: Section, text: str) -> tuple[str, str]:
    """A section's own text, and the text under headings of the author's own at its level or above that followed it
    ("## Why it should work" after "## Method summary"): the parser keeps those in the section it follows, though
    they are not part of it."""
    lines = text.splitlines()
    heading = HEADING.match(lines[section.line - 1]) if 0 < section.line <= len(lines) else None
    level = len(heading.group(1)) if heading else 6
    own: list[str] = []
    sibling: list[str] = []
    part = own
    for line in section.text.splitlines():
        m = HEADING.match(line)
        if m and len(m.group(1)) <= level:
            part = sibling
        part.append(line)
    return "\n".join(own), "\n".join(sibling)


def parse_description(text: str, filename: str = "DESCRIPTION.md") -> tuple[Description, list[Finding]]:
    lines = text.splitlines()
    title: str | None = None
    sections: dict[str, Section] = {}
    unrecognised: list[str] = []
    findings: list[Finding] = []
    current: tuple[str, str, int] | None = None
    body: list[str] = []
    in_fence = False

    def close() -> None:
        if current is not None:
            key, heading, line = current
            sections[key] = Section(key=key, heading=heading, line=line, text="\n".join(body).strip())

    for i, line in enumerate(lines, start=1):
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
        m = None if in_fence else HEADING.match(line)
        if m and len(m.group(1)) == 1 and title is None and not sections and current is None:
            title = m.group(2)
            continue
        if m:
            key = classify_heading(m.group(2))
            if key is None:
                unrecognised.append(m.group(2))
                if current is not None:
                    body.append(line)  # a sub-heading stays inside the section it belongs to
                continue
            close()
            if key in sections:
                findings.append(Finding(code="description.duplicate_section", severity="warning",
                                        message=f"section '{SECTION_TITLES[key]}' appears twice; the later one is used",
                                        location=f"{filename}:{i}"))
            current, body = (key, m.group(2), i), []
        elif current is not None:
            body.append(line)
    close()

    for key, title_text in SECTION_TITLES.items():
        if key not in sections:
            findings.append(Finding(code="description.missing_section", severity="warning",
                                    message=f"no '{title_text}' section", location=filename))
        elif not sections[key].text:
            findings.append(Finding(code="description.empty_section", severity="warning",
                                    message=f"section '{title_text}' is empty",
                                    location=f"{filename}:{sections[key].line}"))
    return Description(title=title, sections=sections, unrecognised_headings=unrecognised, text=text), findings
