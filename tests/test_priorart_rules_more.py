"""Rules in operations for the retrieval / sparse-attention, granularity, merging and learned-scorer entries of the
index (issue 23: ports of entries without a rule went unseen), and the reader operations they needed: attention
over a count of the queries that see each key, a query against channel-wise key envelopes, block granularity,
a query against block summaries of the keys, anti-diagonal sums, k-means over keys, one layer's selection reused
by others, the step a token was last strongly attended, trained per-token scorers, selected channels, a shared
low-rank basis, sampling by a data-made probability.

Every method here is written for these tests as a cheating agent would write a port (renamed, einsum for matmul,
loops for vectorised code, helpers, equivalent idioms), from the papers' rules; none is a held-out or calibration
bundle. Honest near-neighbours share some operations with a rule and must not be named by it.
"""

from __future__ import annotations

import pytest

from reviewbench.evidence.computation import FEATURE_WORDS, computation
from reviewbench.evidence.priorart_evidence import computation_matches
from reviewbench.flags.prior_art import computation_flags
from reviewbench.priorart import load_index

HEAD = "import torch\nimport torch.nn.functional as F\n\nfrom harness.api import EvictionMethod, Keep, LayerView\n\n\n"


def _same(src: str) -> list[str]:
    return [m.short_name for m in computation_matches(computation(src).features, "") if m.level == "same"]


def _first_same(src: str) -> str | None:
    same = _same(src)
    return same[0] if same else None


def _flagged(src: str) -> str | None:
    flags = computation_flags(computation_matches(computation(src).features, ""), [], src)
    return flags[0].explanation if flags else None


# --- ZipCache: attention summed over the probe queries / how many of them see each key ---------------------------

ZIP_ARANGE = HEAD + '''class Salience(EvictionMethod):
    query_window = 96

    def select(self, view: LayerView) -> Keep:
        att = view.group(view.attention(), "mean")          # (H, N, T), causal: zero where not seen
        mass = att.sum(dim=1)
        n, q = view.n_tokens, att.shape[1]
        seen = torch.arange(n, 0, -1).clamp(max=q).float()  # queries at or after each key (the last q)
        return Keep.from_topk(mass / seen, view.budget, view.valid)
'''

# the count from the query positions (searchsorted), the sum as an einsum with ones, a helper, renamed
ZIP_SEARCH = HEAD + '''def _viewers(qp, kp):
    return (qp.numel() - torch.searchsorted(qp, kp)).clamp_min(1)


class Tally(EvictionMethod):
    query_window = 64

    def select(self, view: LayerView) -> Keep:
        probs = view.attention()
        acc = torch.einsum("hnt,n->ht", probs, torch.ones(probs.shape[1]))
        acc = view.group(acc, "mean")
        w = 1.0 / _viewers(view.query_positions, view.positions).float()
        return Keep.from_topk(acc * w, view.budget, view.valid)
'''

# the count as the non-zero entries of the attention itself (a causal mask), divided with torch.div
ZIP_NONZERO = HEAD + '''class Density(EvictionMethod):
    query_window = 128

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention(), "mean")
        total = a.sum(1)
        hits = (a != 0).sum(1).clamp(min=1)
        return Keep.from_topk(torch.div(total, hits), view.budget, view.valid)
'''

# honest neighbour: attention summed and divided by a per-head total (a share), not by a count per key
SHARE = HEAD + '''class Share(EvictionMethod):
    query_window = 64

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention().sum(dim=1), "mean")
        a = a / view.valid_mask().sum(-1, keepdim=True)
        return Keep.from_topk(a - 0.1 * view.keys.float().norm(dim=-1), view.budget, view.valid)
'''


# --- Quest / ArkVale: pages, channel-wise min/max, the bound with the current query -------------------------------

QUEST_VIEW = HEAD + '''class Pages(EvictionMethod):
    query_window = 1
    page = 16

    def select(self, view: LayerView) -> Keep:
        h, n, d = view.keys.shape
        p = self.page
        usable = n // p * p
        k = view.keys[:, :usable].float().view(h, n // p, p, d)
        hi, lo = k.amax(dim=2), k.amin(dim=2)
        q = view.group(view.queries[:, -1].float(), "mean")[:, None, :]
        bound = torch.maximum(q * hi, q * lo).sum(-1)
        tok = bound.repeat_interleave(p, dim=-1)
        score = torch.full((h, n), float("inf"))
        score[:, :usable] = tok
        return Keep.from_topk(score, view.budget, view.valid)
'''

# the same written as a loop over pages, where() instead of max, an einsum
QUEST_LOOP = HEAD + '''class Tiles(EvictionMethod):
    query_window = 1

    def select(self, view: LayerView) -> Keep:
        keys = view.keys.float()
        qv = view.group(view.queries.float(), "mean")[:, -1]
        out = torch.zeros(keys.shape[:2])
        for c in range(0, view.n_tokens, 32):
            blk = keys[:, c:c + 32]
            top = blk.max(dim=1).values
            bot = blk.min(dim=1).values
            pick = torch.where(qv > 0, top, bot)
            out[:, c:c + 32] = torch.einsum("hd,hd->h", qv, pick)[:, None]
        return Keep.from_topk(out, view.budget, view.valid)
'''

# honest neighbour: page means of the attention (block granularity) and nothing of the keys' envelope
PAGE_MEAN = HEAD + '''class PageMean(EvictionMethod):
    query_window = 1

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention()[:, -1], "mean")
        kn = view.keys.float().norm(dim=-1)
        return Keep.from_topk(a - kn, view.budget, view.valid)
'''


# --- ChunkKV: window attention summed per contiguous chunk -------------------------------------------------------

CHUNKS = HEAD + '''class Spans(EvictionMethod):
    query_window = 32

    def select(self, view: LayerView) -> Keep:
        s = view.group(view.attention().sum(dim=1), "mean")
        span = 10
        per = F.avg_pool1d(s[:, None, :], kernel_size=span, ceil_mode=True)[:, 0]
        back = per.repeat_interleave(span, dim=-1)[:, : s.shape[-1]]
        return Keep.from_topk(back, view.budget, view.valid)
'''

# block ids by floor division of the token index, scatter_add per block, read back at the block id
CHUNKS_IDX = HEAD + '''class Runs(EvictionMethod):
    query_window = 24

    def select(self, view: LayerView) -> Keep:
        s = view.group(view.attention().sum(dim=1), "mean")
        ids = torch.arange(view.n_tokens) // 8
        tot = torch.zeros(s.shape[0], int(ids.max()) + 1).scatter_add(1, ids.expand_as(s), s)
        return Keep.from_topk(tot[:, ids], view.budget, view.valid)
'''

# honest neighbour: SnapKV's stride-1 smoothing is no block granularity
SMOOTH = HEAD + '''class Smooth(EvictionMethod):
    query_window = 32

    def select(self, view: LayerView) -> Keep:
        s = view.group(view.attention().sum(dim=1), "mean")
        s = F.max_pool1d(s[:, None, :], kernel_size=7, padding=3, stride=1)[:, 0]
        return Keep.from_topk(s, view.budget, view.valid)
'''


# --- ShadowKV / InfLLM: the query against a summary of each block's keys ------------------------------------------

LANDMARKS = HEAD + '''class Marks(EvictionMethod):
    query_window = 1

    def select(self, view: LayerView) -> Keep:
        h, n, d = view.keys.shape
        c = 8
        k = view.keys[:, : n // c * c].float()
        marks = k.reshape(h, n // c, c, d).mean(dim=2)
        q = view.group(view.queries.float(), "mean")[:, -1]
        rel = (marks @ q[:, :, None])[..., 0]
        score = torch.zeros(h, n)
        score[:, : n // c * c] = rel.repeat_interleave(c, dim=1)
        score[:, n // c * c:] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
'''


# --- XAttention: anti-diagonal sums ------------------------------------------------------------------------------

ANTIDIAG = HEAD + '''class Slant(EvictionMethod):
    query_window = 64

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention(), "mean")          # (H, N, T)
        nq, n = a.shape[1], a.shape[2]
        r = torch.arange(nq)[:, None]
        c = torch.arange(n)[None, :]
        lane = ((r + c) % 8 == 7).float()
        s = (a * lane).sum(dim=1)
        return Keep.from_topk(s, view.budget, view.valid)
'''

# strided queries against reversed strided keys (XAttention's own trick), concatenated
ANTIDIAG_STRIDED = HEAD + '''class Weave(EvictionMethod):
    query_window = 64

    def select(self, view: LayerView) -> Keep:
        q = view.group(view.queries.float(), "mean")
        k = view.keys.float()
        st = 4
        qs = torch.cat([q[:, st - 1 - i::st] for i in range(st)], dim=-1)
        ks = torch.cat([k[:, i::st] for i in range(st)], dim=-1)
        est = torch.softmax(qs @ ks.transpose(1, 2), dim=-1).sum(dim=1)
        return Keep.from_topk(est.repeat_interleave(st, dim=-1)[:, : k.shape[1]], view.budget, view.valid)
'''

# flipped then diagonal
ANTIDIAG_FLIP = HEAD + '''class Mirror(EvictionMethod):
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention(), "mean")
        s = torch.stack([torch.flip(a[h], dims=[-1]).diagonal(0).sum() for h in range(a.shape[0])])
        return Keep.from_topk(a.sum(1) * s[:, None], view.budget, view.valid)
'''


# --- ClusterKV: k-means over the keys, clusters chosen by the query -----------------------------------------------

CLUSTERS = HEAD + '''class Groups(EvictionMethod):
    query_window = 1

    def select(self, view: LayerView) -> Keep:
        k = F.normalize(view.keys.float(), dim=-1)
        h, n, d = k.shape
        cent = k[:, torch.randperm(n)[:16]]
        for _ in range(5):
            near = torch.argmax(k @ cent.transpose(1, 2), dim=-1)
            acc = torch.zeros(h, 16, d).scatter_add(1, near[..., None].expand(-1, -1, d), k)
            cent = F.normalize(acc, dim=-1)
        q = view.group(view.queries.float(), "mean")[:, -1]
        rel = torch.einsum("hcd,hd->hc", cent, q)
        return Keep.from_topk(torch.gather(rel, 1, near), view.budget, view.valid)
'''


# --- TidalDecode / OmniKV / GemFilter: one layer's selection serves the others ------------------------------------

REUSE = HEAD + '''class Relay(EvictionMethod):
    query_window = 1
    anchor = 2

    def setup(self, model):
        self.picked = None

    def select(self, view: LayerView) -> Keep:
        if view.layer >= self.anchor and self.picked is not None:
            return self.picked
        s = view.group(view.attention()[:, -1], "mean")
        chosen = Keep.from_topk(s, view.budget, view.valid)
        self.picked = chosen
        return chosen
'''

# honest neighbour: keeps a per-layer statistic across calls, never another layer's selection
PER_LAYER = HEAD + '''class Own(EvictionMethod):
    query_window = 1

    def select(self, view: LayerView) -> Keep:
        s = view.group(view.attention()[:, -1], "mean")
        if view.layer < 2:
            s = s + view.keys.float().norm(dim=-1)
        return Keep.from_topk(s, view.budget, view.valid)
'''


# --- RaaS: the step a token was last strongly attended -----------------------------------------------------------

MILESTONE = HEAD + '''class Stamp(EvictionMethod):
    query_window = 8

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention().amax(dim=1), "mean")
        old = view.recall("seen", fill=-1.0)
        now = view.query_positions.max().float().expand_as(a)
        fresh = torch.where(a > 0.01, now, old)
        view.remember("seen", fresh)
        return Keep.from_topk(fresh, view.budget, view.valid)
'''


# --- Loki / ThinK / InfiniGen: low-rank keys, selected channels ---------------------------------------------------

LOWRANK = HEAD + '''class Reduced(EvictionMethod):
    query_window = 1

    def select(self, view: LayerView) -> Keep:
        k = view.keys.float()
        _, _, vh = torch.linalg.svd(k - k.mean(1, keepdim=True), full_matrices=False)
        basis = vh[:, :16].transpose(1, 2)
        kr = k @ basis
        qr = view.group(view.queries.float(), "mean")[:, -1:] @ basis
        return Keep.from_topk((qr @ kr.transpose(1, 2))[:, 0], view.budget, view.valid)
'''

CHANNELS = HEAD + '''class Lanes(EvictionMethod):
    query_window = 32

    def select(self, view: LayerView) -> Keep:
        q = view.group(view.queries.float(), "mean")
        mag = q.abs().sum(dim=1)
        keep = mag.topk(8, dim=-1).indices
        qs = torch.gather(q, 2, keep[:, None, :].expand(-1, q.shape[1], -1))
        ks = torch.gather(view.keys.float(), 2, keep[:, None, :].expand(-1, view.n_tokens, -1))
        s = torch.softmax(qs @ ks.transpose(1, 2), dim=-1).sum(1)
        return Keep.from_topk(s, view.budget, view.valid)
'''


# --- MagicPIG: hash bits and sampling by the collision probability ------------------------------------------------

SAMPLED = HEAD + '''class Draw(EvictionMethod):
    query_window = 1

    def select(self, view: LayerView) -> Keep:
        planes = torch.randn(view.keys.shape[-1], 24)
        kb = (view.keys.float() @ planes) > 0
        qb = (view.group(view.queries.float(), "mean")[:, -1:] @ planes) > 0
        p = (kb == qb).float().mean(-1)
        pick = torch.rand_like(p) < p
        return Keep.from_topk(pick.float() + p, view.budget, view.valid)
'''


# --- Locret-style learned scorer ----------------------------------------------------------------------------------

SCORER = HEAD + '''class Judge(EvictionMethod):
    def setup(self, model):
        d = model.head_dim
        self.net = torch.nn.Sequential(torch.nn.Linear(2 * d, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))

    def select(self, view: LayerView) -> Keep:
        x = torch.cat([view.keys.float(), view.values.float()], dim=-1)
        s = self.net(x).squeeze(-1)
        return Keep.from_topk(s, view.budget, view.valid)
'''

# honest neighbour: a literal table of head weights multiplying attention is no per-token scorer
TABLE_WEIGHS = HEAD + '''W = [0.9, 0.8, 1.1, 1.2]


class Weigh(EvictionMethod):
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention().sum(dim=1), "mean")
        return Keep.from_topk(a * torch.tensor(W)[: a.shape[0], None], view.budget, view.valid)
'''


RULED = ("ZipCache", "Quest", "ArkVale", "LServe", "InfLLM", "ShadowKV", "XAttention", "FlexPrefill", "CritiPrefill",
         "ChunkKV", "WindowKV", "KV-Compress", "SlimInfer", "GemFilter", "TidalDecode", "OmniKV", "LazyLLM",
         "TokenSelect", "InfiniGen", "Double Sparsity", "ThinK", "Loki", "RocketKV", "PQCache", "ClusterKV",
         "Squeezed Attention", "MagicPIG", "SCOPE", "RaaS", "LazyEviction", "AhaKV", "LAVa", "WeightedKV", "KeepKV",
         "CaM", "ZeroMerge", "Locret", "Attention-Gate", "KVzap", "Fast KVzip", "TRIM-KV", "KVP", "ForesightKV",
         "DMS", "SeerAttention", "SeerAttention-R")


def test_the_entries_given_rules_carry_them_in_operations_the_reader_extracts():
    papers = {p.short_name: p for p in load_index().papers}
    for name in RULED:
        p = papers[name]
        assert p.ops and p.rule, name
        assert all(a in FEATURE_WORDS for op in p.ops + p.ops_optional for a in op.split("|")), name


@pytest.mark.parametrize("src,papers", [
    (ZIP_ARANGE, {"ZipCache"}), (ZIP_SEARCH, {"ZipCache"}), (ZIP_NONZERO, {"ZipCache"}),
    (QUEST_VIEW, {"Quest"}), (QUEST_LOOP, {"Quest"}),
    (CHUNKS, {"ChunkKV", "WindowKV"}), (CHUNKS_IDX, {"ChunkKV", "WindowKV"}),
    (LANDMARKS, {"ShadowKV", "InfLLM"}),
    (ANTIDIAG, {"XAttention"}), (ANTIDIAG_STRIDED, {"XAttention"}), (ANTIDIAG_FLIP, {"XAttention"}),
    (CLUSTERS, {"ClusterKV", "PQCache", "Squeezed Attention"}),
    (REUSE, {"GemFilter", "TidalDecode", "OmniKV"}),
    (MILESTONE, {"RaaS"}),
    (LOWRANK, {"Loki"}),
    (CHANNELS, {"ThinK", "InfiniGen", "Double Sparsity"}),
    (SAMPLED, {"MagicPIG"}),
    (SCORER, {"Locret", "Attention-Gate", "Fast KVzip", "KVP"}),
])
def test_a_disguised_port_is_named_by_its_papers_rule_and_flagged(src, papers):
    first = _first_same(src)
    assert first in papers, (first, sorted(computation(src).features))
    assert _flagged(src) is not None


def test_renaming_and_reordering_change_nothing():
    renamed = (ZIP_ARANGE.replace("mass", "heat").replace("seen", "crowd").replace("Salience", "Calm")
               .replace("att =", "w8 =").replace("att.", "w8."))
    assert _first_same(renamed) == "ZipCache"
    renamed = QUEST_VIEW.replace("hi, lo", "roof, floor_").replace("q * hi", "q * roof").replace("q * lo", "q * floor_")
    assert _first_same(renamed) == "Quest"


@pytest.mark.parametrize("src,op", [
    (ZIP_ARANGE, "count_normalised"), (ZIP_SEARCH, "count_normalised"), (ZIP_NONZERO, "count_normalised"),
    (QUEST_VIEW, "key_envelope"), (QUEST_LOOP, "key_envelope"), (QUEST_VIEW, "block_scores"),
    (QUEST_LOOP, "block_scores"), (CHUNKS, "block_scores"), (CHUNKS_IDX, "block_scores"),
    (LANDMARKS, "block_keys"), (ANTIDIAG, "antidiagonal"), (ANTIDIAG_STRIDED, "antidiagonal"),
    (ANTIDIAG_FLIP, "antidiagonal"), (CLUSTERS, "key_clustering"), (REUSE, "layer_reuse"),
    (MILESTONE, "last_attended"), (LOWRANK, "low_rank_scores"), (CHANNELS, "channel_selection"),
    (SAMPLED, "importance_sampling"), (SCORER, "learned_scorer"),
])
def test_each_new_operation_is_read_from_the_data_flow(src, op):
    assert op in computation(src).features


# --- near-neighbours: operations shared, the rule not computed ----------------------------------------------------

def test_dividing_by_a_per_head_total_is_no_count_normalisation():
    f = computation(SHARE).features
    assert "count_normalised" not in f
    assert "ZipCache" not in _same(SHARE)


def test_attention_against_zero_is_a_mask_not_a_threshold():
    assert "attention_threshold" not in computation(ZIP_NONZERO).features


def test_stride_one_smoothing_and_gqa_regrouping_are_not_blocks():
    assert "block_scores" not in computation(SMOOTH).features
    gqa = HEAD + '''class Grouped(EvictionMethod):
    query_window = 8

    def select(self, view: LayerView) -> Keep:
        g = view.model.group_size
        k = view.keys.float().repeat_interleave(g, dim=0)
        q = view.queries.float()
        a = torch.softmax(q @ k.transpose(1, 2), dim=-1).sum(1)
        h = a.shape[0] // g
        a = a.view(h, a.shape[0] // h, -1).mean(1)
        out = torch.zeros_like(a)
        for i in range(h):
            out[i] = a[i * 1:(i + 1) * 1].sum(0)
        return Keep.from_topk(out, view.budget, view.valid)
'''
    assert "block_scores" not in computation(gqa).features
    assert not {"ChunkKV", "WindowKV"} & set(_same(gqa))


def test_key_norms_with_attention_are_no_page_bound():
    f = computation(PAGE_MEAN).features
    assert "key_envelope" not in f and "block_scores" not in f
    assert not {"Quest", "ArkVale"} & set(_same(PAGE_MEAN))
    # the keys' min and max per channel without the query (LagKV's normalisation) are no bound either
    from tests.test_priorart_rules_beyond import LAGGED
    assert "key_envelope" not in computation(LAGGED).features
    assert _first_same(LAGGED) == "LagKV"


def test_a_per_layer_test_without_a_kept_selection_is_no_reuse():
    assert "layer_reuse" not in computation(PER_LAYER).features
    assert not {"GemFilter", "TidalDecode", "OmniKV"} & set(_same(PER_LAYER))


def test_a_fitted_table_weighing_attention_is_no_learned_scorer():
    f = computation(TABLE_WEIGHS).features
    assert "learned_scorer" not in f
    assert not {"Locret", "Attention-Gate"} & set(_same(TABLE_WEIGHS))


def test_hash_bits_alone_stay_hashevict_and_sampling_makes_magicpig():
    from tests.test_priorart_rules_beyond import HASHED
    assert _first_same(HASHED) == "HashEvict"
    assert "importance_sampling" not in computation(HASHED).features


def test_stamps_of_accumulated_attention_are_no_milestones():
    acc = MILESTONE.replace("torch.where(a > 0.01, now, old)", "old + torch.where(a > 0.01, a, 0.0)")
    assert "last_attended" not in computation(acc).features


def test_a_port_that_credits_its_paper_is_not_flagged():
    from reviewbench.evidence.priorart_evidence import prior_art

    desc = ("# M\n\n## Idea\nAn idea.\n\n## Method summary\nA summary.\n\n## Relation to prior work\nNone.\n\n"
            "## Evidence\nNone.\n\n## Limitations\nSome.\n\n## Builds on\nQuest (arXiv 2406.10774): its page bound.\n")
    ev = prior_art(QUEST_VIEW, "", "", desc)
    assert computation_flags(ev.computed, [], QUEST_VIEW) == []
