"""The packaged prior-art index: the twelve baselines and ~130 KV-cache compression papers, searchable offline.

Built by ``scripts/build_priorart_index.py`` into ``reviewbench/data/priorart.json``. Search is BM25 over
short name, title, key idea and keywords; the judges' ``prior_art_search`` tool and the citation check both
read it, so nothing here needs the network.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from functools import lru_cache
from importlib.resources import files

from pydantic import BaseModel

_WORD = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_STOP = frozenset("a an and are as at be by for from in into is it its of on or over per than that the their then "
                  "this to with without which each all one two".split())


class Paper(BaseModel):
    short_name: str
    title: str
    first_author: str = ""
    year: int | None = None
    venue: str = ""
    arxiv: str | None = None
    family: str = ""
    key_idea: str = ""
    keywords: list[str] = []
    baseline: str | None = None  # the harness method name when this is one of the arena's baselines

    @property
    def url(self) -> str | None:
        return f"https://arxiv.org/abs/{self.arxiv}" if self.arxiv else None

    def text(self) -> str:
        return " ".join([self.short_name, self.title, self.key_idea, " ".join(self.keywords)])


class Hit(BaseModel):
    paper: Paper
    score: float


def tokens(text: str) -> list[str]:
    out = []
    for w in _WORD.findall(text.lower()):
        if w in _STOP:
            continue
        out.append(w)
        if "-" in w:  # "k-norm" also matches "k norm" and "knorm"
            out.extend(p for p in w.split("-") if p and p not in _STOP)
            out.append(w.replace("-", ""))
    return out


class PriorArtIndex:
    """BM25 (k1 = 1.5, b = 0.75) over the papers' text."""

    def __init__(self, papers: list[Paper], k1: float = 1.5, b: float = 0.75) -> None:
        self.papers = papers
        self.docs = [Counter(tokens(p.text())) for p in papers]
        self.lengths = [sum(d.values()) for d in self.docs]
        self.avg = sum(self.lengths) / max(1, len(self.lengths))
        df: Counter[str] = Counter()
        for d in self.docs:
            df.update(d.keys())
        n = len(papers)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}
        self.k1, self.b = k1, b

    def search(self, query: str, k: int = 5) -> list[Hit]:
        q = tokens(query)
        scored = []
        for paper, doc, length in zip(self.papers, self.docs, self.lengths):
            s = 0.0
            for t in q:
                f = doc.get(t, 0)
                if f:
                    s += self.idf[t] * f * (self.k1 + 1) / (f + self.k1 * (1 - self.b + self.b * length / self.avg))
            if s > 0:
                scored.append(Hit(paper=paper, score=round(s, 3)))
        scored.sort(key=lambda h: -h.score)
        return scored[:k]

    def by_arxiv(self, arxiv_id: str) -> Paper | None:
        return next((p for p in self.papers if p.arxiv == arxiv_id), None)


@lru_cache(maxsize=1)
def load_index() -> PriorArtIndex:
    raw = json.loads(files("reviewbench").joinpath("data/priorart.json").read_text(encoding="utf-8"))
    return PriorArtIndex([Paper.model_validate(p) for p in raw["papers"]])
