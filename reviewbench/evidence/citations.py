"""Citation check, before any judge reads the description: every citation found and resolved.

Found: arXiv ids, DOIs, URLs, and "Author et al. (YEAR)" / "Author et al., YEAR" references. Resolved
against the packaged prior-art index first, then the arXiv API (httpx) when it answers. Classified as
``real``, ``wrong_metadata`` (a real paper cited with the wrong year, author or title: kept apart from
fabrication), ``not_found`` (no such paper: an impossible arXiv id, or one the arXiv API does not know) or
``unreachable`` (nothing offline knows it and the network did not answer). Each carries the matched record.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Literal

from pydantic import BaseModel

from reviewbench.judges.websearch import SearchResult, WebSearch
from reviewbench.priorart import Paper, PriorArtIndex, load_index

Status = Literal["real", "wrong_metadata", "not_found", "unreachable"]

ARXIV = re.compile(r"(?:arxiv(?:\.org/(?:abs|pdf)/|:\s*|\s+(?:id\s+)?)?)(?<![\d.])(\d{4}\.\d{4,5})(?:v\d+)?(?![\d])", re.I)
DOI = re.compile(r"\b(10\.\d{4,9}/[^\s,;)\]]+)")
URL = re.compile(r"https?://[^\s)\]>;,]+")
NAME_ET_AL = re.compile(r"\b([A-Z][A-Za-z'\-]+)\s+et\s+al\.?,?\s*\(?((?:19|20)\d{2})\)?")


class Citation(BaseModel):
    text: str  # the citation as written (the sentence fragment around it)
    line: int
    kind: Literal["arxiv", "doi", "url", "author_year"]
    key: str  # arXiv id, DOI, URL, or "Surname YEAR"
    year: int | None = None
    surname: str | None = None
    context: str | None = None  # the text before the citation on its line (where the cited paper is named)


class PaperRecord(BaseModel):
    """The paper a citation was matched to (the packaged index or the arXiv API)."""

    title: str
    first_author: str = ""
    year: int | None = None
    arxiv: str | None = None
    url: str | None = None


class CitationCheck(BaseModel):
    """One citation of the description, resolved by the evidence stage (the machine check; a judge's own account
    of the citations it checked is ``verdict.JudgeCitationCheck``)."""

    citation: Citation
    status: Status
    detail: str
    record: PaperRecord | None = None  # the matched paper
    source: Literal["index", "arxiv_api", "format", "none"] = "none"


def _context(line: str, start: int, end: int) -> str:
    lo = max(0, line.rfind(";", 0, start) + 1, line.rfind("(", 0, max(0, start - 60)) + 1)
    return line[lo:end + 8].strip(" ;,")


def _clause_before(line: str, start: int) -> str:
    """The text between the previous citation or sentence end and a citation: where its paper would be named."""
    before = line[max(0, start - 100):start]
    cut = max(before.rfind(")"), before.rfind(". "), before.rfind(";"))
    return before[cut + 1:]


def extract(text: str) -> list[Citation]:
    out: list[Citation] = []
    seen: set[tuple[str, int]] = set()
    for n, line in enumerate(text.splitlines(), 1):
        for m in ARXIV.finditer(line):
            key = m.group(1)
            before = line[max(0, m.start() - 80):m.start()]
            ay = list(NAME_ET_AL.finditer(before))
            surname, year = (ay[-1].group(1), int(ay[-1].group(2))) if ay else (None, None)
            if (key, n) not in seen:
                seen.add((key, n))
                out.append(Citation(text=_context(line, m.start() - len(before), m.end()), line=n, kind="arxiv",
                                    key=key, year=year, surname=surname))
        for m in DOI.finditer(line):
            out.append(Citation(text=m.group(0), line=n, kind="doi", key=m.group(1).rstrip(".")))
        for m in URL.finditer(line):
            if "arxiv.org" not in m.group(0):
                out.append(Citation(text=m.group(0), line=n, kind="url", key=m.group(0).rstrip(".")))
        covered = [(c.text, c.surname) for c in out if c.line == n and c.kind == "arxiv"]
        for m in NAME_ET_AL.finditer(line):
            if any(m.group(1) == s for _, s in covered):
                continue  # the same reference, already resolved through its arXiv id
            out.append(Citation(text=m.group(0), line=n, kind="author_year", key=f"{m.group(1)} {m.group(2)}",
                                surname=m.group(1), year=int(m.group(2)), context=_clause_before(line, m.start())))
    return out


def impossible_arxiv_id(arxiv_id: str, today: date | None = None) -> str | None:
    """Why an id cannot exist (month 13, a future month, a five-digit number before 2015), else None."""
    today = today or date.today()
    yy, mm = int(arxiv_id[:2]), int(arxiv_id[2:4])
    number = arxiv_id.split(".")[1]
    if not 1 <= mm <= 12:
        return f"month {mm:02d} does not exist"
    if (2000 + yy, mm) > (today.year, today.month):
        return f"{2000 + yy}-{mm:02d} is in the future"
    if len(number) == 5 and yy < 15:
        return "five-digit arXiv numbers start in 2015"
    if len(number) == 4 and yy >= 15:
        return "arXiv numbers have five digits since 2015"
    return None


def _surname(full: str) -> str:
    return full.split()[-1].lower() if full else ""


def _years(p: Paper) -> set[int]:
    """The years a paper may rightly be cited with: its arXiv year and its venue's (ICLR 2024 for a 2023 preprint)."""
    found = {int(y) for y in re.findall(r"\b((?:19|20)\d{2})\b", p.venue or "")}
    return ({p.year} if p.year else set()) | found


def _compare(c: Citation, paper_year: int | None, first_author: str, title: str,
             also: set[int] | None = None) -> tuple[Status, str]:
    problems = []
    if c.year is not None and paper_year and c.year != paper_year and c.year not in (also or set()):
        problems.append(f"cited as {c.year}, published {paper_year}")
    if c.surname and first_author and c.surname.lower() != _surname(first_author):
        problems.append(f"cited as {c.surname} et al., first author {first_author}")
    if problems:
        return "wrong_metadata", f"real paper \"{title}\", but " + "; ".join(problems)
    return "real", f"\"{title}\" ({first_author}, {paper_year})"


def _paper_record(p: Paper) -> PaperRecord:
    return PaperRecord(title=p.title, first_author=p.first_author, year=p.year, arxiv=p.arxiv, url=p.url)


async def check_one(c: Citation, index: PriorArtIndex, web: WebSearch | None, today: date | None = None) -> CitationCheck:
    if c.kind == "arxiv":
        if (why := impossible_arxiv_id(c.key, today)):
            return CitationCheck(citation=c, status="not_found", detail=f"arXiv {c.key} cannot exist: {why}",
                                 source="format")
        paper = index.by_arxiv(c.key)
        if paper is not None:
            status, detail = _compare(c, paper.year, paper.first_author, paper.title, _years(paper))
            return CitationCheck(citation=c, status=status, detail=detail, record=_paper_record(paper), source="index")
        if web is None:
            return CitationCheck(citation=c, status="unreachable", detail=f"arXiv {c.key} is not in the packaged index "
                                 "and online lookup is off")
        try:
            hit: SearchResult | None = await web.arxiv_by_id(c.key)
        except Exception as e:  # offline, DNS failure, HTTP error: not evidence of anything
            return CitationCheck(citation=c, status="unreachable", detail=f"arXiv API unreachable: {type(e).__name__}")
        if hit is None:
            return CitationCheck(citation=c, status="not_found", detail=f"the arXiv API knows no paper {c.key}",
                                 source="arxiv_api")
        year = int(hit.published[:4]) if hit.published else None
        status, detail = _compare(c, year, hit.authors[0] if hit.authors else "", hit.title)
        return CitationCheck(citation=c, status=status, detail=detail, source="arxiv_api",
                             record=PaperRecord(title=hit.title, first_author=hit.authors[0] if hit.authors else "",
                                                year=year, arxiv=c.key, url=hit.url))
    if c.kind == "author_year":
        return _check_author_year(c, index)
    return CitationCheck(citation=c, status="unreachable", detail=f"{c.kind} citations are not resolved offline")


def _named_paper(context: str, index: PriorArtIndex) -> Paper | None:
    """The index paper named right before an author-year citation ("H2O (Zhang et al., 2023)"), if any: the
    one named last, by a distinctive name (not an ordinary phrase) or its title."""
    from reviewbench.evidence.priorart_evidence import _generic, _name_pattern

    best: tuple[int, Paper] | None = None
    for p in index.papers:
        spots = [m.end() for m in _name_pattern(p.short_name).finditer(context)] if p.short_name and \
            not _generic(p.short_name) else []
        if p.title and len(p.title) >= 20 and p.title.lower()[:40] in context.lower():
            spots.append(context.lower().index(p.title.lower()[:40]) + 40)
        if spots and (best is None or max(spots) > best[0]):
            best = (max(spots), p)
    return best[1] if best else None


def _check_author_year(c: Citation, index: PriorArtIndex) -> CitationCheck:
    """Real when the index has the paper with that first author and year; ``wrong_metadata`` when the paper
    it cites is identifiable (named beside the citation, or the index's only paper by a rare surname) but
    the year or the first author is wrong; else undecidable offline."""
    from reviewbench.evidence.priorart_evidence import COMMON_SURNAMES

    surname = (c.surname or "").lower()
    named = _named_paper(c.context or "", index)
    if named is not None:
        status, detail = _compare(c, named.year, named.first_author, named.title, _years(named))
        return CitationCheck(citation=c, status=status, detail=detail, record=_paper_record(named), source="index")
    by_author = [p for p in index.papers if _surname(p.first_author) == surname]
    exact = [p for p in by_author if c.year in _years(p)]
    if exact:
        return CitationCheck(citation=c, status="real", detail=f"\"{exact[0].title}\"", record=_paper_record(exact[0]),
                             source="index")
    if len(by_author) == 1 and surname not in COMMON_SURNAMES:
        p = by_author[0]
        return CitationCheck(citation=c, status="wrong_metadata", source="index", record=_paper_record(p),
                             detail=f"the index's only {c.surname} et al. paper is \"{p.title}\" ({p.year}); "
                                    f"cited as {c.year}")
    if by_author:
        p = by_author[0]
        return CitationCheck(citation=c, status="unreachable", source="index", record=_paper_record(p),
                             detail=f"no {c.surname} et al. {c.year} in the index ({len(by_author)} papers by "
                                    f"{c.surname} et al., e.g. {p.year}: \"{p.title}\"); cannot decide offline")
    return CitationCheck(citation=c, status="unreachable", detail="not in the packaged index; no identifier to look up")


async def check_citations(text: str, web: WebSearch | None = None, today: date | None = None) -> list[CitationCheck]:
    index = load_index()
    return [await check_one(c, index, web, today) for c in extract(text)]
