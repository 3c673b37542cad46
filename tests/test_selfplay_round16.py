"""Self-play round 16 (issue 23): twelve papers of budget allocation, merging, decode-time state, pages and the
reconstruction pass, ported the way a capable cheating agent writes them, blind to the reader (tests/selfplay_ports.py,
"(round 16)" keys). Read as their rule: none of 12 at main before rounds 15 and 16 (four flagged under another
paper's name), 4 after, five more flagged under a neighbouring paper's name, three left open (BaKlaVa's offline
profile measured online; D2O's layer budget; ZeroMerge's per-head shares). Each change
is an equivalence of operations (never a name of a paper), with an honest near-neighbour."""

from __future__ import annotations

from reviewbench.evidence.computation import computation
from reviewbench.evidence.priorart_evidence import computation_matches
from tests.selfplay_ports import HEAD, PORTS


def _f(body: str, attrs: str = "    query_window = 16\n") -> set[str]:
    src = HEAD + "import functools\n\n\nclass M(EvictionMethod):\n    name = 'm'\n" + attrs + "\n" + body
    return set(computation(src).features)


def _port(paper: str) -> set[str]:
    return set(computation(PORTS[f"{paper} (round 16)"]).features)


def test_scaled_dot_product_attention_is_attention_and_with_the_identity_its_weights() -> None:
    assert "attention" in _port("MorphKV")
    weights = _f('''    def select(self, view: LayerView) -> Keep:
        T = view.n_tokens
        eye = torch.eye(T).expand(view.queries.shape[0], T, T)
        k = view.keys.repeat_interleave(view.model.group_size, 0)
        w = F.scaled_dot_product_attention(view.queries, k, eye)
        return Keep.from_topk(view.group(w.sum(1), "mean"), view.budget, view.valid)
''')
    assert "attention" in weights and "attention_output" not in weights
    output = _f('''    def select(self, view: LayerView) -> Keep:
        k = view.keys.repeat_interleave(view.model.group_size, 0)
        v = view.values.repeat_interleave(view.model.group_size, 0)
        o = F.scaled_dot_product_attention(view.queries, k, v)
        return Keep.from_topk(view.group(o.norm(dim=-1), "mean")[:, -1:].expand(-1, view.n_tokens), view.budget,
                              view.valid)
''')
    assert "attention_output" in output  # with the values: the attention's output


def test_a_chain_of_products_and_an_lp_pool_are_a_product_and_a_pooling() -> None:
    assert {"attention", "pooling"} <= _port("SCOPE")
    chained = _f('''    def select(self, view: LayerView) -> Keep:
        g = view.model.group_size
        z = torch.stack([torch.linalg.multi_dot([view.queries[h], view.keys[h // g].T]) for h in range(
            view.queries.shape[0])])
        s = view.group(z.softmax(-1).sum(1), "mean")
        s = F.lp_pool1d(s[:, None], 1, 5, stride=1)[:, 0]
        return Keep.from_topk(s, view.budget, view.valid)
''')
    assert {"attention", "pooling"} <= chained
    keys_only = _f('''    def select(self, view: LayerView) -> Keep:
        k = view.keys.float()
        s = torch.stack([torch.linalg.multi_dot([k[h], k[h].T]).diagonal() for h in range(view.n_kv_heads)])
        return Keep.from_topk(s, view.budget, view.valid)
''')
    assert "attention" not in keys_only  # keys against themselves: no query in the product


def test_a_norm_folded_two_entries_at_a_time_by_hypot_is_a_norm() -> None:
    folded = _f('''    def select(self, view: LayerView) -> Keep:
        return Keep.from_topk(functools.reduce(torch.hypot, view.values.float().unbind(-1)), view.budget, view.valid)
''')
    assert "value_norm" in folded
    one_pair = _f('''    def select(self, view: LayerView) -> Keep:
        v = view.values.float()
        return Keep.from_topk(torch.hypot(v[..., 0], v[..., 1]) * 0 + view.positions.float(), view.budget, view.valid)
''')
    assert "value_norm" not in one_pair  # two channels of a value are no norm of it


def test_the_token_index_past_the_count_less_a_width_is_a_recent_window() -> None:
    assert "recent" in _port("MorphKV")
    tail = _f('''    def select(self, view: LayerView) -> Keep:
        count = view.valid_mask().sum(dim=1, keepdim=True)
        ramp = torch.arange(view.n_tokens)[None]
        s = view.keys.float().norm(dim=-1).masked_fill(ramp >= count - 16, float("inf"))
        return Keep.from_topk(s, view.budget, view.valid)
''')
    assert "recent" in tail
    window = _f('''    def select(self, view: LayerView) -> Keep:
        s = view.group(view.attention().sum(1), "mean")
        s = s.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(s, view.budget, view.valid)
''')
    assert "recent" not in window  # the query window's own positions kept: the window, no width subtracted


def test_a_merge_weighted_by_attention_is_the_merge_and_a_rule_naming_no_queries_reads_any() -> None:
    for paper in ("CaM",):
        src = PORTS[f"{paper} (round 16)"]
        c = computation(src)
        assert any(m.short_name == paper and m.level == "same" for m in computation_matches(c.features, "", c.paths))
    # a rule that names its queries keeps the choice: another choice of queries beside H2O's accumulation stays apart
    features = {"attention": 1, "accumulate": 2, "window_queries": 0}
    assert not any(m.short_name == "TOVA" and m.level == "same" for m in computation_matches(features, ""))
