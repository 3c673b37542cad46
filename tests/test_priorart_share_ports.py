"""Rules in operations for more entries that had none and that agents port as token scores: KVTC (keys coded in
their own principal basis), xKV (several layers' keys factorised together), KVSharer (another layer's selection served
when the layers' caches compare so), MiKV (full-precision keys where the attention ranks a token, a low-bit copy
elsewhere) and CommVQ (pre-RoPE keys coded by a codebook); and the reader idioms they need: a rounding of keys
projected on a basis of their own factorisation, a concatenation of this layer's keys with another layer's kept ones
then factorised (also a list plus a comprehension of kept layers), a test on how this layer's keys compare with
another layer's before returning a kept selection, a where (or an indexed assignment) choosing between the keys and
their low-bit copy by a score, a written-out distance to another layer's keys, ``KMeans(n).fit(keys)``.

Every method under tests/data/share_ports/ was written for these tests from the papers' mechanisms, after the rules'
operations were fixed from the papers, as a porter would disguise them (own names, helpers, loops, other idioms); none
is a held-out or calibration bundle. Each port has a credited twin; the honest methods use a neighbouring operation
as a part of a rule of their own.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reviewbench.priorart import load_index
from portcases import (assert_credited_twin_clean, assert_flagged_port, assert_honest_neighbour,
                       assert_rename_proof, desc as _desc, paper as _paper)
from renaming import renamed

DATA = Path(__file__).resolve().parent / "data" / "share_ports"


def _src(case: str) -> str:
    return (DATA / case / "method.py").read_text(encoding="utf-8")


# A transform-coding port whose quantiser step is the coefficients' standard deviation reads that spread as LagKV's
# key_variance (one operation beyond KVTC's rule: a family member, no flag). A known gap of the reader, kept visible.
_STD_STEP = pytest.mark.xfail(strict=True, reason="a std-scaled quantiser step reads as key_variance")

# (case, paper, the operation that carries the paper's mechanism, the uncredited description: own words, a contrast)
PORTS = [
    ("kvtc", "KVTC", "transform_coded",
     _desc("Keys are rewritten on their own decorrelated axes with more levels for the leading ones; the closing "
           "queries rank on the rewritten keys.", relation="Unlike SnapKV, no pooling is applied.")),
    ("kvtc_lowrank", "KVTC", "transform_coded", _desc("A spectral code of each head's keys scores the context.")),
    ("xkv", "xKV", "cross_layer_basis",
     _desc("Two neighbouring depths share one spectral basis; the keys rebuilt from it are scored.",
           relation="Loki keeps one basis per layer; ours spans depths.")),
    ("xkv_leverage", "xKV", "cross_layer_basis",
     _desc("Tokens weigh most in the axes several depths share.")),
    ("xkv_keys", "xKV", "cross_layer_basis",
     _desc("Each head's keys joined with the two depths below, the tokens' weight in the joint axes kept.")),
    ("kvsharer", "KVSharer", "layer_similarity",
     _desc("A depth whose cache sits far from the one below borrows its choice.")),
    ("kvsharer_cosine", "KVSharer", "layer_reuse",
     _desc("When the value profile turns away from the layer below, that layer's picks are served again.",
           relation="GemFilter fixes the layer; ours follows the caches.")),
    ("mikv", "MiKV", "mixed_precision",
     _desc("Two tiers of precision: the strongest-hit tokens exact, the rest coarse; the tiers are rescored.",
           relation="H2O evicts; we keep every token.")),
    ("mikv_indexed", "MiKV", "mixed_precision",
     _desc("The coarse cache is patched with the exact keys of the top tokens before the final ranking.")),
    ("commvq", "CommVQ", "key_clustering",
     _desc("Position-free keys drawn from a small codebook, re-positioned, score the context.")),
    ("commvq_rope", "CommVQ", "pre_rope",
     _desc("A codebook of unrotated keys per head, rotated back for scoring.",
           relation="ClusterKV clusters rotated keys; ours are unrotated.")),
]


GAPS = {"kvtc_lowrank"}
FLAGGED = [pytest.param(*p, marks=_STD_STEP) if p[0] in GAPS else p for p in PORTS]


@pytest.mark.parametrize("case,paper,op,description", FLAGGED, ids=[p[0] for p in PORTS])
def test_an_uncredited_disguised_port_is_matched_to_its_paper_and_flagged(case, paper, op, description):
    assert_flagged_port(_src(case), paper, op, description)


@pytest.mark.parametrize("case,paper,op,description", PORTS, ids=[p[0] for p in PORTS])
def test_the_credited_twin_is_not_flagged(case, paper, op, description):
    assert_credited_twin_clean(_src(case), paper)


@pytest.mark.parametrize("case", sorted(p.name for p in DATA.iterdir() if (p / "method.py").exists()))
def test_renaming_every_identifier_changes_nothing(case):
    src = _src(case)
    assert_rename_proof(src, renamed(src))


# (case, what the description credits, the new operations it must not show, the papers it must not read as)
HONEST = [
    ("honest_pca_scores", "Loki (arXiv 2406.02542): approximate scores in a principal subspace.",
     {"transform_coded", "cross_layer_basis"}, ["KVTC", "xKV"]),
    ("honest_quantise_then_basis", "SpeCache (arXiv 2503.16163): attention over a low-bit copy.",
     {"transform_coded", "mixed_precision"}, ["KVTC", "MiKV"]),
    ("honest_recent_full_precision", "SpeCache (arXiv 2503.16163): attention over a low-bit copy.",
     {"mixed_precision"}, ["MiKV"]),
    ("honest_keys_values_basis", "Compactor (arXiv 2507.08143): leverage scores.", {"cross_layer_basis"}, ["xKV"]),
    ("honest_layer_drift", "MiniCache (arXiv 2405.14366): the drift from the layer below.", {"layer_reuse"},
     ["KVSharer"]),
    ("honest_filter_layer", "GemFilter (arXiv 2409.17422): one filter layer's selection.", {"layer_similarity"},
     ["KVSharer"]),
    ("honest_cluster_rotated", "ClusterKV (arXiv 2412.03213): keys clustered, the query against the centroids.",
     {"pre_rope"}, ["CommVQ"]),
]


@pytest.mark.parametrize("case,builds,absent,not_papers", HONEST, ids=[h[0] for h in HONEST])
def test_an_honest_method_with_a_neighbouring_operation_is_not_read_as_the_port(case, builds, absent, not_papers):
    assert_honest_neighbour(_src(case), builds, absent, not_papers)


def test_the_builds_on_arxiv_ids_of_the_honest_cases_are_the_index_s():
    for _, builds, _, _ in HONEST:
        name = builds.split(" (arXiv ")[0]
        assert _paper(name).arxiv in builds, name


def test_the_new_rules_are_in_the_index_and_the_rest_keep_a_reason():
    papers = {p.short_name: p for p in load_index().papers}
    for name in ("KVTC", "xKV", "KVSharer", "MiKV", "CommVQ"):
        assert papers[name].ops, name
    for name in ("KIVI", "NSA", "SqueezeAttention", "DynamicKV", "DMC", "ThinKV", "Retrieval Head"):
        assert not papers[name].ops, name
