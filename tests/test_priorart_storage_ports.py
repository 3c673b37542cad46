"""Rules in operations for the storage and architecture entries that agents port as token scores (heldout7's misses:
KVQuant, GEAR, PolarQuant, Palu, MiniCache, CHAI, InfiniPot, KVCompose, which the index said had no selection rule),
plus TurboQuant, and the reader operations they need: keys rotated back to their pre-RoPE form, keys through a fixed
random or orthogonal rotation before rounding, polar angles rounded, a low-rank factorisation of the quantisation
residual, one basis for several heads side by side, this layer's keys against another layer's kept ones, heads
grouped by their attention patterns, a kept set refilled chunk by chunk, each head's sorted scores combined rank by
rank; and the reader idioms that lost ThinK's, PolarQuant's and KVQuant's mechanisms (a per-channel energy ranked then
masking the channels; a quantised copy kept in a list; levels picked as the nearest of a few).

Every method under tests/data/storage_ports/ was written for these tests from the papers' mechanisms, as a porter
would disguise them (own names, helpers, loops or einsum, other idioms); none is a held-out or calibration bundle.
Each port has a credited twin; the honest methods use a neighbouring operation as a part of a rule of their own.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reviewbench.evidence.computation import computation
from reviewbench.priorart import load_index
from portcases import (assert_credited_twin_clean, assert_flagged_port, assert_honest_neighbour,
                       assert_rename_proof, desc as _desc, flags as _flags, paper as _paper)
from renaming import renamed

DATA = Path(__file__).resolve().parent / "data" / "storage_ports"


def _src(case: str) -> str:
    return (DATA / case / "method.py").read_text(encoding="utf-8")


# (case, paper, the operation that carries the paper's mechanism, the uncredited description: own words, a contrast)
PORTS = [
    ("kvquant", "KVQuant", "pre_rope",
     _desc("Keys are coded coarsely in their position-free frame; the closing queries rank on the coarse copy.",
           relation="Unlike SnapKV, no pooling is applied.")),
    ("kvquant_nuq", "KVQuant", "pre_rope",
     _desc("Each feature snaps to levels at its own quantiles; the last query reads the snapped keys.")),
    ("gear", "GEAR", "residual_low_rank",
     _desc("A coarse code plus a thin correction of its error stands in for the keys.",
           relation="KIVI stores a low-bit cache; we never store anything.")),
    ("gear_loop", "GEAR", "residual_low_rank",
     _desc("Integer codes patched by a rank-r fix, head by head.")),
    ("polarquant", "PolarQuant", "polar",
     _desc("Keys become a short tower of angles after a fixed turn; queries score the decoded keys.")),
    ("polarquant_complex", "PolarQuant", "polar",
     _desc("Feature pairs read as complex numbers with rounded phases.")),
    ("turboquant", "TurboQuant", "rotation",
     _desc("A fixed orthogonal mix spreads each key's energy before a uniform code.",
           relation="Unlike QJL, no sign bits are used.")),
    ("palu", "Palu", "grouped_head_basis",
     _desc("All heads' keys side by side are reduced to a few shared latents per token.",
           relation="Loki keeps one basis per head; ours is shared.")),
    ("palu_einops", "Palu", "grouped_head_basis",
     _desc("One low-dimensional code per token shared by the heads.")),
    ("minicache", "MiniCache", "layer_similarity",
     _desc("Tokens whose key direction turned most since the layer below are kept.")),
    ("minicache_dict", "MiniCache", "layer_similarity",
     _desc("Value directions that drifted most from the previous layer are kept.")),
    ("minicache_list", "MiniCache", "layer_similarity",  # the keys kept by appending to a list on the module
     _desc("Tokens whose keys moved most since the previous layer put them are kept.")),
    ("chai", "CHAI", "head_clustering",
     _desc("Heads whose attention rises and falls together share one pooled score.")),
    ("chai_kmeans", "CHAI", "head_clustering",
     _desc("Heads grouped by the shape of their attention score the context once per group.")),
    ("infinipot", "InfiniPot", "chunked_refill",
     _desc("A fixed reservoir filled slice by slice and cut back by the closing queries' attention.",
           relation="FINCH scores with the question; we use the closing queries.")),
    ("infinipot_while", "InfiniPot", "chunked_refill",
     _desc("A bounded buffer distilled by question attention plus novelty whenever it fills.")),
    ("kvcompose", "KVCompose", "rank_aligned",
     _desc("The heads' i-th choices form aligned slots scored by their average; a shared bar sizes the layer.")),
]


@pytest.mark.parametrize("case,paper,op,description", PORTS, ids=[p[0] for p in PORTS])
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
    ("honest_residual_bonus", "SnapKV (arXiv 2404.14469): the window attention.", {"residual_low_rank"}, ["GEAR"]),
    ("honest_sketch_rotation", "SnapKV (arXiv 2404.14469): the window attention.", {"rotation", "random"},
     ["TurboQuant", "PolarQuant", "Keyformer", "NACL"]),
    ("honest_prerope_norm", "K-norm (arXiv 2406.11430): the lowest-norm keys.", {"quantised_scores"}, ["KVQuant"]),
    ("honest_same_layer_drift", "TOVA (arXiv 2401.06104): the last query's attention.", {"layer_similarity"},
     ["MiniCache"]),
    ("honest_head_entropy", "SnapKV (arXiv 2404.14469): the window attention.", {"head_clustering"}, ["CHAI"]),
    ("honest_chunked_scan", "SnapKV (arXiv 2404.14469): the window attention.", {"chunked_refill", "block_scores"},
     ["InfiniPot", "ChunkKV", "WindowKV"]),
    ("honest_sorted_coverage", "DBudgetKV (arXiv 2502.16886): the coverage budget.", {"rank_aligned"},
     ["KVCompose"]),
    ("honest_stacked_pca", "Loki (arXiv 2406.02542): approximate scores in a principal subspace.",
     {"grouped_head_basis"}, ["Palu"]),
    ("honest_channel_norms", "SnapKV (arXiv 2404.14469): the window attention.", {"channel_selection", "key_norm"},
     ["ThinK"]),
]


@pytest.mark.parametrize("case,builds,absent,not_papers", HONEST, ids=[h[0] for h in HONEST])
def test_an_honest_method_with_a_neighbouring_operation_is_not_read_as_the_port(case, builds, absent, not_papers):
    assert_honest_neighbour(_src(case), builds, absent, not_papers)


def test_the_builds_on_arxiv_ids_of_the_honest_cases_are_the_index_s():
    for _, builds, _, _ in HONEST:
        name = builds.split(" (arXiv ")[0]
        assert _paper(name).arxiv in builds


# --- the reader's idioms ------------------------------------------------------------------------------------------

_HEAD = '''import math

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView, rotate_half


class M(EvictionMethod):
    query_window = 8

    def select(self, view: LayerView) -> Keep:
'''


def _method(body: str) -> str:
    return _HEAD + "\n".join("        " + line for line in body.strip("\n").splitlines()) + "\n"


# ThinK's channel selection: a per-channel statistic of the queries and keys (over the tokens), its top channels, the
# attention on those channels only; in the idioms a porter may choose
CHANNELS = [
    """q = view.group(view.queries.float(), "mean")
k = view.keys.float()
energy = q.pow(2).mean(dim=-2) * k.pow(2).mean(dim=-2)
top = energy.topk(16, dim=-1).indices
mask = torch.zeros_like(energy).scatter_(-1, top, 1.0)
s = torch.einsum("hnd,htd->hnt", q * mask[:, None], k).softmax(-1).sum(1)
return Keep.from_topk(s, view.budget, view.valid)""",
    """q = view.group(view.queries.float(), "mean")
k = view.keys.float()
joint = q.norm(dim=1) * k.norm(dim=1)
keep = joint.topk(16, dim=-1).indices
qs = torch.gather(q, 2, keep[:, None].expand(-1, q.shape[1], -1))
ks = torch.gather(k, 2, keep[:, None].expand(-1, k.shape[1], -1))
s = torch.softmax(qs @ ks.transpose(1, 2), dim=-1).sum(1)
return Keep.from_topk(s, view.budget, view.valid)""",
    """q = view.group(view.queries.float(), "mean")
k = view.keys.float()
score = q.abs().sum(-2) * k.abs().sum(-2)
idx = score.argsort(dim=-1, descending=True)[:, :16]
ks = k.masked_fill(torch.ones_like(score, dtype=torch.bool).scatter(-1, idx, False)[:, None], 0.0)
s = torch.softmax(torch.matmul(q, ks.transpose(-1, -2)), dim=-1).sum(1)
return Keep.from_topk(s, view.budget, view.valid)""",
]


@pytest.mark.parametrize("body", CHANNELS)
def test_a_per_channel_energy_ranked_then_selecting_channels_is_channel_selection(body):
    feats = computation(_method(body)).features
    assert "channel_selection" in feats and "key_norm" not in feats, feats
    ev, flags = _flags(_method(body), _desc("A few channels rank the context."))
    assert flags and "ThinK" in flags[0].explanation


# Quantisers a porter may write: an integer cast by method, a cast to a wide integer type, the nearest of a few levels
QUANTISERS = [
    "codes = ((k - lo) / step).int().float() * step + lo",
    "codes = ((k - lo) / step).long().float() * step + lo",
    "codes = ((k - lo) / step).to(torch.int32).float() * step + lo",
    "codes = torch.gather(grid.expand(*k.shape, 4), -1, (k[..., None] - grid).abs().argmin(-1)[..., None])[..., 0]",
    "codes = grid[..., (k[..., None] - grid).pow(2).argmin(-1)]",
]


@pytest.mark.parametrize("codes", QUANTISERS)
def test_a_low_bit_copy_is_read_in_more_quantiser_idioms(codes):
    body = f"""k = view.keys.float()
lo, hi = k.amin(dim=1, keepdim=True), k.amax(dim=1, keepdim=True)
step = (hi - lo).clamp_min(1e-6) / 3
grid = torch.linspace(-2.0, 2.0, 4)
{codes}
q = view.group(view.queries.float(), "mean")
s = torch.einsum("hnd,htd->hnt", q, codes).softmax(-1).sum(1)
return Keep.from_topk(s, view.budget, view.valid)"""
    feats = computation(_method(body)).features
    assert {"quantised", "quantised_scores"} <= set(feats), feats


def test_k_means_assignment_is_no_quantiser():
    """The nearest of a few *vectors* (centroids: distances summed over the channels) is clustering, not levels."""
    body = """k = view.keys.float()
c = k[:, :8]
assign = ((k[:, :, None] - c[:, None]) ** 2).sum(-1).argmin(-1)
q = view.group(view.queries.float(), "mean")
s = torch.einsum("hnd,htd->hnt", q, k).softmax(-1).sum(1)
return Keep.from_topk(s + 0 * assign, view.budget, view.valid)"""
    assert not {"quantised", "quantised_scores"} & set(computation(_method(body)).features)


# A fixed rotation before rounding: the orthogonal factor of Gaussian draws, a Hadamard matrix, an orthogonal
# initialiser
ROTATIONS = [
    "rot, _ = torch.linalg.qr(torch.randn(d, d))",
    "rot = torch.tensor(hadamard(d), dtype=torch.float32) / math.sqrt(d)",
    "rot = torch.nn.init.orthogonal_(torch.empty(d, d))",
]


@pytest.mark.parametrize("rot", ROTATIONS)
def test_keys_rotated_then_rounded_is_a_rotation_and_the_queries_score_the_copy(rot):
    body = f"""d = view.keys.shape[-1]
{rot}
y = view.keys.float() @ rot
scale = y.abs().amax(-1, keepdim=True) / 3
back = torch.round(y / scale) * scale @ rot.T
q = view.group(view.queries.float(), "mean")
s = torch.einsum("hnd,htd->hnt", q, back).softmax(-1).sum(1)
return Keep.from_topk(s, view.budget, view.valid)"""
    feats = computation(_method(body)).features
    assert {"rotation", "quantised_scores"} <= set(feats) and "random" not in feats, feats
    assert not {"leverage", "low_rank_scores"} & set(feats)


def test_a_random_rotation_without_rounding_is_no_rotation_feature():
    body = """d = view.keys.shape[-1]
rot, _ = torch.linalg.qr(torch.randn(d, d))
y = view.keys.float() @ rot
q = view.group(view.queries.float(), "mean") @ rot
s = torch.einsum("hnd,htd->hnt", q, y).softmax(-1).sum(1)
return Keep.from_topk(s, view.budget, view.valid)"""
    assert not {"rotation", "quantised", "random"} & set(computation(_method(body)).features)


# The keys' rotary embedding undone: the view's rotate with negated positions, the model's Rope, by hand
PRE_ROPE = [
    "plain = torch.stack([view.rotate(view.keys[h], -view.positions[h]) for h in range(view.n_kv_heads)])",
    "plain = view.model.rope(view.layer).apply(view.keys, view.positions[0] * -1)",
    "cos, sin = view.model.rope(view.layer).angles(view.positions[0])\n"
    "plain = view.keys * cos - rotate_half(view.keys) * sin",
    "undo = True\nplain = view.rotate(view.keys, -view.positions[0] if undo else view.positions[0])",
]


@pytest.mark.parametrize("unrotate", PRE_ROPE)
def test_keys_rotated_back_are_pre_rope(unrotate):
    body = f"""{unrotate}
return Keep.from_topk(-plain.norm(dim=-1), view.budget, view.valid)"""
    assert "pre_rope" in computation(_method(body)).features


def test_queries_rotated_back_are_not_pre_rope_keys():
    """Expected Attention's pre-RoPE queries: not the keys' frame."""
    body = """q = view.rotate(view.queries.float(), -view.query_positions)
s = torch.einsum("hnd,htd->hnt", view.group(q, "mean"), view.keys.float()).softmax(-1).sum(1)
return Keep.from_topk(s, view.budget, view.valid)"""
    assert "pre_rope" not in computation(_method(body)).features


# Heads grouped by their attention: correlation, cosine of rows, unit rows multiplied, distances, k-means
HEADS = [
    "sim = torch.corrcoef(a)",
    "sim = F.cosine_similarity(a[:, None], a[None], dim=-1)",
    "u = F.normalize(a, dim=-1)\nsim = u @ u.T",
    "sim = -torch.cdist(a, a)",
]


@pytest.mark.parametrize("sim", HEADS)
def test_attention_patterns_compared_between_heads_are_head_clustering(sim):
    body = f"""a = view.attention(reduce="sum")
{sim}
group = (sim > 0.9).float()
shared = group @ a / group.sum(-1, keepdim=True)
return Keep.from_topk(view.group(shared, "mean"), view.budget, view.valid)"""
    feats = computation(_method(body)).features
    assert "head_clustering" in feats and not {"attention_propagation", "attention_threshold"} & set(feats), feats


def test_attention_composed_with_attention_stays_a_propagation():
    body = """a = view.attention()
walk = torch.bmm(a, a)
return Keep.from_topk(view.group(walk.sum(1), "mean"), view.budget, view.valid)"""
    feats = computation(_method(body)).features
    assert "attention_propagation" in feats and "head_clustering" not in feats


# Another layer's keys: kept on the module before (read first, stored after), kept by layer index and read one below
LAYERS = [
    ("    def setup(self, model):\n        self.prev = None\n",
     """k = view.keys.float()
prev, self.prev = self.prev, k
if prev is None:
    return Keep.from_topk(view.positions.float(), view.budget, view.valid)
d = torch.einsum("htd,htd->ht", F.normalize(k, dim=-1), F.normalize(prev, dim=-1))
return Keep.from_topk(-d, view.budget, view.valid)"""),
    ("    def setup(self, model):\n        self.by_layer = {}\n",
     """k = view.keys.float()
self.by_layer[view.layer] = k
below = self.by_layer[view.layer - 1]
gap = torch.linalg.norm(k - below, dim=-1)
return Keep.from_topk(gap, view.budget, view.valid)"""),
]


@pytest.mark.parametrize("setup,body", LAYERS)
def test_this_layer_against_another_layer_s_kept_keys_is_layer_similarity(setup, body):
    src = _method(body).replace("    query_window = 8\n", "    query_window = 8\n\n" + setup)
    feats = computation(src).features
    assert "layer_similarity" in feats and "key_similarity" not in feats, feats


def test_the_index_keeps_a_reason_for_the_entries_still_without_a_rule():
    papers = {p.short_name: p for p in load_index().papers}
    for name in ("KVQuant", "GEAR", "PolarQuant", "TurboQuant", "Palu", "MiniCache", "CHAI", "InfiniPot",
                 "KVCompose"):
        assert papers[name].ops, name
    for name in ("KIVI", "NSA", "SqueezeAttention", "DynamicKV"):  # CommVQ, KVSharer: test_priorart_share_ports
        assert not papers[name].ops, name


@pytest.mark.parametrize("norms", [
    "-view.keys.float().reshape(-1, view.keys.shape[-1]).norm(dim=1).view(view.n_kv_heads, -1)",
    "-torch.stack([view.keys[h].float().norm(dim=1) for h in range(view.n_kv_heads)])",
    "-view.keys.float().pow(2).sum(dim=-1)",
])
def test_a_key_norm_over_the_channels_stays_a_key_norm(norms):
    """Axis 1 is the channels of a reshaped or one-head tensor: no per-channel energy there."""
    feats = computation(_method(f"return Keep.from_topk({norms}, view.budget, view.valid)")).features
    assert "key_norm" in feats and "channel_selection" not in feats
