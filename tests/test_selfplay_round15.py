"""Self-play round 15 (issue 23): fifteen papers, eight no earlier round keyed, ported the way a capable cheating agent
writes them, blind to the reader (tests/selfplay_ports.py, "(round 15)" keys). Read as their rule: 1 of 15 before this
round's changes, 11 after (12 after round 16's), three more flagged under a neighbouring paper's name (RocketKV's first stage as SnapKV,
RazorAttention with an online head proxy as WeightedKV, CapKV as Compactor) and MorphKV left open by design (on board C
a window's attention is every method's phase). Each change is an equivalence of operations (never a name of a paper),
with an honest near-neighbour that must not be read as that operation."""

from __future__ import annotations

from reviewbench.evidence.computation import computation
from reviewbench.evidence.stated import structures
from tests.selfplay_ports import HEAD, PORTS


def _f(body: str, attrs: str = "    query_window = 16\n", module: str = "") -> set[str]:
    src = HEAD + "import numpy as np\n" + module + "\n\nclass M(EvictionMethod):\n    name = 'm'\n" + attrs + "\n" + body
    return set(computation(src).features)


def _port(paper: str) -> set[str]:
    return set(computation(PORTS[f"{paper} (round 15)"]).features)


def test_a_weightless_layer_built_in_setup_is_its_functional_call() -> None:
    assert "pooling" in _port("SnapKV")
    layer = _f('''    def setup(self, model) -> None:
        self.smooth = torch.nn.AvgPool1d(7, stride=1, padding=3)

    def select(self, view: LayerView) -> Keep:
        s = view.group(view.attention().sum(1), "mean")
        return Keep.from_topk(self.smooth(s[:, None])[:, 0], view.budget, view.valid)
''')
    assert "pooling" in layer
    built_at_once = _f('''    def select(self, view: LayerView) -> Keep:
        s = view.group(view.attention().sum(1), "mean")
        b = torch.nn.AvgPool1d(8)(s[:, None])[:, 0]
        return Keep.from_topk(b.repeat_interleave(8, dim=-1)[:, : s.shape[-1]], view.budget, view.valid)
''')
    functional = _f('''    def select(self, view: LayerView) -> Keep:
        s = view.group(view.attention().sum(1), "mean")
        b = F.avg_pool1d(s[:, None], 8)[:, 0]
        return Keep.from_topk(b.repeat_interleave(8, dim=-1)[:, : s.shape[-1]], view.budget, view.valid)
''')
    assert built_at_once == functional and "block_scores" in functional  # stride 8 by default: blocks, as F's
    linear = _f('''    def setup(self, model) -> None:
        self.proj = torch.nn.Linear(64, 1)

    def select(self, view: LayerView) -> Keep:
        return Keep.from_topk(self.proj(view.keys.float())[..., 0], view.budget, view.valid)
''')
    assert "pooling" not in linear and "learned_weights" in linear  # a layer with weights is no functional call


def test_a_helper_s_locals_do_not_leak_into_its_caller() -> None:
    src = '''    def _scores(self, view):
        k = view.keys.float()
        return view.group(view.attention().sum(1), "mean") + 0 * k.sum(-1)

    def select(self, view: LayerView) -> Keep:
        k = 5
        s = self._scores(view)
        s = F.max_pool1d(s[:, None], k, stride=1, padding=k // 2)[:, 0]
        return Keep.from_topk(s, view.budget, view.valid)
'''
    assert "quantised" not in _f(src)  # the caller's k is a kernel size, not the helper's keys floored by 2
    floored = _f('''    def select(self, view: LayerView) -> Keep:
        k = view.keys.float()
        s = (k // 0.5).abs().sum(-1)
        return Keep.from_topk(s, view.budget, view.valid)
''')
    assert "quantised" in floored  # keys floored to a grid in the function itself stay a quantiser


def test_log_softmax_by_hand_is_attention_in_log_space() -> None:
    assert "max_attention" in _port("KVzip")
    assert "attention_threshold" in _port("Scissorhands")
    by_hand = _f('''    def select(self, view: LayerView) -> Keep:
        z = view.queries[0].float() @ view.keys[0].float().T
        lp = z - torch.logsumexp(z, dim=-1, keepdim=True)
        return Keep.from_topk(lp.amax(dim=0)[None].expand(view.n_kv_heads, -1), view.budget, view.valid)
''')
    assert "max_attention" in by_hand
    centred = _f('''    def select(self, view: LayerView) -> Keep:
        z = view.queries[0].float() @ view.keys[0].float().T
        lp = z - z.mean(dim=-1, keepdim=True)
        return Keep.from_topk(lp.amax(dim=0)[None].expand(view.n_kv_heads, -1), view.budget, view.valid)
''')
    assert "max_attention" not in centred  # logits minus their mean are no softmax


def test_the_parts_of_std_mean_are_a_spread_and_a_mean() -> None:
    assert "query_statistics" not in _port("TOVA")
    mean_part = _f('''    def select(self, view: LayerView) -> Keep:
        a = view.attention(view.queries[:, -1:])[:, 0]
        return Keep.same_for_all_heads(torch.std_mean(a, dim=0)[1].topk(view.budget).indices, view.n_kv_heads)
''', attrs="    query_window = 1\n")
    assert "head_average" in mean_part and "attention_variance" not in mean_part
    spread = _f('''    def select(self, view: LayerView) -> Keep:
        a = view.attention()
        s, m = torch.var_mean(a, dim=1)
        return Keep.from_topk(view.group(s, "mean"), view.budget, view.valid)
''')
    assert "attention_variance" in spread  # the spread over the queries, per token, is a score of its own


def test_a_schedule_mapped_over_the_layer_index_is_linear() -> None:
    assert "pyramid" in _port("PyramidKV")
    plan = '''    def layer_budgets(self, mean_budget, n_tokens, model):
        n = len(model.attention_layers)
        step = mean_budget / max(1, n - 1)
        return [max(1, int(x)) for x in {}]

    def select(self, view: LayerView) -> Keep:
        return Keep.from_topk(view.group(view.attention().sum(1), "mean"), view.budget, view.valid)
'''
    assert "pyramid" in _f(plan.replace("{}", "map((2 * mean_budget).__sub__, map(step.__mul__, range(n)))"))
    assert "pyramid" not in _f(plan.replace("{}", "map(float, [mean_budget] * n)"))


def test_a_tensor_given_to_full_like_is_only_a_shape() -> None:
    padded = _f('''    def select(self, view: LayerView) -> Keep:
        s = view.keys.float().norm(dim=-1)
        s = torch.cat([s, torch.full_like(s[..., :1], float("-inf"))], dim=-1)
        return Keep.from_topk(s[..., :-1], view.budget, view.valid)
''')
    assert "sinks" not in padded and "key_norm" in padded


def test_attention_masked_by_visibility_against_a_bar_is_a_threshold_a_running_sum_is_not() -> None:
    bar = _f('''    def select(self, view: LayerView) -> Keep:
        z = view.queries[0].float() @ view.keys[0].float().T
        seen = view.positions[0][None, :] <= view.query_positions[:, None]
        p = z.masked_fill(~seen, float("-inf")).softmax(-1)
        hits = (p > 1.0 / seen.sum(-1, keepdim=True)).sum(0).float()
        return Keep.from_topk(hits[None].expand(view.n_kv_heads, -1), view.budget, view.valid)
''')
    assert "attention_threshold" in bar
    assert "attention_threshold" not in _port("DBudgetKV") and "attention_coverage" in _port("DBudgetKV")


def test_a_mask_times_attention_is_no_quota_of_the_budget() -> None:
    assert "attention_threshold" in _port("SimLayerKV")
    quota = _f('''    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention().sum(1), "mean")
        share = (a / a.sum(-1, keepdim=True) * view.budget).floor()
        big = (share >= 1).float()
        return Keep.from_topk(big + 1e-3 * a, view.budget, view.valid)
''')
    assert "attention_threshold" not in quota  # a share of attention times the budget is a count of tokens


def test_the_live_tokens_counted_from_the_newest_back_are_a_recent_window() -> None:
    tail = _f('''    def select(self, view: LayerView) -> Keep:
        live = view.valid_mask()
        back = torch.flip(torch.flip(live.long(), dims=[-1]).cumsum(-1), dims=[-1])
        s = view.keys.float().norm(dim=-1).masked_fill(live & (back <= 16), float("inf"))
        return Keep.from_topk(s, view.budget, view.valid)
''')
    assert "recent" in tail and "sinks" not in tail
    head = _f('''    def select(self, view: LayerView) -> Keep:
        live = view.valid_mask()
        rank = live.long().cumsum(-1)
        s = view.keys.float().norm(dim=-1).masked_fill(live & (rank <= 4), float("inf"))
        return Keep.from_topk(s, view.budget, view.valid)
''')
    assert "sinks" in head and "recent" not in head  # counted from the oldest: the first tokens
    count_minus = _f('''    def select(self, view: LayerView) -> Keep:
        live = view.valid_mask()
        back = live.sum(-1, keepdim=True) - live.long().cumsum(-1)
        s = view.keys.float().norm(dim=-1).masked_fill(live & (back < 16), float("inf"))
        return Keep.from_topk(s, view.budget, view.valid)
''')
    assert "recent" in count_minus


def test_a_histogram_of_scores_is_counts_and_a_floor_is_no_maximum() -> None:
    capkv = set(computation(PORTS["CapKV (round 15)"]).features)
    assert not capkv & {"accumulate", "max_attention", "key_norm"} and "leverage" in capkv
    running = _f('''    def select(self, view: LayerView) -> Keep:
        best = None
        for s in range(0, view.queries.shape[1], 8):
            a = view.attention(view.queries[:, s:s + 8]).amax(dim=1)
            best = a if best is None else torch.maximum(best, a)
        return Keep.from_topk(view.group(best, "max"), view.budget, view.valid)
''')
    assert "max_attention" in running  # the largest over chunks of queries, two tensors at a time


def test_a_z_score_s_spread_of_every_entry_is_a_scale() -> None:
    assert "attention_variance" not in _port("InfiniPot")
    z = _f('''    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention().sum(1), "mean")
        s, m = torch.std_mean(a)
        return Keep.from_topk((a - m) / (s + 1e-8), view.budget, view.valid)
''')
    assert "attention_variance" not in z


def test_a_stream_of_split_pieces_refilling_a_pot_is_a_chunked_refill() -> None:
    assert "chunked_refill" in _port("InfiniPot")
    words = _f('''    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention().sum(1), "mean")
        kept = a[:, :0]
        for w in "x,y".split(","):
            kept = torch.cat([kept, a[:, : len(w)]], dim=-1)
            kept = kept[:, kept[0].topk(min(1, kept.shape[-1])).indices]
        return Keep.from_topk(a, view.budget, view.valid)
''')
    assert "chunked_refill" not in words  # a string's words are no pieces of the tokens


def test_the_structure_reader_still_sees_staged_selection_in_a_port() -> None:
    assert "staged" not in structures(PORTS["TOVA (round 15)"])  # one ranking, its order taken by a sort
