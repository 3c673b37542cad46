"""Issue 23: choices a porter makes that the published rule leaves open do not hide the rule.

- A layer's place in the stack looked up in a table the method built from the model's layers moves with the layer,
  as the layer index does: a span of positions shifted by it is LaCache's ladder.
- Q-Filters' direction is the principal singular vector of sample queries with its sign fixed by their mean; which
  queries are sampled (a repeat pass) and whether RoPE is undone first are the port's choices.

The code is written fresh for these tests (set 19's misses showed both gaps; nothing here is taken from it)."""

from __future__ import annotations

from reviewbench.evidence.computation import computation
from reviewbench.evidence.priorart_evidence import computation_matches

HEAD = "import torch\n\nfrom harness.api import EvictionMethod, Keep, LayerView\n\n\n"
DESC = "# Method\n\n## Idea\nA new retention rule.\n\n## Method summary\nOur own rule.\n"

LADDER = HEAD + '''class Slide(EvictionMethod):
    def setup(self, model) -> None:
        self.rank = {}
        for j, layer in enumerate(model.attention_layers):
            self.rank[layer] = j / max(1, len(model.attention_layers) - 1)

    def select(self, view: LayerView) -> Keep:
        where = self.rank[view.layer]
        kept = []
        for h in range(view.n_kv_heads):
            n = int(view.valid_mask()[h].sum())
            width = max(1, view.budget - 8)
            lo = 4 + int(where * max(0, n - 8 - width))
            kept.append(torch.cat([torch.arange(4), torch.arange(lo, lo + width), torch.arange(n - 4, n)]).unique())
        return Keep(tuple(kept))
'''

FILTER = HEAD + '''def _axis(q):
    v = torch.linalg.svd(q, full_matrices=False).Vh[0]
    return torch.where((q.mean(0) @ v) < 0, -v, v)


class Axis(EvictionMethod):
    reconstruction_queries = True

    def select(self, view: LayerView) -> Keep:
        q = view.rotate(view.queries.float(), -view.query_positions)
        g = view.model.group_size
        score = torch.zeros(view.keys.shape[:2])
        for h in range(view.n_kv_heads):
            k = view.rotate(view.keys[h].float(), -view.positions[h])
            for j in range(g):
                score[h] += k @ _axis(q[h * g + j])
        return Keep.from_topk(score, view.budget, view.valid)
'''


def _same(src: str, board: str) -> list[str]:
    c = computation(src)
    return [m.short_name for m in computation_matches(c.features, DESC, c.paths, board=board) if m.level == "same"]


def test_a_span_shifted_by_a_per_layer_table_is_the_ladder() -> None:
    assert "layer_span" in computation(LADDER).features
    assert "LaCache" in _same(LADDER, "B_online")


def test_a_table_keyed_by_the_layer_holding_kept_keys_is_no_ladder() -> None:
    # per-layer state read back by the layer (keys kept at an earlier call) carries data, not a place in the stack
    src = HEAD + '''class Memo(EvictionMethod):
    def select(self, view: LayerView) -> Keep:
        old = self.memory.get(view.layer) if hasattr(self, "memory") else None
        self.memory = {view.layer: view.keys.norm(dim=-1)}
        score = view.keys.norm(dim=-1) if old is None or old.shape != view.keys.shape[:2] else old
        n = view.keys.shape[1]
        return Keep.from_topk(score + torch.arange(n) * 0.0, view.budget, view.valid)
'''
    assert "layer_span" not in computation(src).features


def test_q_filters_with_rope_undone_and_the_sign_fixed_by_the_mean_is_q_filters() -> None:
    feats = computation(FILTER).features
    assert {"query_svd", "pre_rope"} <= set(feats), sorted(feats)
    assert "Q-Filters" in _same(FILTER, "B_offline")


SKETCH = HEAD + '''class Sketch(EvictionMethod):
    def select(self, view: LayerView) -> Keep:
        out = []
        for h in range(view.n_kv_heads):
            k = view.keys[h].float() - view.keys[h].float().mean(0)
            g = torch.randn(64, k.shape[0]) / 8.0
            r = torch.linalg.qr(g @ k).R
            d = r.diagonal().abs()
            r = r + torch.diag(torch.where(d < 1e-5, torch.full_like(d, 1e-5), torch.zeros_like(d)))
            out.append(torch.linalg.solve_triangular(r, k.T, upper=True).T.pow(2).sum(-1))
        return Keep.from_topk(torch.stack(out), view.budget, view.valid)
'''


def test_a_guard_on_a_sketch_factor_is_no_hash_bit() -> None:
    feats = computation(SKETCH).features
    assert "leverage" in feats and "hashing" not in feats, sorted(feats)
    # the sign of a random projection of the keys still is one
    signed = SKETCH.replace("out.append(torch.linalg.solve_triangular(r, k.T, upper=True).T.pow(2).sum(-1))",
                            "out.append(((k @ torch.randn(k.shape[-1], 8)) > 0).float().sum(-1))")
    assert "hashing" in computation(signed).features


ROWS = HEAD + '''class Rows(EvictionMethod):
    span = 12

    def select(self, view: LayerView) -> Keep:
        s = view.group(view.attention(reduce="sum"), "mean")
        out = []
        for h in range(view.n_kv_heads):
            x = s[h]
            extra = (-x.numel()) % self.span
            rows = torch.cat([x, x.new_zeros(extra)]).view(-1, self.span)
            pick = rows.sum(dim=1).topk(max(1, view.budget // self.span)).indices
            out.append((pick[:, None] * self.span + torch.arange(self.span)).flatten().clamp_max(x.numel() - 1).unique())
        return Keep(tuple(out))
'''


def test_scores_laid_out_as_rows_of_a_modules_width_are_blocks() -> None:
    assert "block_scores" in computation(ROWS).features
    # rows as wide as a size of the layer are no blocks of tokens
    heads = ROWS.replace(".view(-1, self.span)", ".view(-1, view.n_tokens)")
    assert "block_scores" not in computation(heads).features


# a block gate ported to eviction: each block's mean key against the closing queries, the best blocks plus the
# newest one kept whole
GATE = HEAD + '''class Gate(EvictionMethod):
    query_window = 16
    block = 16

    def select(self, view: LayerView) -> Keep:
        g = view.model.group_size
        out = []
        for h in range(view.n_kv_heads):
            n = int(view.valid_mask()[h].sum())
            nb = n // self.block
            means = view.keys[h, :nb * self.block].float().reshape(nb, self.block, -1).mean(dim=1)
            gate = (view.queries[h * g:(h + 1) * g].float().reshape(-1, means.shape[-1]) @ means.T).sum(0)
            top = gate[:-1].topk(max(0, min(nb - 1, view.budget // self.block - 1))).indices
            idx = (top[:, None] * self.block + torch.arange(self.block)).flatten()
            out.append(torch.cat([idx, torch.arange(n - self.block, n)]).unique())
        return Keep(tuple(out))
'''


def test_crediting_the_block_gate_credits_the_block_key_rule_it_computes() -> None:
    from reviewbench.flags.prior_art import computation_flags

    c = computation(GATE)
    assert {"block_keys", "recent"} <= set(c.features), sorted(c.features)
    credited = DESC.replace("Our own rule.", "A port of MoBA's block gate (Lu et al., 2025, arXiv 2502.13189) to "
                                             "eviction; this is a port, not a new method.")
    for desc, flagged in ((credited, False), (DESC, True)):
        out = computation_matches(c.features, desc, c.paths, board="C")
        assert bool(computation_flags(out, [], GATE)) == flagged, [(m.short_name, m.level, m.credited) for m in out]
