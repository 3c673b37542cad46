"""Code similarity of a method.py to every baseline and earlier submission: token fingerprints with winnowing
(Schleimer et al. 2003, as MOSS and Dolos use), robust to renaming, reformatting and comments.

Tokens are normalised (local names become ``V``, literals ``N``/``S``, comments and docstrings dropped;
keywords, operators and attribute names such as ``.topk`` or ``.softmax`` stay, since they carry the
algorithm). Fingerprints shared with the interface skeleton and the harness's own trivial methods are
subtracted, so two methods are not "similar" for subclassing ``EvictionMethod``. The result is evidence with
the matching line spans on both sides, never a verdict: no threshold decides alone.
"""

from __future__ import annotations

import hashlib
import io
import keyword
import re
import tokenize
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel

import harness.methods as _methods

K = 7  # tokens per k-gram (7 and a window of 4 separate a rewritten SnapKV from the rest best)
W = 4  # winnowing window
METHODS_DIR = Path(_methods.__file__).resolve().parent
_HEAD = "import torch\nfrom harness.api import EvictionMethod, Keep, LayerView, ModelInfo, Rewrite\n\n\n"
_CLASS = "class Method(EvictionMethod):\n    name = \"method\"\n"
_SELECT = ("    def select(self, view: LayerView) -> Keep:\n"
           "        if view.budget >= view.n_tokens:\n"
           "            return Keep.from_topk(view.positions.float(), view.budget, view.valid)\n"
           "        return Keep.from_topk(scores, view.budget, view.valid)\n")
_BARE_SELECT = ("    def select(self, view: LayerView) -> Keep:\n"
                "        return Keep.from_topk(view.positions.float(), view.budget, view.valid)\n")
_EXTRA = ("    def setup(self, model: ModelInfo) -> None:\n        self.model = model\n\n"
          "    def on_decode(self, view: LayerView) -> Keep:\n        return self.select(view)\n")
# The interface written the ways a method commonly starts: shared with it is no evidence of anything.
SKELETONS = [
    _HEAD + _CLASS + "\n" + _SELECT,
    _HEAD + _CLASS + "\n" + _BARE_SELECT,
    _HEAD + _CLASS + "    query_window = 0\n\n" + _SELECT + "\n" + _EXTRA,
    _HEAD + _CLASS + "    query_window = 0\n    question_queries = True\n\n" + _BARE_SELECT,
]


class Fingerprint(BaseModel):
    hashes: dict[int, list[int]]  # k-gram hash -> the source lines where it starts


class Span(BaseModel):
    start: int
    end: int


class CodeMatch(BaseModel):
    reference: str  # "baseline:snapkv" or "submission:agent2-003"
    jaccard: float  # shared fingerprints / union
    containment: float  # share of the candidate's fingerprints found in the reference
    candidate_spans: list[Span]
    reference_spans: list[Span]


def normalise(source: str) -> list[tuple[str, int]]:
    """(token, line) pairs of the normalised token stream."""
    out: list[tuple[str, int]] = []
    prev = ""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return out
    for tok in tokens:
        t, s, line = tok.type, tok.string, tok.start[0]
        if t in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                 tokenize.ENDMARKER, tokenize.ENCODING):
            continue
        if t == tokenize.STRING:
            if prev in ("", ":", "NEWLINE"):  # a docstring or a bare string statement
                continue
            norm = "S"
        elif t == tokenize.NUMBER:
            norm = "N"
        elif t == tokenize.NAME:
            norm = s if (keyword.iskeyword(s) or prev == "." or s in _KEEP) else "V"
        else:
            norm = s
        out.append((norm, line))
        prev = s
    return out


_KEEP = frozenset({"torch", "F", "self", "view", "Keep", "Rewrite", "LayerView", "EvictionMethod", "range", "len",
                   "min", "max", "sum", "int", "float", "abs", "sorted", "enumerate", "zip"})


def fingerprint(source: str) -> Fingerprint:
    toks = normalise(source)
    grams = []
    for i in range(len(toks) - K + 1):
        h = int.from_bytes(hashlib.blake2b(" ".join(t for t, _ in toks[i:i + K]).encode(), digest_size=8).digest(), "big")
        grams.append((h, toks[i][1], toks[i + K - 1][1]))
    chosen: dict[int, list[int]] = {}
    last = -1
    for i in range(max(0, len(grams) - W + 1)):
        window = grams[i:i + W]
        j = min(range(len(window)), key=lambda x: (window[x][0], -x))  # rightmost minimum
        if i + j != last:
            last = i + j
            h, a, b = grams[i + j]
            chosen.setdefault(h, []).extend(range(a, b + 1))
    return Fingerprint(hashes=chosen)


@lru_cache(maxsize=1)
def boilerplate() -> frozenset[int]:
    hashes = {h for sk in SKELETONS for h in fingerprint(sk).hashes}
    for name in ("full.py", "random_.py"):
        hashes |= set(fingerprint((METHODS_DIR / name).read_text()).hashes)
    return frozenset(hashes)


_IMPORT = re.compile(r"^from harness\.methods\.(\w+) import", re.M)


def baseline_source(module: str) -> str:
    """A baseline module with the harness.methods modules it builds on (PyramidKV carries SnapKV's scoring)."""
    text = (METHODS_DIR / f"{module}.py").read_text()
    parents = [m for m in _IMPORT.findall(text) if m != module]
    return "\n".join([text, *(baseline_source(p) for p in parents)])


MODULE_LABEL = {"streaming": "window", "random_": "random"}  # module -> the harness's reference name


def baseline_sources() -> dict[str, str]:
    return {f"baseline:{MODULE_LABEL.get(p.stem, p.stem)}": baseline_source(p.stem)
            for p in sorted(METHODS_DIR.glob("*.py")) if p.stem not in ("__init__", "full")}


def _spans(lines: set[int]) -> list[Span]:
    out: list[Span] = []
    for n in sorted(lines):
        if out and n <= out[-1].end + 1:
            out[-1].end = n
        else:
            out.append(Span(start=n, end=n))
    return out


def compare(candidate: str, references: dict[str, str], top: int = 5) -> list[CodeMatch]:
    skip = boilerplate()
    cand = fingerprint(candidate)
    c_hashes = set(cand.hashes) - skip
    out = []
    for name, src in references.items():
        ref = fingerprint(src)
        r_hashes = set(ref.hashes) - skip
        shared = c_hashes & r_hashes
        union = c_hashes | r_hashes
        out.append(CodeMatch(
            reference=name, jaccard=round(len(shared) / len(union), 3) if union else 0.0,
            containment=round(len(shared) / len(c_hashes), 3) if c_hashes else 0.0,
            candidate_spans=_spans({n for h in shared for n in cand.hashes[h]}),
            reference_spans=_spans({n for h in shared for n in ref.hashes[h]})))
    out.sort(key=lambda m: (-m.jaccard, -m.containment, m.reference))
    return out[:top]
