"""Defences against prompt injection in submitted text, before any judge reads it.

A submission is data, never instructions. Three layers:
- ``scan``: find hidden instructions addressed to the reviewer (HTML comments, zero-width or bidi characters,
  "ignore previous instructions", "rate this 5/5", fake grade blocks, fake chat or fence delimiters); each
  finding is evidence for the report, with its file:line.
- ``defang``: the text the judges see: invisible characters removed, lines that carry a hidden instruction
  dropped (the finding says what was there), delimiter look-alikes neutralised.
- ``fence``: the result wrapped in a nonce-tagged block that the submitted text cannot close.
The grade itself is only ever read from the judge's structured output, never from free text.
"""

from __future__ import annotations

import hashlib
import re

from pydantic import BaseModel

INVISIBLE = re.compile("[\u200b\u200c\u200d\u2060\ufeff\u202a-\u202e\u2066-\u2069\u00ad]")
HTML_COMMENT = re.compile(r"<!--(.*?)-->", re.S)

_REVIEWER = r"(?:review(?:er|ers)?|judge[sd]?|grader|evaluator|assistant|ai|llm|model|language model)"
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("override", re.compile(r"\b(?:ignore|disregard|forget|override)\b.{0,40}\b(?:previous|prior|above|earlier|all|"
                            r"other|system)\b.{0,30}\b(?:instruction|prompt|rule|guideline|direction)s?\b", re.I)),
    ("grade_request", re.compile(r"\b(?:give|rate|score|grade|award|assign|mark)\b.{0,60}?(?:\b5\s*/\s*5\b|\b5\s+out\s+of"
                                 r"\s+5\b|\bfull\s+marks\b|\bmaximum\s+(?:score|points|marks)\b|\bhighest\s+(?:score|"
                                 r"possible|rating)\b|\b(?:score|novelty|rating|grade)\s+(?:of\s+)?(?:5|five)\b)", re.I)),
    ("grade_request", re.compile(r"\b(?:novelty|effectiveness|soundness)\s*[:=]\s*[0-5]\b.{0,40}\b(?:novelty|"
                                 r"effectiveness|soundness)\s*[:=]\s*[0-5]\b", re.I)),
    ("addressed_to_judge", re.compile(rf"\b(?:note|message|instructions?)\s+(?:to|for)\s+(?:the\s+)?{_REVIEWER}\b|"
                                      rf"\b(?:dear|attention|hey)\s+(?:the\s+)?{_REVIEWER}\b|\bif\s+you\s+are\s+an?\s+"
                                      rf"{_REVIEWER}\b|\bas\s+an?\s+{_REVIEWER},?\s+you\s+(?:must|should)\b", re.I)),
    ("no_flags", re.compile(r"\b(?:do\s+not|don't|never)\s+(?:raise|flag|report|mention)\b.{0,40}\b(?:flags?|"
                            r"violations?|prior\s+art|plagiarism|issues?)\b", re.I)),
    ("fake_delimiter", re.compile(r"<\|(?:im_start|im_end|system|user|assistant|endoftext)\|>|\[/?INST\]|"
                                  r"</?\s*(?:system|untrusted-[0-9a-f]+)\s*>|^\s*(?:system|assistant|human)\s*:\s",
                                  re.I | re.M)),
    ("fake_grade_marker", re.compile(r"^[\s#*>-]*(?:final\s+)?(?:grade|score|verdict|novelty|rating)\s*[:=]\s*"
                                     r"(?:[0-5](?:\.\d)?(?:\s*/\s*\d+)?|accept\w*)\W*$", re.I | re.M)),
]


class InjectionFinding(BaseModel):
    kind: str  # invisible_characters | html_comment | override | grade_request | addressed_to_judge | ...
    location: str  # file:line
    text: str  # the offending text, with invisible characters shown as \\uXXXX


class Sanitized(BaseModel):
    text: str
    findings: list[InjectionFinding]


def _show(text: str) -> str:
    return INVISIBLE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text).strip()[:300]


def _hits(text: str) -> list[str]:
    return [kind for kind, pat in _PATTERNS if pat.search(text)]


def defang(text: str, name: str) -> Sanitized:
    """The text a judge may see, and what was taken out of it (``name`` labels locations)."""
    findings: list[InjectionFinding] = []
    # HTML comments are invisible when DESCRIPTION.md is rendered: any instruction in one is hidden by design.
    def comment(m: re.Match[str]) -> str:
        line = text.count("\n", 0, m.start()) + 1
        body = m.group(1)
        if _hits(body) or INVISIBLE.search(body):
            findings.append(InjectionFinding(kind="html_comment", location=f"{name}:{line}", text=_show(m.group(0))))
            return "\x00" + "\n\x00" * m.group(0).count("\n")  # a gap marker per line: line numbers stay true
        return m.group(0)

    text = HTML_COMMENT.sub(comment, text)
    out_lines = []
    for i, line in enumerate(text.split("\n"), 1):
        where = f"{name}:{i}"
        if "\x00" in line:
            line = line.replace("\x00", "")
            if not line.strip():
                continue  # a line that held only a removed comment
        if INVISIBLE.search(line):
            findings.append(InjectionFinding(kind="invisible_characters", location=where, text=_show(line)))
            line = INVISIBLE.sub("", line)
        kinds = _hits(line)
        if kinds:
            findings.extend(InjectionFinding(kind=k, location=where, text=_show(line)) for k in dict.fromkeys(kinds))
            continue  # the whole line goes: a hidden instruction is evidence, not content
        out_lines.append(line)
    return Sanitized(text="\n".join(out_lines), findings=findings)


def nonce(*parts: str) -> str:
    """A fence tag derived from the content: stable across reruns (so prompts cache), unguessable in advance."""
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:12]


def fence(text: str, label: str, tag: str) -> str:
    """Wrap untrusted text; the submitted text cannot contain the closing tag (``defang`` removed look-alikes)."""
    body = text.replace(f"untrusted-{tag}", "untrusted-xxxx")
    return f'<untrusted-{tag} source="{label}">\n{body}\n</untrusted-{tag}>'
