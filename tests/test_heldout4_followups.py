"""Follow-ups of the fourth held-out set's measurement: the reader operations that its disguised ports hid, the
misstated covariance, and the order in which a verdict names the matched rules.

Every method here is written fresh for these tests, as an adversary would disguise a port (renamed, loops for
vectorised code, helpers, other idioms), from the papers' rules; none is a held-out or calibration bundle. Each
port comes with an honest near-neighbour that shares operations with it and must not be read as that rule.
"""

from __future__ import annotations

from pathlib import Path

from reviewbench.evidence.computation import computation
from reviewbench.evidence.facts import ComputedFact, EvidenceFacts, SimilarityFact
from reviewbench.evidence.judge import prior_work
from reviewbench.evidence.priorart_evidence import computation_matches, source_order
from reviewbench.flags.misstated import misstated_flags
from reviewbench.flags.prior_art import computation_flags
from reviewbench.rubric import load_rubric
from reviewbench.verdict import decide

HEAD = "import torch\nimport torch.nn.functional as F\n\nfrom harness.api import EvictionMethod, Keep, LayerView\n\n\n"


def _feats(src: str) -> dict[str, int]:
    return computation(src).features


def _same(src: str) -> list[str]:
    return [m.short_name for m in computation_matches(_feats(src), "") if m.level == "same"]


def _flagged(src: str) -> bool:
    return bool(computation_flags(computation_matches(_feats(src), ""), [], src))


# --- the step a token was last strongly attended, under a causal mask and a bar made of positions ----------------

# a RaaS-like stamp: each fresh query in turn, its causal visibility multiplied in, a bar of 1 / (keys it sees),
# the stamp written with a filled tensor (full_like takes only a shape from its first argument)
STAMP_LOOP = HEAD + '''class Beacon(EvictionMethod):
    query_window = 48

    def select(self, view: LayerView) -> Keep:
        when = view.recall("when", fill=-1.0)
        when = torch.where(when < 0, view.positions.float(), when)
        if view.queries is not None:
            probs = view.group(view.attention(), "max")              # (H, n, T)
            for i in range(probs.shape[1]):
                at = view.query_positions[i]
                sees = view.positions <= at
                row = probs[:, i, :] * sees
                bar = 1.0 / sees.sum(dim=-1, keepdim=True).clamp_min(1)
                lit = row > bar
                when = torch.where(lit, torch.full_like(when, float(at)), when)
        view.remember("when", when)
        return Keep.from_topk(when, view.budget, view.valid)
'''
# honest near-neighbour: how often a token was above the same bar (a count, Scissorhands-like): no stamp
COUNT_ABOVE = HEAD + '''class Tally(EvictionMethod):
    query_window = 48

    def select(self, view: LayerView) -> Keep:
        hits = view.recall("hits", fill=0.0)
        if view.queries is not None:
            probs = view.group(view.attention(), "max")
            sees = view.positions[:, None, :] <= view.query_positions[None, :, None]
            probs = probs * sees
            bar = 1.0 / sees.sum(dim=-1, keepdim=True).clamp_min(1)
            hits = hits + (probs > bar).float().sum(dim=1)
        view.remember("hits", hits)
        return Keep.from_topk(hits, view.budget, view.valid)
'''


def test_a_stamp_written_with_a_filled_tensor_under_a_causal_mask_is_last_attended():
    f = _feats(STAMP_LOOP)
    assert "last_attended" in f
    assert "RaaS" in _same(STAMP_LOOP) and _flagged(STAMP_LOOP)


def test_counting_tokens_above_a_position_made_bar_is_no_stamp():
    f = _feats(COUNT_ABOVE)
    assert "last_attended" not in f
    assert "RaaS" not in [m.short_name for m in computation_matches(f, "")]


# --- a value replaced on the module is no running sum ----------------------------------------------------------

# a ChunkKV-like port: blocks of 12 by a loop of slices, window attention summed per block, the per-token block
# score kept on the module in a dict replaced at each even layer and re-used by the odd one
BLOCKS_CACHED = HEAD + '''class Paragraphs(EvictionMethod):
    query_window = 24
    span = 12

    def setup(self, model) -> None:
        self._box = {}

    def select(self, view: LayerView) -> Keep:
        box = getattr(self, "_box", None) or {}
        if view.layer % 2 == 1 and "s" in box:
            return Keep.from_topk(box["s"], view.budget, view.valid)
        a = view.group(view.attention().sum(dim=1), "mean")          # (H, T)
        n = a.shape[-1]
        per = torch.zeros_like(a)
        for c in range(0, n, self.span):
            per[:, c:c + self.span] = a[:, c:c + self.span].sum(dim=-1, keepdim=True)
        per = per.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        self._box = {"s": per}
        return Keep.from_topk(per, view.budget, view.valid)
'''
# honest contrast in mechanism: a genuine running sum on the module (H2O-like), read back through getattr
RUNNING = HEAD + '''class Ledger(EvictionMethod):
    query_window = 1 << 20

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention().sum(dim=1), "mean")
        old = getattr(self, "_tot", None)
        self._tot = a if old is None or old.shape != a.shape else old + a
        return Keep.from_topk(self._tot, view.budget, view.valid)
'''


def test_a_block_score_replaced_on_the_module_is_not_accumulated():
    f = _feats(BLOCKS_CACHED)
    assert "block_scores" in f and "accumulate" not in f
    assert "ChunkKV" in _same(BLOCKS_CACHED) and _flagged(BLOCKS_CACHED)


def test_a_running_sum_read_back_through_getattr_is_still_accumulated():
    assert "accumulate" in _feats(RUNNING)


# --- sketched leverage (row norms of an orthonormal basis) is leverage ------------------------------------------

# a Compactor-like port: the keys sketched with a seeded Gaussian, an SVD's left vectors, squared row norms by
# an einsum-free product, blended with attention of every query
LEVERAGE_SVD = HEAD + '''class Outliers(EvictionMethod):
    query_window = 1 << 20

    def select(self, view: LayerView) -> Keep:
        k = view.keys.float()
        g = torch.Generator().manual_seed(7)
        s = torch.randn(k.shape[-1], 24, generator=g)
        u, _, _ = torch.linalg.svd(k @ s, full_matrices=False)
        lev = (u * u).sum(dim=-1)
        att = view.group(view.attention().sum(dim=1), "mean")
        sc = 0.3 * lev / lev.sum(-1, keepdim=True) + 0.7 * att / att.sum(-1, keepdim=True)
        return Keep.from_topk(sc, view.budget, view.valid)
'''
# honest near-neighbour: key norms blended with attention (no factorisation): not leverage
NORM_BLEND = HEAD + '''class Mixed(EvictionMethod):
    query_window = 1 << 20

    def select(self, view: LayerView) -> Keep:
        n = view.keys.float().pow(2).sum(dim=-1)
        att = view.group(view.attention().sum(dim=1), "mean")
        return Keep.from_topk(att - 0.1 * n, view.budget, view.valid)
'''


def test_squared_row_norms_of_a_sketch_basis_are_leverage():
    f = _feats(LEVERAGE_SVD)
    assert "leverage" in f
    assert "Compactor" in _same(LEVERAGE_SVD) and _flagged(LEVERAGE_SVD)


def test_key_norms_without_a_factorisation_are_no_leverage():
    f = _feats(NORM_BLEND)
    assert "leverage" not in f and "key_norm" in f
    assert "Compactor" not in [m.short_name for m in computation_matches(f, "")]


# --- channels chosen by per-channel statistics of queries and keys ----------------------------------------------

# a Double-Sparsity-like port: channel importance = mean |q| * summed |k| per channel, the top 8 channels gathered
# from queries and keys with index_select, attention on them
CHANNELS = HEAD + '''class Narrow(EvictionMethod):
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        q = view.queries.float()                     # (Hq, n, D)
        k = view.keys.float()                        # (H, T, D)
        qs = q.abs().mean(dim=(0, 1))
        ks = k.abs().sum(dim=(0, 1))
        pick = torch.argsort(qs * ks, descending=True)[:8]
        qn = torch.index_select(q, -1, pick)
        kn = torch.index_select(k, -1, pick)
        kn = kn.repeat_interleave(view.model.group_size, dim=0)
        w = torch.softmax(qn @ kn.transpose(1, 2) * view.model.scale, dim=-1)
        return Keep.from_topk(view.group(w.sum(dim=1), "mean"), view.budget, view.valid)
'''
# honest near-neighbour: the same statistics weight every channel of the query (no channel chosen)
CHANNEL_WEIGHTED = HEAD + '''class Wide(EvictionMethod):
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        q = view.queries.float()
        k = view.keys.float()
        wts = q.abs().mean(dim=(0, 1)) * k.abs().sum(dim=(0, 1))
        kk = (k * wts).repeat_interleave(view.model.group_size, dim=0)
        w = torch.softmax(q @ kk.transpose(1, 2) * view.model.scale, dim=-1)
        return Keep.from_topk(view.group(w.sum(dim=1), "mean"), view.budget, view.valid)
'''


def test_channels_ranked_by_query_and_key_statistics_are_channel_selection():
    f = _feats(CHANNELS)
    assert "channel_selection" in f
    assert "Double Sparsity" in _same(CHANNELS) and _flagged(CHANNELS)


def test_channel_weights_without_a_choice_are_no_channel_selection():
    assert "channel_selection" not in _feats(CHANNEL_WEIGHTED)


# --- one value for the whole layer (a mean over every axis) is a head average -----------------------------------

# a SimLayerKV-like port: the newest query's share on the first 4 and the last w tokens, averaged over every head
# at once by a bare .mean(): a lazy layer keeps only those tokens
LAZY = HEAD + '''class Regime(EvictionMethod):
    query_window = 4

    def select(self, view: LayerView) -> Keep:
        p = view.attention()
        final = p[:, -1]
        w = max(1, view.budget - 4)
        share = (final[:, :4].sum(-1) + final[:, -w:].sum(-1)).mean()
        order = view.positions.float()
        if float(share) > 0.85:
            order[:, :4] = float("inf")
            return Keep.from_topk(order, view.budget, view.valid)
        s = view.group(p.sum(dim=1), "mean")
        s[:, :4] = float("inf")
        return Keep.from_topk(s, view.budget, view.valid)
'''
# honest near-neighbour: the same share per head decides per head (no whole-layer value)
PER_HEAD = HEAD + '''class PerHead(EvictionMethod):
    query_window = 4

    def select(self, view: LayerView) -> Keep:
        p = view.group(view.attention(), "mean")
        final = p[:, -1]
        w = max(1, view.budget - 4)
        share = final[:, :4].sum(-1) + final[:, -w:].sum(-1)      # (H,)
        s = p.sum(dim=1)
        s = torch.where(share[:, None] > 0.85, view.positions.float(), s)
        s[:, :4] = float("inf")
        return Keep.from_topk(s, view.budget, view.valid)
'''


# honest near-neighbour: each head's own share, a bare .mean() inside a loop over the heads (one head's values)
LOOPED = HEAD + '''class Looped(EvictionMethod):
    query_window = 4

    def select(self, view: LayerView) -> Keep:
        p = view.group(view.attention(), "mean")
        out = []
        for h in range(p.shape[0]):
            edge = p[h, :, :4].sum(-1).mean()
            row = p[h].sum(dim=-2)
            out.append(row * (2.0 if float(edge) > 0.85 else 1.0))
        return Keep.from_topk(torch.stack(out), view.budget, view.valid)
'''


def test_a_whole_layer_mean_of_attention_is_a_head_average():
    f = _feats(LAZY)
    assert "head_average" in f
    assert "SimLayerKV" in [m.short_name for m in computation_matches(f, "")]


def test_a_per_head_decision_is_no_head_average():
    assert "head_average" not in _feats(LOOPED)
    f = _feats(PER_HEAD)
    assert "head_average" not in f
    assert "SimLayerKV" not in [m.short_name for m in computation_matches(f, "")]


# --- a covariance the code computes is no misstated variance ------------------------------------------------------

def _desc(summary: str) -> str:
    return (f"# Grove\n\n## Idea\nKeys occupy few directions.\n\n## Method summary\n{summary}\n\n"
            "## Relation to prior work\nNone.\n\n## Evidence\nNone.\n\n## Limitations\nSome.\n\n## Builds on\nNone.\n")


COVARIANCE = HEAD + '''def _axes(x, r):
    dev = x - x.mean(dim=-2, keepdim=True)
    c = dev.transpose(-1, -2) @ dev
    return torch.linalg.eigh(c)[1][..., -r:]


class Axes(EvictionMethod):
    query_window = 8

    def select(self, view: LayerView) -> Keep:
        k = view.keys.float()
        b = _axes(k, 8)
        return Keep.from_topk((k @ b).pow(2).sum(-1), view.budget, view.valid)
'''
NO_COVARIANCE = HEAD + '''class Plain(EvictionMethod):
    query_window = 8

    def select(self, view: LayerView) -> Keep:
        return Keep.from_topk(view.group(view.attention().sum(dim=1), "mean"), view.budget, view.valid)
'''
SUMMARY = "We form each head's key covariance matrix and keep the tokens with most energy on its top eigenvectors."


def _standing(desc: str, src: str) -> list[str]:
    rubric = load_rubric(Path(__file__).resolve().parent.parent / "rubrics" / "default.toml")
    flags = misstated_flags(desc, src, [], rubric.evidence)
    return [f.flag for f in decide([], rubric, "other", flags).standing_flags]


def test_a_covariance_written_as_centred_keys_times_themselves_is_computed():
    assert not misstated_flags(_desc(SUMMARY), COVARIANCE, [], load_rubric(
        Path(__file__).resolve().parent.parent / "rubrics" / "default.toml").evidence)


def test_a_stated_covariance_over_plain_attention_is_still_misstated():
    assert _standing(_desc(SUMMARY), NO_COVARIANCE) == ["MISSTATED_METHOD"]


# --- the verdict names the most specific matched rule first ------------------------------------------------------

# a DefensiveKV-like port (the maximum over the window queries plus their mean, pooled): SnapKV's rule matches
# too (pooling required, the maximum optional); the rarer rule must be among the first named, before any distance
PEAK = HEAD + '''class Peak(EvictionMethod):
    query_window = 24

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention(), "mean")               # (H, W, T)
        top = a.amax(dim=1)
        s = top + a.mean(dim=1)
        s = F.avg_pool1d(s[:, None], 5, stride=1, padding=2)[:, 0]
        s = s.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(s, view.budget, view.valid)
'''


def test_source_order_puts_every_close_rule_first_the_rarest_before_the_common():
    matches = computation_matches(_feats(PEAK), "")
    names = [m.short_name for m in source_order(matches)]
    assert "DefensiveKV" in names[:2] and "SnapKV" in names[:2]
    # a rule the code exceeds by a mechanism of its own is never put first
    assert all(not [e for e in m.extra if e not in ("max_attention", "pooling", "head_average", "window_queries",
                                                     "all_queries", "question_queries", "last_query", "decode",
                                                     "attention")] for m in source_order(matches))


def test_prior_work_names_close_family_rules_before_the_nearest_code():
    matches = computation_matches(_feats(PEAK), "")
    facts = EvidenceFacts(
        computed=[ComputedFact(short_name=m.short_name, title=m.title, arxiv=m.arxiv, level=m.level,
                               ops=list(m.matched), extra=m.extra, credited=m.credited) for m in matches],
        code=[SimilarityFact(reference="baseline:h2o", implements=None, score=0.4, via="code", credited=False,
                             credit_reason="not named")])
    first = [p.arxiv_id for p in prior_work(facts)[:3]]
    defensive = next(m.arxiv for m in matches if m.short_name == "DefensiveKV")
    assert defensive in first


# --- a block's representative keys, picked by a ranking inside the block, against the query ----------------------

# an InfLLM-like port: pages of 16 (the page count a ceil-division bound to a name), two representatives per page
# by in-page attention, gathered from the paged keys; the closing queries against them rank the pages; recent kept
PAGES = HEAD + '''class Pages(EvictionMethod):
    query_window = 8
    size = 16

    def select(self, view: LayerView) -> Keep:
        k = view.keys[0].float()                                   # one KV head, (T, D)
        n, d = k.shape
        npg = -(-n // self.size)
        extra = npg * self.size - n
        kp = F.pad(k, (0, 0, 0, extra)).reshape(npg, self.size, d)
        a = view.group(view.attention(), "mean")[0].sum(0)        # (T,)
        ap = F.pad(a, (0, extra)).reshape(npg, self.size)
        pick = ap.topk(2, dim=-1).indices
        reps = torch.gather(kp, 1, pick[..., None].expand(-1, -1, d))
        q = view.queries[0, -8:].float()                           # (8, D)
        page = torch.einsum("qd,prd->p", q, reps)
        s = page.repeat_interleave(self.size)[:n]
        s[-32:] = float("inf")
        return Keep.from_topk(s[None].expand(view.n_kv_heads, n), view.budget, view.valid)
'''
# honest near-neighbour: pages ranked by their own summed attention (block scores), no query against any key summary
PAGE_MASS = HEAD + '''class PageMass(EvictionMethod):
    query_window = 8
    size = 16

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention(), "mean").sum(1)          # (H, T)
        h, n = a.shape
        npg = -(-n // self.size)
        ap = F.pad(a, (0, npg * self.size - n)).reshape(h, npg, self.size)
        best = ap.topk(2, dim=-1).values.sum(-1)
        s = best.repeat_interleave(self.size, dim=1)[:, :n]
        s[:, -32:] = float("inf")
        return Keep.from_topk(s, view.budget, view.valid)
'''


def test_ranked_representatives_of_paged_keys_against_the_query_are_block_keys():
    f = _feats(PAGES)
    assert "block_keys" in f
    names = [m.short_name for m in source_order(computation_matches(f, ""))]
    assert "InfLLM" in names[:3]


def test_pages_ranked_by_their_own_attention_are_no_block_keys():
    f = _feats(PAGE_MASS)
    assert "block_keys" not in f and "block_scores" in f
    assert "InfLLM" not in [m.short_name for m in computation_matches(f, "")]


# --- the longest gap between a token's strong attentions (LazyEviction's recurrence interval) --------------------

# a LazyEviction-like port in on_decode: per token the step of its last strong attention and the longest gap seen
# between two of them (a running maximum of the time since the stamp); tokens not yet overdue kept first
OVERDUE = HEAD + '''class Overdue(EvictionMethod):
    query_window = 1

    def on_decode(self, view: LayerView) -> Keep:
        step = int(view.query_positions[-1])
        a = view.group(view.attention(), "mean")[:, -1]                # (H, T)
        stamp = view.recall("stamp", fill=0.0)
        longest = view.recall("longest", fill=0.0)
        strong = a > a.mean(dim=-1, keepdim=True)
        longest = torch.where(strong, torch.maximum(longest, step - stamp), longest)
        stamp = torch.where(strong, torch.full_like(stamp, float(step)), stamp)
        view.remember("stamp", stamp)
        view.remember("longest", longest)
        slack = longest - (step - stamp)
        return Keep.from_topk(slack, view.budget, view.valid)
'''
# honest near-neighbour: the same stamp, and the running peak of each token's attention (no interval)
PEAK_STAMP = HEAD + '''class PeakStamp(EvictionMethod):
    query_window = 1

    def on_decode(self, view: LayerView) -> Keep:
        step = int(view.query_positions[-1])
        a = view.group(view.attention(), "mean")[:, -1]
        stamp = view.recall("stamp", fill=0.0)
        peak = view.recall("peak", fill=0.0)
        strong = a > a.mean(dim=-1, keepdim=True)
        peak = torch.maximum(peak, a)
        stamp = torch.where(strong, torch.full_like(stamp, float(step)), stamp)
        view.remember("stamp", stamp)
        view.remember("peak", peak)
        return Keep.from_topk(stamp + peak, view.budget, view.valid)
'''


def test_a_running_maximum_of_the_time_since_a_stamp_is_a_recurrence_interval():
    f = _feats(OVERDUE)
    assert {"last_attended", "recurrence_interval"} <= set(f)
    names = [m.short_name for m in source_order(computation_matches(f, ""))]
    assert names and names[0] == "LazyEviction"


def test_a_running_peak_of_attention_beside_a_stamp_is_no_recurrence_interval():
    f = _feats(PEAK_STAMP)
    assert "last_attended" in f and "recurrence_interval" not in f
    assert "LazyEviction" not in [m.short_name for m in computation_matches(f, "")]
