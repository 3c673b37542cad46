"""Rules in operations for the quantisation, low-rank and sparse-attention entries that agents port as eviction
scores (issue 23, item 3: "prior art decides"): QJL's sign sketch, Eigen Attention's joint eigenbasis, MInference's
vertical-slash pattern, SpeCache's low-bit copy, LaCache's ladder, Hybrid-LTE's context-aware learned scorer — and
the reader operations they needed (the query's projection against the keys' sign bits, the query against keys
rounded to a few levels, attention summed per query-key distance, one basis of the keys and queries together, a
positional span that moves with the layer index).

Every method under tests/data/ported_rules/ was written for these tests as a cheating agent would write a port
(renamed, own helpers, einsum or loops, other idioms), from the papers' rules; none is a held-out or calibration
bundle. Each port has a credited twin (the same code, the paper in Builds on) and the honest methods there use one
of the new operations as a part of a rule of their own.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from reviewbench.evidence.computation import FEATURE_WORDS, computation
from reviewbench.priorart import load_index
from portcases import assert_credited_twin_clean, assert_flagged_port, assert_rename_proof, desc as _desc, flags as _flags
from renaming import renamed

DATA = Path(__file__).resolve().parent / "data" / "ported_rules"
ROOT = Path(__file__).resolve().parent.parent


def _src(case: str) -> str:
    return (DATA / case / "method.py").read_text(encoding="utf-8")


# (case, paper, the new operation it needs, the uncredited description: its own words, a contrast at most)
PORTS = [
    ("qjl", "QJL", "sign_sketch",
     _desc("Keys kept as short binary codes plus their lengths; the closing queries score the codes.",
           relation="Unlike HashEvict, the query side is never binarised.")),
    ("qjl_cmp", "QJL", "sign_sketch",
     _desc("Compact +1/-1 key patterns scaled by magnitude estimate the last query's logits.")),
    ("eigen", "Eigen Attention", "query_key_basis",
     _desc("Question and context described in a few shared axes; attention read in those axes.",
           relation="Loki projects on the keys' principal components only; we do not.")),
    ("minference", "MInference", "diagonal_sums",
     _desc("Closing-query attention read per key and per offset back from the query.",
           relation="SnapKV pools the window attention instead.")),
    ("minference_bincount", "MInference", "diagonal_sums",
     _desc("Tokens many recent queries look at, and tokens at distances recent queries favour.")),
    ("minference_gather", "MInference", "diagonal_sums",
     _desc("Attention read at each offset back from the closing queries, and per key.")),
    ("minference_index", "MInference", "diagonal_sums",
     _desc("Band-wise attention: the closing queries' attention along bands, plus per key.")),
    ("eigen_cov", "Eigen Attention", "query_key_basis",
     _desc("A common frame for the window's queries and the keys; the attention is read in it.")),
    ("qjl_where", "QJL", "sign_sketch",
     _desc("Keys kept as +1/-1 patterns of a fixed mixing, with their lengths; the queries are mixed alike.")),
    ("lacache_mask", "LaCache", "layer_span",
     _desc("Each layer keeps a moving stretch of the middle, the first tokens and the newest ones.",
           builds="StreamingLLM (arXiv 2309.17453): the first tokens and the recent window.")),
    ("specache", "SpeCache", "quantised_scores",
     _desc("A coarse preview of every key is what the recent queries look at.",
           relation="KIVI quantises the cache for storage; we never store the preview.")),
    ("lacache", "LaCache", "layer_span",
     _desc("Each layer holds one stretch of the context, the stretch stepping forward with depth.",
           relation="Unlike StreamingLLM, the middle of the context is not dropped by every layer.")),
    ("hybrid_lte", "Hybrid-LTE", "pooling",
     _desc("A small fitted filter reads each token with its neighbours and says how much it is worth keeping.")),
]


@pytest.mark.parametrize("case,paper,op,description", PORTS, ids=[p[0] for p in PORTS])
def test_an_uncredited_disguised_port_is_matched_to_its_paper_and_flagged(case, paper, op, description):
    assert_flagged_port(_src(case), paper, op, description)


@pytest.mark.parametrize("case,paper,op,description", PORTS, ids=[p[0] for p in PORTS])
def test_the_credited_twin_is_not_flagged(case, paper, op, description):
    assert_credited_twin_clean(_src(case), paper, "we port its selection rule as an eviction score")


@pytest.mark.parametrize("case", sorted(p.name for p in DATA.iterdir() if (p / "method.py").exists()))
def test_renaming_every_identifier_changes_nothing(case):
    src = _src(case)
    assert_rename_proof(src, renamed(src))


# (case, the new operation it uses as a part, what the description credits, the paper whose rule it must not read as)
HONEST = [
    ("honest_sketch_norm", "sign_sketch", "SnapKV (arXiv 2404.14469): the window attention we weight.", "QJL"),
    ("honest_lowbit_guard", "quantised", "SnapKV (arXiv 2404.14469): the window attention.", "SpeCache"),
    ("honest_joint_spread", "query_key_basis", "FINCH (arXiv 2409.00680): the question's attention.",
     "Eigen Attention"),
    ("honest_layer_window", "layer_span", "SnapKV (arXiv 2404.14469): its pooled window attention.", "LaCache"),
    ("honest_depth_windows", None, "StreamingLLM (arXiv 2309.17453): sinks and a recent window, its length grown "
                                   "with depth.", "LaCache"),
    ("honest_distance_decay", None, "SnapKV (arXiv 2404.14469): the window queries.", "MInference"),
]


@pytest.mark.parametrize("case,op,builds,not_paper", HONEST, ids=[h[0] for h in HONEST])
def test_an_honest_method_using_a_new_operation_as_a_part_is_not_flagged(case, op, builds, not_paper):
    src = _src(case)
    feats = computation(src).features
    if op is not None:
        assert op in feats
    else:  # attention weighted by the query-key distance is no sum along the diagonals (nor a count per key); a
        # recent window whose length grows with depth is no span of the middle moving with it
        assert not {"diagonal_sums", "count_normalised", "layer_span"} & set(feats)
    ev, flags = _flags(src, _desc("Our own rule.", builds=builds))
    assert flags == [], [f.explanation for f in flags]
    assert not_paper not in [m.short_name for m in ev.computed if m.level == "same"]


def test_the_new_operations_have_words_and_every_index_paper_a_rule_or_a_reason():
    for op in ("sign_sketch", "quantised", "quantised_scores", "diagonal_sums", "query_key_basis", "layer_span"):
        assert op in FEATURE_WORDS
    spec = importlib.util.spec_from_file_location("build_priorart_index", ROOT / "scripts" / "build_priorart_index.py")
    assert spec is not None and spec.loader is not None
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    papers = load_index().papers
    for p in papers:
        if p.short_name in build.OPS:
            ops, optional, rule = build.OPS[p.short_name]
            assert (p.ops, p.ops_optional, p.rule) == (ops, optional, rule), p.short_name  # the JSON is regenerated
        else:  # no rule of its own: a reason for none, or a training-free port only (build.OPS_UNTRAINED)
            assert not p.ops and (p.short_name in build.NO_RULE or p.short_name in build.OPS_UNTRAINED), p.short_name
    # every operation a rule names is one the reader can find
    for p in papers:
        for op in {a for r in p.ops + p.ops_optional for a in r.split("|")}:
            assert op in FEATURE_WORDS, (p.short_name, op)
    assert sum(bool(p.ops) for p in papers) == 147  # 119, five of the second widening round (wider_ports2), ten of the
    # third, four of the fourth, four of the fifth, one of the sixth, MoBA's block gate (set 11's credited port) and
    # ShotKV's segments (a port finds its segments in the data: set 25's s02), RetrievalAttention's fetch counts (set
    # 26's s12), RefreshKV's query-similarity refresh (set 34's key)


# SpeCache's low-bit copy written in the quantiser idioms a porter may choose: each is read as keys rounded to a
# grid, and the query against them as the paper's rule
_LOWBIT = '''import torch

from harness.api import EvictionMethod, Keep, LayerView


class Preview(EvictionMethod):
    query_window = 8

    def select(self, view: LayerView) -> Keep:
        k = view.keys.float()
        lo, hi = k.amin(dim=1, keepdim=True), k.amax(dim=1, keepdim=True)
        step = (hi - lo).clamp_min(1e-6) / 3
        CODES
        approx = codes * step + lo
        q = view.group(view.queries.float(), "mean")
        s = torch.einsum("hnd,htd->hnt", q, approx).softmax(-1).sum(1)
        return Keep.from_topk(s, view.budget, view.valid)
'''


@pytest.mark.parametrize("codes", [
    "codes = (k - lo) // step",
    "codes = torch.div(k - lo, step, rounding_mode='floor')",
    "codes = torch.bucketize(k, torch.linspace(-2.0, 2.0, 4))",
    "codes = ((k - lo) / step).to(torch.uint8).float()",
    "codes = torch.clamp(((k - lo) / step + 0.5).floor(), 0, 3)",
])
def test_a_low_bit_copy_is_read_in_every_quantiser_idiom(codes):
    src = _LOWBIT.replace("CODES", codes)
    feats = computation(src).features
    assert {"quantised", "quantised_scores"} <= set(feats) and "key_envelope" not in feats
    ev, flags = _flags(src, _desc("A preview of the keys ranks the tokens."))
    assert "SpeCache" in flags[0].explanation
