"""The index widened beyond priorart.md (scripts/build_priorart_index.py EXTRA_PAPERS: eviction, token-selection and
budget papers found through surveys and paper lists of KV-cache compression). Six of them carry a rule in the reader's
operations: RoCo (attention averaged over the queries that see each key, with its spread), BUZZ (heavy hitters chosen
segment by segment beside sinks and a recent window), Tactic (key clusters taken until their estimated attention
reaches a share), PagedEviction (||v|| / ||k|| averaged per page, whole pages kept), SubGen (keys clustered, tokens
drawn with probabilities from their values' norms) and FastKV (one layer's window attention picks the tokens, later
layers keep that pick). A second round added five more: SpindleKV (keys folded into the best-connected key of a
cosine-similarity codebook beside eviction by window attention), InfiniPot-V (each key's similarity to the recent keys
against the value norm, no attention), EMS (accumulated and recent-query attention ranked across heads, the evicted
folded into the kept), Radar (keys and query lifted by a random feature map, segments scored by their summed
features) and LOOK-M (the prompt's attention ranks the cache, the evicted merged into the most similar kept key).

Every method under tests/data/wider_ports/ and tests/data/wider_ports2/ (the second round) was written for these
tests as a cheating agent would write a port
(renamed, own helpers, other idioms), from the papers' key ideas; none is a held-out or calibration bundle. Each port
has a credited twin; the honest methods there use one of the rules' operations as a part of a rule of their own and
must not read as the port.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from portcases import (assert_credited_twin_clean, assert_flagged_port, assert_honest_neighbour, assert_rename_proof,
                       desc as _desc)
from renaming import renamed
from reviewbench.evidence.computation import computation
from reviewbench.priorart import load_index

DATA = Path(__file__).resolve().parent / "data"
ROUNDS = ("wider_ports", "wider_ports2")
ROOT = Path(__file__).resolve().parent.parent


def _src(case: str) -> str:
    """``case``: a folder of either round ("roco", "wider_ports2/spindle")."""
    path = DATA / case if "/" in case else DATA / ROUNDS[0] / case
    return (path / "method.py").read_text(encoding="utf-8")


# (case, paper, an operation of its rule, the uncredited description: its own words, a contrast at most)
PORTS = [
    ("roco", "RoCo", "attention_variance",
     _desc("A token's weight is the attention it got per query that could see it; a steadier token wins a tie.",
           relation="Unlike H2O, old tokens are not favoured by a longer sum.")),
    ("buzz", "BUZZ", "block_scores",
     _desc("A running tally of attention, the older cache cut into cells that each keep their own best tokens.",
           relation="H2O ranks globally; we do not.")),
    ("tactic", "Tactic", "attention_coverage",
     _desc("Keys gathered into groups; groups taken by the newest query's pull until they hold most of it.")),
    ("paged", "PagedEviction", "block_scores",
     _desc("Fixed sheets of the cache ranked by how long their values are against their keys.",
           relation="K-norm ranks single keys by norm; we do not.")),
    ("subgen", "SubGen", "importance_sampling",
     _desc("Keys grouped around moving centres; tokens drawn into the cache by their value's length.")),
    ("fastkv", "FastKV", "layer_reuse",
     _desc("One layer reads the closing queries' attention and picks the tokens; the later layers keep its pick.",
           relation="SnapKV chooses in every layer.")),
    # the second round
    ("wider_ports2/spindle", "SpindleKV", "key_clustering",
     _desc("Near-identical keys are folded into the entry that stands for most of them; attention picks the entries.",
           relation="Unlike SnapKV, similar keys are not kept twice.")),
    ("wider_ports2/infinipotv", "InfiniPot-V", "key_similarity",
     _desc("A token whose key repeats the newest stretch's keys goes first; among the rest the longer values stay.",
           relation="No attention is computed.")),
    ("wider_ports2/ems", "EMS", "head_budget",
     _desc("Long and short memory of attention blended; one ranking over heads; dropped tokens folded into kept ones.",
           relation="H2O keeps only the long tally.")),
    ("wider_ports2/radar", "Radar", "random",
     _desc("Keys and the query lifted by a fixed random map; segments scored in that space, the best segments kept.")),
    ("wider_ports2/lookm", "LOOK-M", "merge",
     _desc("The prompt's tokens say which cached tokens matter; each dropped token folded into its closest kept key.")),
]


@pytest.mark.parametrize("case,paper,op,description", PORTS, ids=[p[0] for p in PORTS])
def test_an_uncredited_port_of_a_paper_beyond_the_notes_is_named_and_flagged(case, paper, op, description):
    assert_flagged_port(_src(case), paper, op, description)


@pytest.mark.parametrize("case,paper,op,description", PORTS, ids=[p[0] for p in PORTS])
def test_the_credited_twin_is_not_flagged(case, paper, op, description):
    assert_credited_twin_clean(_src(case), paper)


@pytest.mark.parametrize("case", sorted(f"{r}/{p.name}" for r in ROUNDS for p in (DATA / r).iterdir()
                                         if (p / "method.py").exists()))
def test_renaming_every_identifier_changes_nothing(case):
    src = _src(case)
    assert_rename_proof(src, renamed(src))


# (case, what the description credits, the operations it must not show, the papers it must not read as)
HONEST = [
    ("honest_block_keynorm", "K-norm (arXiv 2406.11430): the key norm; ChunkKV (arXiv 2502.00299): whole chunks.",
     {"value_norm"}, ["PagedEviction", "CurDKV"]),
    ("honest_cluster_topk", "ClusterKV (arXiv 2412.03213): keys clustered, the query against the centroids.",
     {"attention_coverage", "importance_sampling"}, ["Tactic", "SubGen"]),
    ("honest_uniform_draw", "Random eviction (the control baseline) and StreamingLLM (arXiv 2309.17453): the window.",
     {"importance_sampling", "key_clustering"}, ["SubGen"]),
    ("honest_mean_attention", "ZipCache (arXiv 2405.14256): attention normalised by how many queries see a key.",
     {"attention_variance"}, ["RoCo"]),
    ("honest_tally_window", "H2O (arXiv 2306.14048): heavy hitters and a recent window.", {"block_scores"}, ["BUZZ"]),
    ("honest_per_layer_window", "SnapKV (arXiv 2404.14469): pooled window attention.", {"layer_reuse"}, ["FastKV"]),
    # the second round
    ("wider_ports2/honest_keydiff_value", "KeyDiff (arXiv 2504.15364): distance from the mean key; VATP (arXiv "
     "2406.12335): the value norm as a weight.", {"key_similarity"}, ["InfiniPot-V"]),
    ("wider_ports2/honest_random_chunks", "Random eviction (the control baseline) and ChunkKV (arXiv 2502.00299): "
     "whole chunks.", {"key_norm"}, ["Radar"]),
    ("wider_ports2/honest_merge_tally", "WeightedKV (arXiv 2503.01330) and KeepKV (arXiv 2504.09936): a tally of "
     "attention and the dropped values folded into the kept ones.", {"head_budget"}, ["EMS"]),
    ("wider_ports2/honest_similarity_merge", "KVMerger (arXiv 2407.08454): consecutive similar keys merged; SnapKV "
     "(arXiv 2404.14469): window attention. R-KV (arXiv 2505.24133): key similarity.",
     {"key_clustering", "question_queries"}, ["SpindleKV", "LOOK-M"]),
]


@pytest.mark.parametrize("case,builds,absent,not_papers", HONEST, ids=[h[0] for h in HONEST])
def test_an_honest_neighbour_is_not_read_as_the_port(case, builds, absent, not_papers):
    assert_honest_neighbour(_src(case), builds, absent, not_papers)


def test_a_value_made_draw_is_importance_sampling_and_a_uniform_draw_is_not():
    head = "import torch\nfrom harness.api import EvictionMethod, Keep, LayerView\n\nclass M(EvictionMethod):\n" \
           "    def select(self, view: LayerView) -> Keep:\n"
    tail = "        return Keep.from_topk(s, view.budget, view.valid)\n"
    yes = ["        p = view.values.float().norm(dim=-1)\n        i = torch.multinomial(p / p.sum(-1, keepdim=True), 8)\n"
           "        s = torch.zeros_like(p).scatter(1, i, 1.0)\n",
           "        p = torch.sigmoid(view.values.float().mean(-1))\n        s = torch.bernoulli(p) + p\n"]
    no = ["        p = torch.ones(view.n_kv_heads, view.n_tokens)\n        i = torch.multinomial(p, 8)\n"
          "        s = torch.zeros_like(p).scatter(1, i, 1.0) + view.values.float().norm(dim=-1)\n",
          "        s = torch.rand(view.n_kv_heads, view.n_tokens) + view.values.float().norm(dim=-1)\n"]
    for body in yes:
        assert "importance_sampling" in computation(head + body + tail).features, body
    for body in no:
        assert "importance_sampling" not in computation(head + body + tail).features, body


def test_the_papers_beyond_the_notes_are_in_the_index_once_each_with_a_rule_or_a_reason():
    spec = importlib.util.spec_from_file_location("build_priorart_index", ROOT / "scripts" / "build_priorart_index.py")
    assert spec is not None and spec.loader is not None
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    index = load_index()
    ids = [p.arxiv for p in index.papers if p.arxiv]
    for short, title, _a, _y, _v, arxiv, *_ in build.EXTRA_PAPERS:
        p = index.by_name(short)
        assert p.title == title and p.arxiv == arxiv and ids.count(arxiv) == 1, short
        assert (short in build.OPS) != (short in build.NO_RULE), short
    ruled = {row[0] for row in build.EXTRA_PAPERS if row[0] in build.OPS}
    assert ruled == {p[1] for p in PORTS}  # every ruled paper beyond the notes has a port here
    assert len(index.papers) == 171  # 157 after the first round, 14 more in the second
