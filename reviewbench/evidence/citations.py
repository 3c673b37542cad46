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


class CitationCheck(BaseModel):
    citation: Citation
    status: Status
    detail: str
    record: dict | None = None  # the matched paper (index or arXiv API)
    source: Literal["index", "arxiv_api", "format", "none"] = "none"


def _context(line: str, start: int, end: int) -> str:
    lo = max(0, line.rfind(";", 0, start) + 1, line.rfind("(", 0, max(0, start - 60)) + 1)
    return line[lo:end + 8].strip(" ;,")


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
                                surname=m.group(1), year=int(m.group(2))))
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


def _compare(c: Citation, paper_year: int | None, first_author: str, title: str) -> tuple[Status, str]:
    problems = []
    if c.year is not None and paper_year and abs(c.year - paper_year) > 0:
        problems.append(f"cited as {c.year}, published {paper_year}")
    if c.surname and first_author and c.surname.lower() != _surname(first_author):
        problems.append(f"cited as {c.surname} et al., first author {first_author}")
    if problems:
        return "wrong_metadata", f"real paper \"{title}\", but " + "; ".join(problems)
    return "real", f"\"{title}\" ({first_author}, {paper_year})"


def _paper_record(p: Paper) -> dict:
    return {"title": p.title, "first_author": p.first_author, "year": p.year, "arxiv": p.arxiv, "url": p.url}


async def check_one(c: Citation, index: PriorArtIndex, web: WebSearch | None, today: date | None = None) -> CitationCheck:
    if c.kind == "arxiv":
        if (why := impossible_arxiv_id(c.key, today)):
            return CitationCheck(citation=c, status="not_found", detail=f"arXiv {c.key} cannot exist: {why}",
                                 source="format")
        paper = index.by_arxiv(c.key)
        if paper is not None:
            status, detail = _compare(c, paper.year, paper.first_author, paper.title)
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
                             record={"title": hit.title, "first_author": hit.authors[0] if hit.authors else "",
                                     "year": year, "arxiv": c.key, "url": hit.url})
    if c.kind == "author_year":
        by_author = [p for p in index.papers if _surname(p.first_author) == (c.surname or "").lower()]
        exact = [p for p in by_author if p.year == c.year]
        if exact:
            return CitationCheck(citation=c, status="real", detail=f"\"{exact[0].title}\"", record=_paper_record(exact[0]),
                                 source="index")
        if by_author:
            p = by_author[0]
            return CitationCheck(citation=c, status="unreachable", source="index", record=_paper_record(p),
                                 detail=f"no {c.surname} et al. {c.year} in the index (it has {c.surname} et al. "
                                        f"{p.year}: \"{p.title}\"); cannot decide offline")
        return CitationCheck(citation=c, status="unreachable", detail="not in the packaged index; no identifier to "
                                                                      "look up")
    return CitationCheck(citation=c, status="unreachable", detail=f"{c.kind} citations are not resolved offline")


async def check_citations(text: str, web: WebSearch | None = None, today: date | None = None) -> list[CitationCheck]:
    index = load_index()
    return [await check_one(c, index, web, today) for c in extract(text)]
