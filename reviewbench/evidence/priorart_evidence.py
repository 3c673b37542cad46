"""Prior art retrieved from what the code computes, and whether the description genuinely credits it.

Retrieval: the query comes from ``computation.computation`` — the operations the code performs and what they
act on (softmax over query·key, accumulated attention, key norms, sink/recent slices, pooling, query
statistics, key-key cosine similarity, per-layer or per-head budgets...), mapped to the field's words — so
renaming every identifier changes nothing. It is searched with BM25 (the code words are keywords, where the
embedding half of the hybrid search only blurs them); the method summary and idea are searched apart
(hybrid) and their hits come after. The author's related work is never part of any query.

Credit: a paper is credited only when the description *attributes* the idea to it — a mention in "Builds
on", or a sentence elsewhere that states use ("builds on", "extends", "is", "follows", "as in"...) — and the
mention is not a contrast ("unlike TOVA", "rather than H2O", "outperforms SnapKV") or a negation. A mention
is the arXiv id, the title, the paper's name (generic names such as "Expected Attention" or "Random" only
with a citation marker beside them, so the phrase "expected attention" is not a name), or "Surname et al."
with the year, when that pair names one paper of the index and the surname is not a common one.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel

from reviewbench.description import parse_description
from reviewbench.evidence.computation import computation
from reviewbench.priorart import Paper, load_index

CODE_HITS = 4  # hits from the code query before the summary's hits


class Credit(BaseModel):
    credited: bool
    reason: str  # why (e.g. "attributed in Builds on", "named only as a contrast", "not named")
    quote: str | None = None  # the sentence that attributes (or that only contrasts)
    section: str | None = None  # the section it stands in


class PriorArtHit(BaseModel):
    short_name: str
    title: str
    arxiv: str | None
    year: int | None
    score: float  # BM25
    cosine: float | None  # embedding similarity (None without the sentence model, and for code hits)
    credited: bool  # the description attributes it (see ``Credit``)
    via: Literal["code", "summary"] = "code"  # which query found it
    credit: Credit | None = None


class PriorArtEvidence(BaseModel):
    query: str  # the code query (the field's words for what the code computes)
    features: dict[str, int]  # computation feature -> first line in method.py (0: a class attribute)
    summary_query: str
    hits: list[PriorArtHit]


def code_query(source: str) -> str:
    return computation(source).words()


# --- credit -----------------------------------------------------------------------------------------------

_ABBREV = re.compile(r"\b(et al|e\.g|i\.e|cf|vs|Fig|Sec|Eq|approx)\.", re.I)
_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\[\"'])|\n\s*[-*+]\s+|\n{2,}")
USE = re.compile(r"\b(build(?:s|ing)? on|built on|based on|extend(?:s|ed|ing)?|adapt(?:s|ed|ing)?|borrow(?:s|ed|ing)?"
                 r"|re-?use[sd]?|re-?using|use[sd]?|using|follow(?:s|ed|ing)?|taken from|takes? from|comes? from"
                 r"|inspired by|derived from|combin(?:e|es|ed|ing)|port(?:s|ed)?|re-?implement(?:s|ed|ation)?"
                 r"|implement(?:s|ed)?|appl(?:y|ies|ied)|is|are|was|equals|same as|as in|identical to"
                 r"|reproduc(?:e|es|ed)|variant of|modif(?:y|ies|ied)|on top of|credit(?:s|ed)?|due to"
                 r"|introduced (?:by|in)|proposed (?:by|in)|after|from)\b", re.I)
CONTRAST = re.compile(r"\b(unlike|in contrast (?:to|with)|contrary to|as opposed to|rather than|instead of"
                      r"|differ(?:s|ent)? from|compared (?:to|with)|versus|vs\.?|outperform(?:s|ing)?|beat(?:s|ing)?"
                      r"|better than|worse than|improv(?:e|es|ing) (?:on|over|upon)|than|whereas|while|but not"
                      r"|beyond)\b", re.I)
NEGATION = re.compile(r"\b(not|never|no|nothing|without|neither|nor)\b|n't\b", re.I)
CITATION_MARK = re.compile(r"\bet al\b|\(\s*(?:19|20)\d{2}\s*\)|,\s*(?:19|20)\d{2}\b|arxiv|\b\d{4}\.\d{4,5}\b"
                           r"|https?://|\[\d+\]", re.I)
# Surnames too common to identify a paper on their own (the most frequent family names among ML authors).
COMMON_SURNAMES = frozenset("""zhang wang li liu chen yang huang zhao wu zhou xu sun ma zhu hu guo he lin gao luo
    zheng liang song tang xie han feng deng cao peng yu kim lee park choi jung kang smith johnson brown jones
    nguyen tran singh kumar sharma""".split())
ALIASES = {"Random": ["random eviction", "random selection", "random baseline"]}


def _sentences(text: str) -> list[str]:
    protected = _ABBREV.sub(lambda m: m.group(0).replace(".", "\x00"), text)
    return [s.replace("\x00", ".").strip() for s in _SENT.split(protected) if s and s.strip()]


def _generic(name: str) -> bool:
    """A name made of ordinary words ("Expected Attention", "Random"): as a phrase it is no citation."""
    return all(re.fullmatch(r"[A-Z]?[a-z]+", w) for w in name.split())


def _name_pattern(name: str) -> re.Pattern[str]:
    parts = [re.escape(p) for p in re.findall(r"[A-Za-z0-9]+", name)]
    body = r"[-\s]?".join(parts)
    return re.compile(rf"(?<![A-Za-z0-9]){body}(?![A-Za-z0-9])", 0 if _generic(name) else re.I)


@lru_cache(maxsize=1)
def _index_pairs() -> dict[tuple[str, int], int]:
    """(first author's surname, year) -> how many index papers have it."""
    pairs: dict[tuple[str, int], int] = {}
    for p in load_index().papers:
        if p.first_author and p.year:
            key = (p.first_author.split()[-1].lower(), p.year)
            pairs[key] = pairs.get(key, 0) + 1
    return pairs


def _mentions(sentence: str, paper: Paper, names: list[str]) -> list[int]:
    """Offsets where ``sentence`` names ``paper`` (or one of ``names``), by the rules of the module doc."""
    at: list[int] = []
    if paper.arxiv:
        at += [m.start() for m in re.finditer(re.escape(paper.arxiv), sentence)]
    if paper.title and len(paper.title) >= 20:
        i = sentence.lower().find(paper.title.lower()[:40])
        if i >= 0:
            at.append(i)
    marked = bool(CITATION_MARK.search(sentence))
    for n in [paper.short_name, *names]:
        if not n:
            continue
        pat = _name_pattern(n)
        if _generic(n) and not marked:
            continue
        at += [m.start() for m in pat.finditer(sentence)]
    for alias in ALIASES.get(paper.short_name, []):
        at += [m.start() for m in re.finditer(re.escape(alias), sentence, re.I)]
    if paper.first_author and paper.year:
        surname = paper.first_author.split()[-1]
        for m in re.finditer(rf"\b{re.escape(surname)}\s+et\s+al\.?,?\s*\(?((?:19|20)\d{{2}})", sentence):
            year = int(m.group(1))
            unique = _index_pairs().get((surname.lower(), paper.year), 0) == 1
            if abs(year - paper.year) <= 1 and unique and surname.lower() not in COMMON_SURNAMES:
                at.append(m.start())
    return sorted(set(at))


def _contrasted(sentence: str, at: int) -> bool:
    """A contrast or negation before the mention, in the same clause of the sentence."""
    before = sentence[:at]
    clause = re.split(r"[;:]|\bbut\b|\band we\b", before)[-1]
    words = clause.split()
    near = " ".join(words[-8:])
    return bool(CONTRAST.search(near) or NEGATION.search(" ".join(words[-5:])))


def credit(description: str, paper: Paper | None, names: list[str] = []) -> Credit:  # noqa: B006 - read only
    """Whether ``description`` attributes ``paper`` (or a thing known by ``names``, e.g. an earlier submission)."""
    desc, _ = parse_description(description)
    target = paper or Paper(short_name=names[0] if names else "", title="")
    contrast_quote: str | None = None
    # a text without the arena's sections is read as one body, where a mention must state use
    bodies = [(key, s.heading, s.text) for key in ("builds_on", "relation_to_prior_work", "idea", "method_summary",
                                                    "evidence", "limitations") if (s := desc.sections.get(key))]
    for key, heading, text in bodies or [("text", "the description", description)]:
        for sent in _sentences(text):
            hits = _mentions(sent, target, [n for n in names if n != target.short_name])
            if not hits:
                continue
            clean = [h for h in hits if not _contrasted(sent, h)]
            if not clean:
                contrast_quote = contrast_quote or sent
                continue
            if key == "builds_on" or USE.search(sent):
                where = "Builds on" if key == "builds_on" else heading
                return Credit(credited=True, reason=f"attributed in {where}", quote=sent[:300], section=key)
    if contrast_quote:
        return Credit(credited=False, reason="named only as a contrast or in a negation", quote=contrast_quote[:300])
    return Credit(credited=False, reason="not attributed (no mention that states use)")


def papers_for(reference: str) -> list[Paper]:
    """The papers a reference label stands for: ``baseline:snapkv``, ``public:...`` (through what it implements),
    ``snapkv_qa`` also answers to SnapKV itself."""
    base = reference.split(":", 1)[1] if reference.startswith("baseline:") else reference
    known = load_index().baselines()
    out = [known[base]] if base in known else []
    if base == "snapkv_qa" and "snapkv" in known:
        out.append(known["snapkv"])
    return out


def credit_for(reference: str, description: str, names: list[str] = []) -> Credit:  # noqa: B006 - read only
    """Credit of a code/behaviour reference: any of its papers attributed, or (earlier submissions) its names."""
    papers = papers_for(reference)
    results = [credit(description, p) for p in papers] or [credit(description, None, names)]
    return next((r for r in results if r.credited), results[0])


# --- retrieval --------------------------------------------------------------------------------------------

def prior_art(method_src: str, method_summary: str, idea: str, description: str, k: int = 6) -> PriorArtEvidence:
    comp = computation(method_src)
    query = comp.words()
    index = load_index()
    found: list[PriorArtHit] = []
    seen: set[str] = set()

    def add(paper: Paper, score: float, cosine: float | None, via: Literal["code", "summary"]) -> None:
        if paper.short_name in seen:
            return
        seen.add(paper.short_name)
        c = credit(description, paper)
        found.append(PriorArtHit(short_name=paper.short_name, title=paper.title, arxiv=paper.arxiv,
                                 year=paper.year, score=score, cosine=cosine, credited=c.credited, via=via,
                                 credit=c))

    for h in index.bm25(query)[:CODE_HITS] if query else []:
        add(h.paper, h.score, None, "code")
    summary_query = " ".join([method_summary, idea]).strip()
    if summary_query:
        for h in index.search(summary_query, k):
            if len(found) >= k:
                break
            add(h.paper, h.score, h.cosine, "summary")
    return PriorArtEvidence(query=query, features=comp.features, summary_query=summary_query, hits=found[:k])


def prior_art_hits(method_src: str, method_summary: str, idea: str, description: str,
                   k: int = 6) -> tuple[str, list[PriorArtHit]]:
    """(code query, hits): ``prior_art`` in the shape the evidence stage reads."""
    ev = prior_art(method_src, method_summary, idea, description, k)
    return ev.query, ev.hits
