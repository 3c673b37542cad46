"""Prior art retrieved from what the code does, and which of it the description does not credit.

The query is built from the code (the torch operations and names it scores and allocates with, mapped to the
field's vocabulary) and from the description's method summary, never from its related-work section, so an
author cannot steer the search by what they chose to cite.
"""

from __future__ import annotations

import re

from pydantic import BaseModel

from reviewbench.priorart import load_index

# code idiom -> the words papers use for it
CODE_TERMS = {
    r"\.norm\(": "key norm l2",
    r"cosine_similarity|F\.normalize|cos_sim": "cosine similarity redundancy",
    r"max_pool1d|avg_pool1d": "pooled attention kernel",
    r"\.attention\(": "attention scores observation window",
    r"query_window": "observation window last queries",
    r"question_queries": "question queries",
    r"reconstruction_queries": "context reconstruction repeat",
    r"layer_budgets": "layer budget allocation pyramid",
    r"flatten\(\)\.topk|\.flatten\(\)": "head-wise budget flattened top-k adaptive allocation",
    r"remember\(|recall\(": "cumulative attention accumulated",
    r"torch\.rand|randperm": "random eviction",
    r"n_sink|sink": "attention sinks",
    r"recent": "recent window",
    r"on_decode": "decode-time eviction",
    r"rotate\(": "rope future queries",
    r"\.cov\(|covariance|einsum\([\"']hni,hnj": "query covariance gaussian",
    r"entropy": "attention entropy",
    r"\bema\b|decay|momentum": "exponential moving average decay forgetting",
    r"\bvalues\b.*norm|value_norm|vnorm": "value norm",
    r"cluster|merge|Rewrite\(": "token merging",
}


class PriorArtHit(BaseModel):
    short_name: str
    title: str
    arxiv: str | None
    year: int | None
    score: float  # BM25
    cosine: float | None  # embedding similarity (None without the sentence model)
    credited: bool  # the description names it (short name, arXiv id, title or first author)


def code_query(source: str) -> str:
    return " ".join(words for pattern, words in CODE_TERMS.items() if re.search(pattern, source, re.I))


def credited(description: str, short: str, title: str, arxiv: str | None, first_author: str) -> bool:
    text = description.lower()
    surname = first_author.split()[-1].lower() if first_author else ""
    return any([short and short.lower() in text, arxiv and arxiv in text, title and title.lower()[:40] in text,
                bool(surname) and re.search(rf"\b{re.escape(surname)}\s+et\s+al", text) is not None])


def prior_art_hits(method_src: str, method_summary: str, idea: str, description: str, k: int = 6) -> tuple[str, list[PriorArtHit]]:
    query = " ".join([code_query(method_src), method_summary, idea]).strip()
    hits = load_index().search(query, k) if query else []
    return query, [PriorArtHit(short_name=h.paper.short_name, title=h.paper.title, arxiv=h.paper.arxiv,
                               year=h.paper.year, score=h.score, cosine=h.cosine,
                               credited=credited(description, h.paper.short_name, h.paper.title, h.paper.arxiv,
                                                 h.paper.first_author))
                   for h in hits]
