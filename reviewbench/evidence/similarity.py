"""Code similarity of a method.py to every baseline, earlier submission and public reference implementation.

Two channels, each a set of fingerprints compared by containment (share of the candidate's fingerprints found
in the reference) and Jaccard:

- **tokens**: winnowed token k-grams (Schleimer et al. 2003, as MOSS and Dolos use). Names the author chose
  become ``V``, literals ``N``/``S``, comments and docstrings are dropped; library vocabulary stays
  (``topk``, ``softmax``, ``max_pool1d``, keyword names such as ``kernel_size``), and ``torch.``/``F.``/
  ``nn.functional.`` prefixes are dropped so ``F.softmax`` and ``torch.softmax`` read alike. Catches copies
  that kept the code's shape.
- **ops**: k-grams of the canonical operation stream of ``computation.op_stream`` (helpers inlined, control
  flow and layout calls dropped, equivalent calls merged). Catches ports that renamed everything, reordered or
  inlined/outlined helpers, or turned a batched call into a loop over heads.

References are the harness's baselines (with the modules they build on), earlier submissions, and the public
reference code (kvpress presses and the papers' official repositories at pinned commits), shipped only as
fingerprints plus provenance in ``reviewbench/data/public_fingerprints.json`` (``scripts/
build_public_fingerprints.py``). Fingerprints shared with the interface skeleton and the harness's trivial
methods are subtracted. The result is evidence with matching line spans on both sides, never a verdict.
"""

from __future__ import annotations

import hashlib
import io
import json
import keyword
import math
import re
import tokenize
from collections.abc import Mapping
from functools import lru_cache
from importlib.resources import files
from pathlib import Path

from pydantic import BaseModel

import harness.methods as _methods
from reviewbench.evidence.computation import API_CALLS, CANON, op_graph, op_paths

K = 7  # tokens per k-gram (7 and a window of 4 separate a rewritten SnapKV from the rest best)
W = 4  # winnowing window
OP_K = 3  # canonical operations per data-flow chain
METHODS_DIR = Path(_methods.__file__).resolve().parent
PUBLIC_DATA = "data/public_fingerprints.json"
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

# Module prefixes dropped before a call, so `torch.softmax`, `F.softmax` and `nn.functional.softmax` read alike.
MODULES = frozenset({"torch", "F", "nn", "functional", "math", "np", "numpy", "linalg", "fft", "special"})
# Names nobody renames: tensor and torch vocabulary, the harness interface, builtins, common keyword arguments.
LIBRARY = frozenset(set(CANON) | set(API_CALLS) | set("""
    view reshape transpose permute unsqueeze squeeze expand expand_as repeat repeat_interleave contiguous flatten
    unflatten split chunk narrow to float double half bfloat16 long int bool clone detach item tolist numel size
    shape dim ndim dtype device T mT finfo iinfo inf nan float32 float16 int64 long masked_select index_fill
    fill_ zero_ copy_ add_ mul_ sub_ div_ neg numel new_tensor tensor as_tensor from_numpy no_grad inference_mode
    isinf isnan isfinite nan_to_num sign floor ceil round trunc mean sum prod values indices kthvalue einsum
    keys queries positions query_positions budget board phase model valid layer state n_tokens n_kv_heads
    valid_mask attention group rotate remember recall same_for_all_heads from_topk Keep Rewrite LayerView
    EvictionMethod ModelInfo setup select on_decode layer_budgets query_window question_queries
    reconstruction_queries name n_layers n_heads head_dim group_size rope_theta
    Generator manual_seed
""".split()))
# Bare names nobody renames: builtins, torch functions imported bare, the interface's classes.
BARE = frozenset(set(CANON) | set(API_CALLS) | set("""
    self cls super range len min max sum abs int float bool sorted enumerate zip list tuple dict set any all
    isinstance round print Keep Rewrite LayerView EvictionMethod ModelInfo torch
""".split()))
_KEYWORD_ARGS = frozenset("dim keepdim kernel_size padding stride index largest descending diagonal value p "
                          "generator dtype device k sorted".split())


class Span(BaseModel):
    start: int
    end: int
    path: str | None = None  # for public references: the file inside the repository


class PublicSource(BaseModel):
    """Where a public reference's fingerprints come from (the code itself is not shipped)."""

    repo: str  # owner/name on GitHub
    commit: str
    path: str  # the unit's main file
    symbols: list[str]  # the classes/functions fingerprinted
    licence: str
    url: str  # the file at the pinned commit


class Reference(BaseModel):
    """A reference's fingerprints: hash -> source lines ((path index, line) for public multi-file units)."""

    label: str
    tokens: dict[int, list[int]]
    ops: dict[int, list[int]]
    implements: str | None = None  # the harness baseline this code implements, when known
    source: PublicSource | None = None
    paths: list[str] = []  # line numbers >= 1_000_000 * i belong to paths[i] (public multi-file units)


class CodeMatch(BaseModel):
    reference: str  # "baseline:snapkv", "submission:agent2-003", "public:kvpress/snapkv_press.py:SnapKVPress@8bb29b9"
    jaccard: float  # token fingerprints shared / union
    containment: float  # share of the candidate's token fingerprints found in the reference
    # the same share with each fingerprint weighted by how few reference families have it: code every method on the
    # harness writes (reading the view, remembering state, pinning sinks) weighs little — the copy measure the
    # MISSING_ATTRIBUTION bar reads
    weighted_containment: float = 0.0
    op_jaccard: float = 0.0  # the same on the canonical operation stream
    op_containment: float = 0.0
    score: float = 0.0  # the order: per channel rarity-weighted containment x (1 + reverse containment) / 2, combined
    implements: str | None = None  # the baseline the reference implements ("snapkv"), for public and baseline refs
    source: PublicSource | None = None  # provenance of a public reference
    candidate_spans: list[Span]
    reference_spans: list[Span]


def normalise(source: str) -> list[tuple[str, int]]:
    """(token, line) pairs of the normalised token stream."""
    out: list[tuple[str, int]] = []
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(source).readline)
                  if t.type not in (tokenize.COMMENT, tokenize.NL, tokenize.INDENT, tokenize.DEDENT,
                                    tokenize.ENDMARKER, tokenize.ENCODING)]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return out
    prev = ""
    depth = 0  # bracket depth: keyword arguments only exist inside a call
    skip_dot = False
    for i, tok in enumerate(tokens):
        t, s, line = tok.type, tok.string, tok.start[0]
        nxt = tokens[i + 1].string if i + 1 < len(tokens) else ""
        if t == tokenize.NEWLINE:
            prev = "NEWLINE"
            continue
        if skip_dot and s == ".":
            skip_dot = False
            continue
        skip_dot = False
        if t == tokenize.OP and s in "([{":
            depth += 1
        elif t == tokenize.OP and s in ")]}":
            depth = max(0, depth - 1)
        if t == tokenize.STRING:
            if prev in ("", ":", "NEWLINE"):  # a docstring or a bare string statement
                continue
            norm = "S"
        elif t == tokenize.NUMBER:
            norm = "N"
        elif t == tokenize.NAME:
            if (s in MODULES or s == "self") and nxt == "." and prev != ".":
                skip_dot = True  # torch.nn.functional.softmax -> softmax; self.window -> window (a name)
                prev = s
                continue
            if keyword.iskeyword(s):
                norm = s
            elif nxt == "=" and depth and s in _KEYWORD_ARGS:
                norm = s
            elif s in (LIBRARY if prev == "." else BARE):
                norm = s
            else:
                norm = "V"
        else:
            norm = s
        out.append((norm, line))
        prev = s
    return out


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big") >> 1  # fits int64


class Fingerprint(BaseModel):
    hashes: dict[int, list[int]]  # k-gram hash -> the source lines where it starts


def fingerprint(source: str) -> Fingerprint:
    toks = normalise(source)
    grams = []
    for i in range(len(toks) - K + 1):
        grams.append((_hash(" ".join(t for t, _ in toks[i:i + K])), toks[i][1], toks[i + K - 1][1]))
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


def op_fingerprint(source: str) -> Fingerprint:
    """Chains of ``OP_K`` canonical operations along the code's data flow (``matmul > softmax > reduce``),
    with the lines they stand on."""
    out: dict[int, list[int]] = {}
    for ops, lines in op_paths(op_graph(source), OP_K):
        out.setdefault(_hash("ops:" + ">".join(ops)), []).extend(sorted(lines))
    return Fingerprint(hashes=out)


def reference(label: str, source: str, implements: str | None = None) -> Reference:
    return Reference(label=label, tokens=fingerprint(source).hashes, ops=op_fingerprint(source).hashes,
                     implements=implements)


# A fixed snippet whose fingerprints the data file records at build time: if the normaliser has changed
# since, they differ and the public fingerprints must be rebuilt (tested).
CANARY = '''
def score(q, k, w, kernel):
    a = torch.matmul(q[..., -w:, :], k.transpose(2, 3)) / math.sqrt(q.shape[-1])
    a = F.softmax(a, dim=-1, dtype=torch.float32)
    s = a[..., :-w].sum(dim=-2)
    s = F.max_pool1d(s, kernel_size=kernel, padding=kernel // 2, stride=1)
    return s.topk(w, dim=-1).indices
'''


def canary() -> dict[str, list[int]]:
    return {"tokens": sorted(fingerprint(CANARY).hashes), "ops": sorted(op_fingerprint(CANARY).hashes)}


@lru_cache(maxsize=1)
def boilerplate() -> tuple[frozenset[int], frozenset[int]]:
    """(token, op) fingerprints of the interface skeletons and the harness's trivial methods."""
    tokens = {h for sk in SKELETONS for h in fingerprint(sk).hashes}
    ops = {h for sk in SKELETONS for h in op_fingerprint(sk).hashes}
    for name in ("full.py", "random_.py"):
        tokens |= set(fingerprint((METHODS_DIR / name).read_text()).hashes)
    ops |= set(op_fingerprint((METHODS_DIR / "full.py").read_text()).hashes)
    return frozenset(tokens), frozenset(ops)


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


class PublicData(BaseModel):
    """``reviewbench/data/public_fingerprints.json`` (schema ``reviewbench.public-fingerprints/1``)."""

    schema_: str
    k: int
    w: int
    op_k: int
    canary: dict[str, list[int]]
    repositories: list[dict]
    units: list[Reference]


@lru_cache(maxsize=1)
def public_data() -> PublicData:
    raw = json.loads(files("reviewbench").joinpath(PUBLIC_DATA).read_text(encoding="utf-8"))
    raw["schema_"] = raw.pop("schema")
    for u in raw["units"]:
        u["tokens"] = {int(h, 16): v for h, v in u["tokens"].items()}
        u["ops"] = {int(h, 16): v for h, v in u["ops"].items()}
    return PublicData.model_validate(raw)


def public_references() -> dict[str, Reference]:
    """The public reference implementations, by label (``public:<repo>/<file>:<symbol>@<commit>``)."""
    data = public_data()
    if (data.k, data.w, data.op_k) != (K, W, OP_K) or data.canary != canary():
        raise RuntimeError(f"{PUBLIC_DATA} was built with another normaliser: rebuild it with "
                           "scripts/build_public_fingerprints.py")
    return {u.label: u for u in data.units}


def _spans(lines: set[int], paths: list[str] | None = None) -> list[Span]:
    out: list[Span] = []
    for n in sorted(lines):
        file_idx, line = divmod(n, 1_000_000)
        path = paths[file_idx] if paths and file_idx < len(paths) else None
        if out and out[-1].path == path and line <= out[-1].end + 1:
            out[-1].end = line
        else:
            out.append(Span(start=line, end=line, path=path))
    return out


def _implements(label: str) -> str | None:
    return label.split(":", 1)[1] if label.startswith("baseline:") else None


def _ratio(a: int, b: int) -> float:
    return round(a / b, 3) if b else 0.0


def _weights(refs: list[Reference], channel: str, skip: frozenset[int]) -> dict[int, float]:
    """Inverse document frequency of each fingerprint over the references' families (the baseline a reference
    implements, else its own label): code every implementation shares (a causal mask, a softmax over q.k)
    weighs little, code one family alone has weighs most."""
    families: dict[int, set[str]] = {}
    for r in refs:
        fam = r.implements or r.label
        for h in getattr(r, channel):
            if h not in skip:
                families.setdefault(h, set()).add(fam)
    n = len({r.implements or r.label for r in refs})
    return {h: math.log((n + 1) / (len(f) + 0.5)) for h, f in families.items()} | {0: math.log((n + 1) / 0.5)}


def _weighted(shared: set[int], mine: set[int], weights: dict[int, float]) -> float:
    total = sum(weights.get(h, weights[0]) for h in mine)
    return round(sum(weights.get(h, weights[0]) for h in shared) / total, 3) if total else 0.0


def compare(candidate: str, references: Mapping[str, str | Reference], top: int = 5) -> list[CodeMatch]:
    """The ``top`` nearest references by ``score``: the stronger channel's containment, each fingerprint
    weighted by how few reference families share it, so a copy that kept the code's shape and a port that
    kept only what it computes both rank, and the code every attention method shares decides nothing."""
    skip_t, skip_o = boilerplate()
    c_tok = fingerprint(candidate).hashes
    c_ops = op_fingerprint(candidate).hashes
    ct, co = set(c_tok) - skip_t, set(c_ops) - skip_o
    refs = [ref if isinstance(ref, Reference) else reference(name, ref, _implements(name))
            for name, ref in references.items()]
    wt, wo = _weights(refs, "tokens", skip_t), _weights(refs, "ops", skip_o)
    out = []
    for name, r in zip(references, refs):
        rt, ro = set(r.tokens) - skip_t, set(r.ops) - skip_o
        st, so = ct & rt, co & ro
        # the candidate's share found in the reference, tempered by the reference's share found in the candidate:
        # a superset (PyramidKV's code, which carries SnapKV's) does not outrank the exact source; the two
        # channels combine as independent evidence (1 - (1 - a)(1 - b)), so either can carry a match
        shared = _weighted(st, ct, wt)
        tok = shared * (0.5 + 0.5 * _weighted(st, rt, wt))
        ops = _weighted(so, co, wo) * (0.5 + 0.5 * _weighted(so, ro, wo))
        score = 1 - (1 - tok) * (1 - ops)
        out.append(CodeMatch(
            reference=name, jaccard=_ratio(len(st), len(ct | rt)), containment=_ratio(len(st), len(ct)),
            weighted_containment=shared,
            op_jaccard=_ratio(len(so), len(co | ro)), op_containment=_ratio(len(so), len(co)),
            score=round(score, 3), implements=r.implements, source=r.source,
            candidate_spans=_spans({n for h in st for n in c_tok[h]} | {n for h in so for n in c_ops[h]}),
            reference_spans=_spans({n for h in st for n in r.tokens[h]} | {n for h in so for n in r.ops[h]},
                                   r.paths or None)))
    out.sort(key=lambda m: (-m.score, -m.jaccard, m.reference))
    return out[:top]
