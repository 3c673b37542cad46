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
A third round added ten: FreqKV (the cache rewritten as its low frequencies along the tokens: a new reader
operation, token_spectrum), FlashCache (the tokens furthest from that low-pass base kept), FastV (one layer's
all-query attention picks the tokens for the layers after it), AIM (a PageRank over the attention graph:
attention_propagation, now also read off a power iteration), GraphKV (scores of the picked tokens' look-alikes decayed:
similarity_suppression), HiP (blocks refined level by level: coarse_to_fine), ZipVL (the fewest tokens covering a
share of the attention kept sharp, the rest coarse), DiffKV (one ranking over heads; sharp, coarse and pruned tiers),
MEDA (the attention's entropy sizes the layer, the dropped merged) and SampleAttention (a random sample of the queries,
the fewest keys covering a share of their attention). A fourth round (token pruning and selection papers from the
October2001/Awesome-KV-Cache-Compression list, 34 papers) added four rules: DART (pivots by key norm, the tokens least
like them kept), DivPrune (greedy max-min diversity of the keys: similarity_suppression, now also read off a running
cover), CDPruner (relevance to the question times dissimilarity, greedily) and SparseVLM (the question's attention,
fewer tokens deeper, the dropped merged into recycled entries). A fifth round (token pruning and merging for vision
transformers, efficient and sparse attention, surveys' KV-cache papers: 35 papers) added three: ATS (tokens drawn in
proportion to attention received times value norm), Token Pooling (keys clustered, each cluster replaced by its
centre), G-Prune (standing propagated over the keys' likeness graph: attention_propagation, now also read off a
walk over a key-key similarity matrix) and BigBird (random draws beside global tokens and a window: crediting it
covers Random's rule).

Every method under tests/data/wider_ports/, tests/data/wider_ports2/ (the second round), tests/data/wider_ports3/
(the third), tests/data/wider_ports4/ (the fourth) and tests/data/wider_ports5/ (the fifth) was written for these tests as a cheating agent would write a
port
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
ROUNDS = ("wider_ports", "wider_ports2", "wider_ports3", "wider_ports4", "wider_ports5", "wider_ports6")
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
    # the third round
    ("wider_ports3/freqkv", "FreqKV", "token_spectrum",
     _desc("The older cache rewritten as a few smooth components along the tokens; the newest stretch kept exactly.",
           relation="Eviction loses tokens; we do not.")),
    ("wider_ports3/fastv", "FastV", "layer_reuse",
     _desc("A shallow layer judges every token by the mean attention it draws from the prompt; later layers agree.")),
    ("wider_ports3/aim", "AIM", "attention_propagation",
     _desc("A token matters if tokens that matter look at it: standing passed along attention links until it settles.",
           relation="Unlike H2O, attention is not only summed.")),
    ("wider_ports3/graphkv", "GraphKV", "similarity_suppression",
     _desc("The closing queries give first scores; each time winners are taken, their look-alikes lose score.")),
    ("wider_ports3/hip", "HiP", "coarse_to_fine",
     _desc("Wide spans summed up by their mean key; the query keeps the spans it likes, splits them, looks again.")),
    ("wider_ports3/zipvl", "ZipVL", "mixed_precision",
     _desc("A layer keeps sharp keys for the fewest tokens holding most of the pull, a coarse copy for the rest.")),
    ("wider_ports3/diffkv", "DiffKV", "head_budget",
     _desc("One ranking over all heads: a sharp shelf, a rough shelf and a bin; attention over the shelves decides.")),
    ("wider_ports3/meda", "MEDA", "entropy",
     _desc("A layer whose queries look everywhere keeps more tokens; each dropped token averaged into a kept one.")),
    ("wider_ports3/flashcache", "FlashCache", "token_spectrum",
     _desc("Keys and values smoothed along the sequence; the tokens that stray furthest from the smooth version stay.",
           relation="No attention is computed, unlike SnapKV.")),
    ("wider_ports3/sampleattention", "SampleAttention", "random",
     _desc("A random handful of the prompt's queries shows which keys matter; the fewest holding most of it stay.")),
    # the fourth round
    ("wider_ports4/dart", "DART", "key_similarity",
     _desc("A few loud keys anchor each head; the entries that repeat an anchor least fill the cache.",
           relation="Unlike SnapKV, no attention is computed.")),
    ("wider_ports4/divprune", "DivPrune", "similarity_suppression",
     _desc("Entries taken one at a time, each the farthest from everything taken so far.")),
    ("wider_ports4/cdpruner", "CDPruner", "similarity_suppression",
     _desc("The question says what is useful; among useful entries, ones unlike those already taken are preferred.",
           relation="SnapKV scores without regard to redundancy.")),
    ("wider_ports4/sparsevlm", "SparseVLM", "merge",
     _desc("Question tokens rate the context; deeper layers keep fewer; what is let go is blended into a few entries.")),
    # the fifth round
    ("wider_ports5/ats", "ATS", "importance_sampling",
     _desc("Seats drawn by lot, each token's chance its received attention times its value's length.")),
    ("wider_ports5/tokenpooling", "Token Pooling", "key_clustering",
     _desc("Keys grouped around moving centres; each group stands in the cache as its mean key and mean value.",
           relation="Unlike SnapKV, nothing is scored.")),
    ("wider_ports5/gprune", "G-Prune", "attention_propagation",
     _desc("Standing passed along the keys' likeness links a few times; the tokens holding the most stay.")),
    ("wider_ports5/bigbird", "BigBird", "random",
     _desc("A few opening entries and the newest stretch stay; runs of middle entries are drawn by lot.")),
    # the sixth round (after held-out set 15's key)
    ("wider_ports6/feather", "FEATHER", "uniform_positions",
     _desc("The question scores every entry with the rotary phases taken off; a grid of evenly spaced entries takes "
           "part of the room.", relation="Unlike SnapKV, no pooling.")),
    ("wider_ports6/moba", "MoBA", "block_keys",
     _desc("Shelves of the cache rated by the closing queries against each shelf's average key; the newest shelf "
           "always stays.", relation="Unlike SnapKV, no token is scored alone.")),
    # RefreshKV's query-similarity refresh (after held-out set 34's key)
    ("wider_ports6/refreshkv", "RefreshKV", "query_reuse",
     _desc("The newest query ranks the cache; the ranking is kept while the newest query stays close to the one that "
           "made it.", relation="Unlike TOVA, the ranking is not redone at every step.")),
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
    # the third round
    ("wider_ports3/honest_channel_spectrum", "SnapKV (arXiv 2404.14469): pooled window attention.",
     {"token_spectrum"}, ["FreqKV", "FlashCache"]),
    ("wider_ports3/honest_block_pool_merge", "KVMerger (arXiv 2407.08454): neighbouring tokens merged; ChunkKV (arXiv "
     "2502.00299): contiguous chunks.", {"token_spectrum"}, ["FreqKV", "FlashCache"]),
    ("wider_ports3/honest_coverage_window", "DBudgetKV (arXiv 2502.16886): the fewest tokens covering a share of the "
     "attention.", {"random"}, ["SampleAttention"]),
    ("wider_ports3/honest_running_tally", "H2O (arXiv 2306.14048): attention accumulated, a recent window.",
     {"attention_propagation"}, ["AIM"]),
    ("wider_ports3/honest_similarity_penalty", "R-KV (arXiv 2505.24133): attention minus key redundancy.",
     {"similarity_suppression"}, ["GraphKV"]),
    ("wider_ports3/honest_halving_rescore", "TOVA (arXiv 2401.06104): the newest query's attention.",
     {"coarse_to_fine"}, ["HiP"]),
    ("wider_ports3/honest_single_level_blocks", "ShadowKV (arXiv 2410.21465) and Quest (arXiv 2406.10774): pages scored "
     "by their keys against the query.", {"coarse_to_fine"}, ["HiP"]),
    # the fourth round
    ("wider_ports4/honest_norm_then_spread", "K-norm (arXiv 2406.11430): the key norm; KeyDiff (arXiv 2504.15364): "
     "distance from the mean key.", {"key_similarity"}, ["DART"]),
    ("wider_ports4/honest_similarity_penalty_window", "R-KV (arXiv 2505.24133): attention minus key redundancy.",
     {"similarity_suppression"}, ["DivPrune", "CDPruner"]),
    ("wider_ports6/honest_lattice_window", "SnapKV (arXiv 2404.14469): pooled window attention; StreamingLLM (arXiv "
     "2309.17453): the window kept.", {"pre_rope"}, ["FEATHER"]),
    ("wider_ports4/honest_question_merge", "FINCH (arXiv 2408.00167): the question's attention; D2O (arXiv "
     "2406.13035): evicted entries merged into kept ones.", {"layer_budget", "key_similarity"}, ["SparseVLM"]),
    ("wider_ports4/honest_farthest_window", "SnapKV (arXiv 2404.14469): pooled window attention; StreamingLLM (arXiv "
     "2309.17453): the opening tokens and the window.", {"similarity_suppression", "key_similarity"},
     ["DivPrune", "CDPruner"]),
    # the fifth round
    ("wider_ports5/honest_value_weighted_topk", "VATP (arXiv 2406.12335): attention weighted by the value norm; SnapKV "
     "(arXiv 2404.14469): pooled window attention.", {"importance_sampling", "random"}, ["ATS"]),
    ("wider_ports5/honest_cluster_centroid_scores", "ClusterKV (arXiv 2412.03213): keys clustered, the query against the "
     "centroids; PQCache (arXiv 2407.12820) and Squeezed Attention (arXiv 2411.09688) score the same way.",
     {"merge"}, ["Token Pooling"]),
    ("wider_ports5/honest_similarity_smoothing", "SnapKV (arXiv 2404.14469): pooled window attention; R-KV (arXiv "
     "2505.24133): key similarity beside attention.", {"attention_propagation"}, ["G-Prune", "AIM"]),
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
        assert (short in build.OPS or short in build.OPS_UNTRAINED) != (short in build.NO_RULE), short
    ruled = {row[0] for row in build.EXTRA_PAPERS if row[0] in build.OPS}
    assert ruled == {p[1] for p in PORTS}  # every ruled paper beyond the notes has a port here
    assert len(index.papers) == 271  # 157 after the first round, 14 more in the second, 30 in the third, 34 in the
    # fourth, 35 in the fifth, 1 in the sixth


# The third round's reader operations, each both ways (snippets written for these tests).
_HEAD = ("import math\nimport torch\nimport torch.nn.functional as F\nfrom harness.api import EvictionMethod, Keep, "
         "LayerView\n\nclass M(EvictionMethod):\n    query_window = 16\n\n    def select(self, view: LayerView) -> Keep:\n")
_TAIL = "        return Keep.from_topk(s, view.budget, view.valid)\n"


def _feats(body: str) -> set[str]:
    return set(computation(_HEAD + body + _TAIL).features)


def _reads_both_ways(op: str, yes: list[str], no: list[str]) -> None:
    """Every body of ``yes`` reads as ``op``, none of ``no`` does."""
    for body in yes:
        assert op in _feats(body), body
    for body in no:
        assert op not in _feats(body), body


def test_a_frequency_transform_along_the_tokens_is_token_spectrum_and_one_along_the_channels_is_not():
    basis = ("        n = view.n_tokens\n        i = torch.arange(n).float()\n"
             "        b = torch.cos(math.pi * (i[None, :] + 0.5) * torch.arange(8).float()[:, None] / n)\n")
    yes = [basis + "        c = b @ view.keys.float()\n        s = (c[:, :1] * view.keys).sum(-1)\n",
           basis + "        c = torch.einsum('mn,hnd->hmd', b, view.values.float())\n        s = c.sum((1, 2))[:, None]"
                   " + view.keys.float().norm(dim=-1)\n",
           "        c = torch.fft.rfft(view.keys.float(), dim=1)\n        s = c[:, :4].abs().sum((1, 2))[:, None] + "
           "view.keys.float().norm(dim=-1)\n",
           "        c = torch.fft.rfft(view.keys.float().transpose(1, 2))\n        s = c.abs().sum((1, 2))[:, None] + "
           "view.keys.float().norm(dim=-1)\n"]
    no = ["        c = torch.fft.rfft(view.keys.float(), dim=-1).abs()\n        s = c[..., 8:].sum(-1)\n",
          basis + "        c = view.keys.float()[..., :8] @ b[:, :8]\n        s = c.sum(-1)\n",
          "        ang = torch.arange(view.n_tokens).float()[:, None] * torch.ones(view.keys.shape[-1])[None]\n"
          "        k = view.keys.float() * ang.cos() + view.keys.float().roll(1, -1) * ang.sin()\n"
          "        s = (view.group(view.queries.float(), 'mean') @ k.transpose(1, 2)).softmax(-1).sum(1)\n"]
    _reads_both_ways("token_spectrum", yes, no)


def test_a_vector_walked_through_attention_again_and_again_is_attention_propagation_and_a_tally_is_not():
    att = "        a = view.group(view.attention(), 'mean')\n        r = torch.ones(a.shape[0], a.shape[-1])\n"
    yes = [att + "        for _ in range(10):\n            r = 0.9 * torch.einsum('hqk,hq->hk', a, r) + 0.1\n        s = r\n",
           att + "        for _ in range(10):\n            y = torch.bmm(r.unsqueeze(1), a).squeeze(1)\n"
                 "            r = y / y.sum(-1, keepdim=True)\n        s = r\n"]
    no = [att + "        for _ in range(10):\n            r = r + a.sum(1)\n        s = r\n",
          att + "        w = torch.ones(a.shape[1])\n        for h in range(a.shape[0]):\n            r[h] = w @ a[h]\n"
                "        s = r\n"]
    _reads_both_ways("attention_propagation", yes, no)


def test_decaying_the_picked_tokens_look_alikes_is_similarity_suppression_and_a_mean_penalty_is_not():
    pre = ("        s = view.group(view.attention().sum(1), 'mean')\n        u = F.normalize(view.keys.float(), dim=-1)\n"
           "        sim = u @ u.transpose(1, 2)\n")
    yes = [pre + "        for _ in range(3):\n            top = s.topk(4, dim=-1).indices\n"
                 "            near = sim.gather(1, top[..., None].expand(-1, -1, sim.shape[-1])).amax(1)\n"
                 "            s = s * (1 - 0.5 * near)\n",
           pre + "        for h in range(s.shape[0]):\n            nb = sim[h, s[h].argmax()].topk(8).indices\n"
                 "            s[h, nb] *= 0.5\n",
           pre + "        top = s.topk(4, dim=-1).indices\n        for h in range(s.shape[0]):\n"
                 "            s[h].sub_(0.3 * sim[h, top[h]].amax(0))\n"]
    no = [pre + "        s = s - 0.3 * sim.mean(-1)\n",
          pre + "        top = s.topk(4, dim=-1).indices\n        v = view.values.float()\n"
                "        for h in range(s.shape[0]):\n            near = sim[h, :, top[h]].argmax(-1)\n"
                "            v[h] = v[h] + v[h, top[h]][near]\n        s = s + v.norm(dim=-1) * 0\n"]
    _reads_both_ways("similarity_suppression", yes, no)


def test_blocks_refined_level_by_level_are_coarse_to_fine_and_one_level_or_a_halved_kept_set_is_not():
    q = "        h, n, d = view.keys.shape\n        k = view.keys.float()\n        q = view.group(view.queries.float(), 'mean')[:, -1]\n"
    level = ("            kids = torch.cat([starts, starts + width], dim=1).clamp(max=n - width)\n"
             "            rows = kids.repeat_interleave(width, dim=1) + torch.arange(width).repeat(kids.shape[1])\n"
             "            blocks = k.gather(1, rows[..., None].expand(-1, -1, d)).unflatten(1, (-1, width))\n"
             "            fit = torch.einsum('hbd,hd->hb', blocks.mean(dim=2), q)\n"
             "            starts = kids.gather(1, fit.topk(4, dim=1).indices)\n")
    yes = [q + "        width = 64\n        starts = torch.arange(0, n - 63, 64).expand(h, -1)\n"
               "        while width > 1:\n            width //= 2\n" + level +
               "        s = torch.zeros(h, n).scatter(1, starts, 1.0)\n",
           q + "        starts = torch.arange(0, n - 63, 64).expand(h, -1)\n        for width in (32, 16, 8, 4, 2, 1):\n" +
               level + "        s = torch.zeros(h, n).scatter(1, starts, 1.0)\n"]
    no = [q + "        means = k.unflatten(1, (-1, 16)).mean(dim=2)\n        fit = torch.einsum('hbd,hd->hb', means, q)\n"
              "        s = fit.repeat_interleave(16, dim=1)\n",
          q + "        alive = torch.arange(n).expand(h, -1)\n        m = n\n        while m > view.budget:\n"
              "            m = m // 2\n            sc = torch.einsum('htd,hd->ht', k.gather(1, alive[..., None].expand(-1, -1, d)), q)\n"
              "            alive = alive.gather(1, sc.topk(m, dim=1).indices)\n"
              "        s = torch.zeros(h, n).scatter(1, alive, 1.0)\n",
          q + "        width = 64\n        while width > 1:\n            width //= 2\n"
              "            means = k.unflatten(1, (-1, width)).mean(dim=2)\n"
              "            fit = torch.einsum('hbd,hd->hb', means, q)\n"
              "        s = fit.repeat_interleave(width, dim=1)\n"]
    _reads_both_ways("coarse_to_fine", yes, no)


def test_a_three_letter_acronym_names_a_paper_only_in_capitals():
    from reviewbench.priorart import name_pattern

    assert name_pattern("AIM").search("pruned as AIM does") and not name_pattern("AIM").search("we aim to keep")
    assert name_pattern("H2O").search("as in h2o") and name_pattern("GraphKV").search("graphkv's decay")
    # a name that is an English word in lower case, or a phrase of ordinary words, is a citation only as written
    for name, prose in [("Performer", "the best performer at 2 %"), ("ThinK", "we think the window"),
                        ("LESS", "less memory"), ("HiRED", "we hired"), ("Token Pooling", "token pooling, kernel 7")]:
        assert not name_pattern(name).search(prose), name
    assert name_pattern("Performer").search("Performer's random features") and name_pattern("LESS").search("LESS")


# The fourth round's reader readings, each both ways (snippets written for these tests).
def test_a_running_cover_of_the_picked_keys_is_similarity_suppression_and_a_positional_spread_is_not():
    """Greedy max-min diversity (farthest-point selection over the keys): every token's distance (or likeness) to its
    nearest chosen token folded with the row of the token just chosen. Spreading picks over positions, or a cover
    computed once, suppresses nothing."""
    pre = "        u = F.normalize(view.keys.float(), dim=-1)\n        d = 1 - u @ u.transpose(1, 2)\n        s = torch.zeros(d.shape[:2])\n"
    loop = "        for h in range(d.shape[0]):\n            c = d[h, -1].clone()\n            for _ in range(view.budget):\n"
    yes = [pre + loop + "                j = int(c.argmax())\n                s[h, j] = 1.0\n"
                        "                c = torch.minimum(c, d[h, j])\n",
           pre + loop + "                j = c.argmax()\n                s[h, j] = 1.0\n                c = c.minimum(d[h, j])\n",
           pre + "        near = (1 - d)[:, -1].clone()\n        for h in range(d.shape[0]):\n"
                 "            for _ in range(view.budget):\n                j = int(near[h].argmin())\n"
                 "                s[h, j] = 1.0\n                near[h] = torch.maximum(near[h], 1 - d[h, j])\n"]
    no = [pre + "        s = d.amin(-1)\n",
          "        p = view.positions.float()\n        s = torch.zeros(p.shape)\n        for h in range(p.shape[0]):\n"
          "            c = (p[h] - p[h, -1]).abs()\n            for _ in range(view.budget):\n"
          "                j = int(c.argmax())\n                s[h, j] = 1.0\n"
          "                c = torch.minimum(c, (p[h] - p[h, j]).abs())\n        s = s + view.keys.float().norm(dim=-1)\n"]
    _reads_both_ways("similarity_suppression", yes, no)


def test_keys_picked_by_their_norm_are_keys_and_a_product_with_the_mean_key_is_the_mean_key():
    """Keys gathered at the indices of a norm ranking are keys (the ranking's own summary stays with the indices):
    unit keys against them are key similarity, not the mean key; unit keys times the unit mean key summed over the
    channels is the mean key (KeyDiff), not key similarity."""
    picked = ("        k = view.keys.float()\n        top = k.abs().sum(-1).topk(4, dim=-1).indices\n"
              "        u = F.normalize(k, dim=-1)\n        a = torch.gather(u, 1, top[..., None].expand(-1, -1, k.shape[-1]))\n")
    feats = _feats(picked + "        s = -torch.einsum('htd,had->hta', u, a).amax(-1)\n")
    assert "key_similarity" in feats and "mean_key" not in feats
    mean = "        k = view.keys.float()\n        c = F.normalize(k.mean(dim=1, keepdim=True), dim=-1)\n"
    for body in [mean + "        s = -(F.normalize(k, dim=-1) * c).sum(-1)\n", mean + "        s = -(k * c).sum(dim=-1)\n"]:
        feats = _feats(body)
        assert "mean_key" in feats and "key_similarity" not in feats, body
    pairs = "        u = F.normalize(view.keys.float(), dim=-1)\n        s = -(u[:, :, None] * u[:, None]).sum(-1).amax(-1)\n"
    assert "key_similarity" in _feats(pairs)


def test_spans_bisected_and_the_best_halves_kept_are_coarse_to_fine_and_a_binary_search_is_not():
    """A tree search written with span bounds: each round every kept span is halved at its midpoint, the halves
    scored (through a representative key against the query), the best halves' bounds carried to the next round.
    A binary search (its bounds re-bound to the midpoint) or a loop that halves a kept set is no tree search."""
    q = "        k = view.keys.float()\n        q = view.group(view.queries.float(), 'mean')[0, -1]\n        n = view.n_tokens\n"
    yes = [q + "        lo = torch.arange(0, n, 64)\n        hi = (lo + 64).clamp(max=n)\n"
               "        while bool((hi - lo > 1).any()):\n            mid = (lo + hi) // 2\n"
               "            a = torch.cat([lo, mid])\n            b = torch.cat([mid, hi])\n"
               "            rep = k[0, (a + b - 1) // 2] @ q\n            top = rep.topk(min(8, rep.numel())).indices\n"
               "            lo, hi = a[top], b[top]\n        s = torch.zeros(k.shape[:2])\n        s[:, lo] = 1.0\n",
           q + "        first = torch.arange(0, n, 32)\n        last = (first + 32).clamp(max=n)\n"
               "        for _ in range(5):\n            cut = (first + last) >> 1\n"
               "            s2 = torch.stack([first, cut], 1).flatten()\n            e2 = torch.stack([cut, last], 1).flatten()\n"
               "            fit = k[0, s2] @ q\n            best = fit.argsort(descending=True)[:8]\n"
               "            first = s2[best]\n            last = e2[best]\n"
               "        s = torch.zeros(k.shape[:2]).index_fill(1, first, 1.0)\n"]
    no = [q + "        sc = k[0] @ q\n        lo, hi = sc.min(), sc.max()\n        for _ in range(20):\n"
              "            mid = (lo + hi) / 2\n            if (sc > mid).sum() > view.budget:\n                lo = mid\n"
              "            else:\n                hi = mid\n        s = (sc > lo).float()[None].expand(k.shape[0], -1)\n",
          q + "        alive = torch.arange(n)\n        while alive.numel() > view.budget:\n"
              "            sc = k[0, alive] @ q\n            top = sc.topk(max(view.budget, alive.numel() // 2)).indices\n"
              "            alive = alive[top]\n        s = torch.zeros(k.shape[:2])\n        s[:, alive] = 1.0\n"]
    _reads_both_ways("coarse_to_fine", yes, no)


def test_the_closing_rows_beside_the_question_are_no_other_choice_for_a_rule_of_its_own():
    """Board A hands the question's queries and, with a query window, the closing rows: a port of a rule that
    reads the question (CDPruner) reading both is that rule. A rule that does not read the question (R-KV's window
    attention minus redundancy) still reads a scorer that adds the question's queries as another choice."""
    from reviewbench.evidence.priorart_evidence import computation_matches

    port = {"attention": 1, "key_similarity": 2, "similarity_suppression": 3, "question_queries": 4,
            "window_queries": 5, "sinks": 6}
    assert any(m.short_name == "CDPruner" and m.level == "same" for m in computation_matches(port, "# M"))
    other = {"attention": 1, "key_similarity": 2, "question_queries": 3, "window_queries": 4, "recent": 5}
    assert [m.level for m in computation_matches(other, "# M") if m.short_name == "R-KV"] == ["family"]


def test_an_inverse_transform_draw_is_importance_sampling_and_a_quantiser_or_a_running_window_is_not():
    """Tokens located in the CDF of a data-made weight by uniform draws or evenly spaced quantiles (searchsorted,
    bucketize, or the nearest running share to each quantile) are drawn with that probability, as multinomial draws
    them (ATS's deterministic sampling). Keys bucketed against fixed levels are quantised, two shifted slices of a
    running sum are a window sum, and the fewest sorted tokens covering a share are coverage: none is a draw."""
    w = ("        a = view.group(view.attention(reduce='mean'), 'mean')\n"
         "        w = a * view.values.float().norm(dim=-1)\n        cdf = (w / w.sum(-1, keepdim=True)).cumsum(-1)\n")
    put = "        s = torch.zeros_like(w).scatter(1, idx.clamp(max=w.shape[1] - 1), 1.0)\n"
    yes = [w + "        u = torch.linspace(0, 1, view.budget + 2)[1:-1].expand(w.shape[0], -1).contiguous()\n"
               "        idx = torch.searchsorted(cdf, u)\n" + put,
           "        w = view.values.float().norm(dim=-1)\n        cdf = torch.cumsum(w, dim=-1)\n"
           "        cdf = cdf / cdf[:, -1:]\n        idx = torch.searchsorted(cdf, torch.rand(w.shape[0], view.budget))\n"
           + put,
           w + "        q = torch.linspace(0, 1, view.budget)\n"
               "        idx = (cdf[:, None, :] - q[None, :, None]).abs().argmin(dim=-1)\n" + put]
    no = ["        k = view.keys.float()\n        code = torch.bucketize(k, torch.linspace(-1, 1, 8))\n"
          "        s = code.float().sum(-1)\n",
          "        a = view.group(view.attention(reduce='sum'), 'mean')\n        c = a.cumsum(1)\n"
          "        s = torch.cat([c[:, :8], c[:, 8:] - c[:, :-8]], 1)\n",
          "        a = view.group(view.attention(reduce='sum'), 'mean')\n        v, o = a.sort(-1, descending=True)\n"
          "        n = ((v / v.sum(-1, keepdim=True)).cumsum(-1) < 0.9).sum(-1)\n        s = a\n"]
    _reads_both_ways("importance_sampling", yes, no)


def test_the_largest_of_a_score_and_its_shifted_copies_is_pooling_and_a_maximum_over_queries_is_not():
    """A sliding maximum written out (the score against its copies moved a token or a few along the tokens) is
    pooling; the largest of two query windows' attention, or over the queries, is the maximum over queries."""
    s = "        s = view.group(view.attention(reduce='sum'), 'mean')\n        t = s.shape[1]\n"
    pad = "        p = torch.cat([s, torch.zeros(s.shape[0], 3)], 1)\n"
    slid = [s + "        s = torch.maximum(s, torch.cat([s[:, 1:], s[:, -1:]], 1))\n",
            s + pad + "        s = torch.stack([p[:, i:i + t] for i in range(4)], 0).amax(0)\n",
            s + "        s = torch.maximum(s, 0.5 * torch.cat([torch.zeros(s.shape[0], 1), s[:, :-1]], 1))\n"]
    for body in slid:
        feats = _feats(body)
        assert "pooling" in feats and "max_attention" not in feats, body
    over_queries = ["        a = view.attention()\n        s = view.group(torch.maximum(a[:, :8].sum(1), a[:, 8:].sum(1)), 'mean')\n",
                    "        s = view.group(view.attention().amax(dim=1), 'mean')\n"]
    for body in over_queries:
        assert "max_attention" in _feats(body), body


def test_a_rule_of_the_last_query_reads_the_questions_rows_as_the_same_choice():
    """Board A's last prompt query is the question's last row: a port of a rule that reads the last query (LazyLLM's
    stage-wise pruning) handed the question's rows is that rule; a rule of its own mechanism that reads neither
    (K-norm) still reads them as another choice."""
    from reviewbench.evidence.priorart_evidence import computation_matches

    port = {"attention": 1, "last_query": 2, "layer_budget": 3, "pyramid": 4, "question_queries": 5, "recent": 6}
    assert any(m.short_name == "LazyLLM" and m.level == "same" for m in computation_matches(port, "# M"))
    other = {"key_norm": 1, "question_queries": 2}
    assert all(m.level != "same" for m in computation_matches(other, "# M") if m.short_name == "K-norm")


def test_on_board_c_a_running_sum_of_the_newest_queries_attention_is_h2o_s_cumulative_attention():
    """At decode time each call hands the newest queries; summed over the calls, every query counts once: H2O's
    cumulative attention, however many queries a call asks for (set 13's SpAtten, set 15's Selective Attention ports,
    after their keys: not held out). On boards A and B one call reads one window, so the same features there are no
    running sum over the queries (set 4's honest down-stack profile stays a family member of H2O). A decayed running
    sum (A2SF's rule) is left as it was: read so, two decode methods of sets 10 and 15 that add a decay to H2O were
    flagged (a choice made on those measured sets)."""
    from reviewbench.evidence.priorart_evidence import computation_matches

    ledger = {"accumulate": 1, "attention": 2, "window_queries": 0, "recent": 3}
    h2o = [m for m in computation_matches(ledger, "# M", board="C") if m.short_name == "H2O"]
    assert h2o and h2o[0].level == "same"
    for board in ("A", "B_online", None):
        h2o = [m for m in computation_matches(ledger, "# M", board=board) if m.short_name == "H2O"]
        assert not h2o or h2o[0].level == "family", board
    credited = [m for m in computation_matches(ledger, "# M\nWe build on H2O (Zhang et al., 2023), adding nothing.",
                                               board="C") if m.short_name == "H2O"]
    assert credited and credited[0].credited
    decayed = {**ledger, "decay": 4}  # a decayed running sum (A2SF) stays a family member: many averages read so
    assert all(m.level != "same" for m in computation_matches(decayed, "# M", board="C") if m.short_name == "A2SF")
