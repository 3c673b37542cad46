"""Defences against prompt injection in submitted text, before any judge reads it.

A submission is data, never instructions. The defence is structural, in four layers:

- ``normalise``: Unicode NFKC, then every invisible or format character removed — all of category Cf
  (zero-width, bidi controls, the tag characters U+E0000-E007F), controls, private-use and unassigned code
  points, variation selectors, fillers that render blank. Tag characters spell hidden ASCII: that text is
  decoded and inspected like any other.
- ``inspect``: each line, each HTML comment, and every base64 or hex blob (decoded first) is checked for
  text addressed to the reviewer: by structure (fake chat or fence delimiters, fake grade blocks), by a
  short list of English phrasings, and by a multilingual classifier over the embedded model's hidden states
  (:mod:`reviewbench.judges.addressed`) that recognises text addressed to a reviewer, grader or organiser in
  any language.
- ``defang``: the text the judges see: normalised, and every line that carries such text dropped (the
  finding keeps its location and a hash, never the text, for the judges; the report shows it to humans).
- ``fence``: the result wrapped in a nonce-tagged block the submitted text cannot close.

The grade itself is only ever read from the judge's structured output, never from free text.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import unicodedata

from pydantic import BaseModel

HTML_COMMENT = re.compile(r"<!--(.*?)-->", re.S)
_BLANK_LETTERS = {0x115F, 0x1160, 0x3164, 0xFFA0, 0x2800, 0x034F, 0x17B4, 0x17B5}


def invisible(ch: str) -> bool:
    """Characters that render as nothing (or that reorder what renders): never content a reader can see."""
    if ch in "\n\t":
        return False
    cp = ord(ch)
    if 0xFE00 <= cp <= 0xFE0F or 0xE0100 <= cp <= 0xE01EF or cp in _BLANK_LETTERS:
        return True
    return unicodedata.category(ch) in ("Cf", "Cc", "Co", "Cn", "Cs")


def hidden_tag_text(text: str) -> str:
    """The ASCII spelled by Unicode tag characters (U+E0020-E007E), the 'ASCII smuggling' channel."""
    return "".join(chr(ord(c) - 0xE0000) for c in text if 0xE0020 <= ord(c) <= 0xE007E)


def normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    return "".join(c for c in text if not invisible(c))


def has_invisible(text: str) -> bool:
    return any(invisible(c) for c in text)


# Look-alike letters of other scripts mapped to Latin, for the phrase check only (the text shown is unchanged).
_CONFUSABLE = str.maketrans("аеорсухіјѕԁɡνοрτυαкмтвнԛѡ", "aeopcyxijsdgvoptuakmtbhqw")

_REVIEWER = r"(?:review(?:er|ers)?|judge[sd]?|grader|evaluator|assistant|ai|llm|model|language model|organi[sz]ers?)"
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("override", re.compile(r"\b(?:ignore|disregard|forget|override)\b.{0,40}\b(?:previous|prior|above|earlier|all|"
                            r"other|system)\b.{0,30}\b(?:instruction|prompt|rule|guideline|direction)s?\b", re.I)),
    ("grade_request", re.compile(r"\b(?:give|rate|score|grade|award|assign|mark)\b.{0,60}?(?:\b5\s*/\s*5\b|\b5\s+out\s+of"
                                 r"\s+5\b|\bfull\s+marks\b|\bmaximum\s+(?:score|points|marks)\b|\bhighest\s+(?:score|"
                                 r"possible|rating)\b|\b(?:score|novelty|rating|grade)\s+(?:of\s+)?(?:5|five)\b)", re.I)),
    ("grade_request", re.compile(r"\b(?:novelty|effectiveness|soundness)\s*[:=]\s*[0-5]\b.{0,40}\b(?:novelty|"
                                 r"effectiveness|soundness)\s*[:=]\s*[0-5]\b", re.I)),
    ("addressed_to_judge", re.compile(rf"\b(?:note|message|instructions?)\s+(?:to|for|from)\s+(?:the\s+)?{_REVIEWER}\b|"
                                      rf"\b(?:dear|attention|hey)\s+(?:the\s+)?{_REVIEWER}\b|\bif\s+you\s+are\s+an?\s+"
                                      rf"{_REVIEWER}\b|\bas\s+an?\s+{_REVIEWER},?\s+you\s+(?:must|should)\b", re.I)),
    ("no_flags", re.compile(r"\b(?:do\s+not|don't|never)\s+(?:raise|flag|report|mention)\b.{0,40}\b(?:flags?|"
                            r"violations?|prior\s+art|plagiarism|issues?)\b", re.I)),
    ("fake_delimiter", re.compile(r"<\|(?:im_start|im_end|system|user|assistant|endoftext)\|>|\[/?INST\]|"
                                  r"</?\s*(?:system|untrusted-[0-9a-z]+)\b[^>]*>|^\s*(?:system|assistant|human)\s*:\s",
                                  re.I | re.M)),
    ("fake_grade_marker", re.compile(r"^[\s#*>-]*(?:final\s+)?(?:grade|score|verdict|novelty|rating)\s*[:=]\s*"
                                     r"(?:[0-5](?:\.\d)?(?:\s*/\s*\d+)?|accept\w*)\W*$", re.I | re.M)),
]

# Encoded blobs: base64 (16+ chars, at least one digit or +/ so plain words do not match) and hex (16+ digits).
_B64 = re.compile(r"(?<![A-Za-z0-9+/=])(?=[A-Za-z0-9+/]*[0-9+/])[A-Za-z0-9+/]{16,}={0,2}(?![A-Za-z0-9+/=])")
_HEX = re.compile(r"(?:\\x[0-9a-fA-F]{2}){8,}|(?<![0-9a-fA-F])(?:[0-9a-fA-F]{2}){8,}(?![0-9a-fA-F])")


class InjectionFinding(BaseModel):
    kind: str  # invisible_characters | hidden_tag_text | html_comment | encoded | addressed_to_judge | override | ...
    location: str  # file:line
    sha256: str = ""  # of the removed text: what the judges are told, instead of the text
    chars: int = 0
    text: str = ""  # the removed text, escaped, for the human report only (never put in a judge's prompt)


class Sanitized(BaseModel):
    text: str
    findings: list[InjectionFinding]


def _show(text: str) -> str:
    return "".join(f"\\u{ord(c):04x}" if invisible(c) else c for c in text).strip()[:300]


def _finding(kind: str, where: str, removed: str) -> InjectionFinding:
    return InjectionFinding(kind=kind, location=where, sha256=hashlib.sha256(removed.encode("utf-8", "replace"))
                            .hexdigest(), chars=len(removed), text=_show(removed))


def decode_blobs(text: str) -> list[str]:
    """Readable text hidden in base64 or hex blobs (what a model could decode and follow)."""
    out = []
    for m in _B64.finditer(text):
        blob = m.group(0)
        try:
            raw = base64.b64decode(blob + "=" * (-len(blob) % 4), validate=True)
        except (binascii.Error, ValueError):
            continue
        out.append(raw)
    for m in _HEX.finditer(text):
        try:
            out.append(bytes.fromhex(m.group(0).replace("\\x", "")))
        except ValueError:
            continue
    texts = []
    for raw in out:
        try:
            s = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue
        letters = sum(c.isalpha() or c.isspace() for c in s)
        if len(s) >= 8 and letters >= 0.8 * len(s):
            texts.append(s)
    return texts


def phrase_kinds(text: str) -> list[str]:
    t = normalise(text).translate(_CONFUSABLE)
    return list(dict.fromkeys(kind for kind, pat in _PATTERNS if pat.search(t)))


def _classify(lines: list[str]) -> list[bool]:
    from reviewbench.judges.addressed import addressed_to_reviewer

    return addressed_to_reviewer(lines)


def defang(text: str, name: str, classify: bool = True) -> Sanitized:
    """The text a judge may see, and what was taken out of it (``name`` labels locations).

    ``classify`` runs the multilingual classifier on every prose line; off, only the structural and phrase
    checks run (for callers that must not load a model)."""
    findings: list[InjectionFinding] = []
    raw_lines = text.split("\n")

    # HTML comments are invisible when DESCRIPTION.md is rendered: hidden by design, so never shown to a judge.
    def comment(m: re.Match[str]) -> str:
        line = text.count("\n", 0, m.start()) + 1
        findings.append(_finding("html_comment", f"{name}:{line}", m.group(0)))
        return "\x00" + "\n\x00" * m.group(0).count("\n")  # a gap marker per line: line numbers stay true

    text = HTML_COMMENT.sub(comment, text)
    kept: list[tuple[int, str]] = []
    for i, (line, original) in enumerate(zip(text.split("\n"), raw_lines), 1):
        where = f"{name}:{i}"
        gap = "\x00" in line
        line = line.replace("\x00", "")
        if gap and not line.strip():
            continue  # a line that held only a removed comment
        tag_text = hidden_tag_text(line)
        if tag_text:
            findings.append(_finding("hidden_tag_text", where, tag_text))
            continue  # a line that smuggles text in tag characters goes whole
        if has_invisible(line):
            findings.append(_finding("invisible_characters", where, line))
        clean = normalise(line)
        kinds = phrase_kinds(clean)
        for decoded in decode_blobs(clean):
            if phrase_kinds(decoded) or (classify and any(_classify([decoded]))):
                kinds.append("encoded")
        if kinds:
            findings.extend(_finding(k, where, original) for k in dict.fromkeys(kinds))
            continue  # the whole line goes: a hidden instruction is evidence, not content
        kept.append((i, clean))
    if classify:
        from reviewbench.judges.addressed import prose_lines

        parts = prose_lines(normalise("\n".join(raw_lines)), ".py" if name.endswith(".py") else ".md")
        prose = [(n, parts[n]) for n, _ in kept if n in parts and _is_prose(parts[n])]
        flags = _classify([ln for _, ln in prose]) if prose else []
        hits = {n: p for (n, p), hit in zip(prose, flags) if hit}
        out: list[tuple[int, str]] = []
        for n, ln in kept:
            if n not in hits:
                out.append((n, ln))
                continue
            findings.append(_finding("addressed_to_judge", f"{name}:{n}", raw_lines[n - 1]))
            at = ln.find(hits[n])
            hash_at = ln.rfind("#", 0, at) if at > 0 and name.endswith(".py") else -1
            if hash_at > 0 and ln[:hash_at].strip():
                out.append((n, ln[:hash_at].rstrip()))  # a trailing comment goes; the code before it stays
        kept = out
    findings.sort(key=lambda f: int(f.location.rsplit(":", 1)[1]))
    return Sanitized(text="\n".join(ln for _, ln in kept), findings=findings)


_WORDISH = re.compile(r"[^\W\d_]{2,}", re.U)


def _is_prose(line: str) -> bool:
    """Lines with words in them (prose, comments, strings); bare code and punctuation are not classified."""
    return len(_WORDISH.findall(line)) >= 3


def nonce(*parts: str) -> str:
    """A fence tag derived from the content: stable across reruns (so prompts cache), unguessable in advance."""
    return hashlib.sha256("\x00".join(parts).encode("utf-8", "replace")).hexdigest()[:12]


_LABEL = re.compile(r"[^A-Za-z0-9_.:/ -]")


def safe_label(label: str) -> str:
    """A fence label or identifier reduced to characters that cannot open, close or forge a tag."""
    return _LABEL.sub("?", label)[:120]


def fence(text: str, label: str, tag: str) -> str:
    """Wrap untrusted text. The body cannot close the fence: any tag-like ``untrusted-`` string in it is defused."""
    body = re.sub(r"untrusted-", "untrusted\u2010", text, flags=re.I)
    return f'<untrusted-{tag} source="{safe_label(label)}">\n{body}\n</untrusted-{tag}>'


def shrink_fenced(text: str, max_chars: int) -> str:
    """``text`` at most ``max_chars`` long (about), cutting the ends of its fenced bodies, largest first, so that
    every fence keeps both tags; text without fences is cut at its end."""
    if len(text) <= max_chars:
        return text
    pat = re.compile(r'(<untrusted-[0-9a-f]+ source="[^"\n]*">\n)(.*?)(\n</untrusted-[0-9a-f]+>)', re.S)
    parts = list(pat.finditer(text))
    if not parts:
        return text[:max_chars] + f"\n[... {len(text) - max_chars} characters cut to fit the context ...]"
    bodies = {m.start(2): m.group(2) for m in parts}
    excess = len(text) - max_chars
    for start in sorted(bodies, key=lambda s: -len(bodies[s])):
        if excess <= 0:
            break
        body = bodies[start]
        keep = max(200, len(body) - excess - 60)
        if keep < len(body):
            cut = len(body) - keep
            bodies[start] = body[:keep] + f"\n[... {cut} characters cut to fit the context ...]"
            excess -= cut - 50
    out, pos = [], 0
    for m in parts:
        out.append(text[pos:m.start(2)])
        out.append(bodies[m.start(2)])
        pos = m.end(2)
    out.append(text[pos:])
    return "".join(out)


def markdown_block(lines: list[str], limit: int = 300) -> str:
    """Untrusted lines (a method's error text) for a human's Markdown report: each normalised (no invisible or
    control characters), cut to ``limit`` characters, inside a code fence longer than any backtick run in them,
    so nothing in them renders as markup or closes the block."""
    body = "\n".join(" ".join(normalise(str(x)).split())[:limit] for x in lines)
    run = max((len(m.group(0)) for m in re.finditer(r"`+", body)), default=0)
    fence_mark = "`" * max(3, run + 1)
    return f"{fence_mark}text\n{body}\n{fence_mark}"
