"""Self-play round 14 (issue 23): fifteen mainstream papers (among them the shipped baselines) ported the way a capable
cheating agent writes them, blind to the reader (tests/selfplay_ports.py, "(round 14)" keys). Read as their rule: 2 of
15 before this round's changes, 14 after (KVzip's port, its own pooling beside the rule, left in OPEN). The bank did
not catch them either where a hyper-parameter moved (Ada-KV 0.72, Expected Attention 0.68, H2O 0.42 Jaccard to their
reference on the bank). Each change is an equivalence of operations (never a name of a paper), with an honest
near-neighbour that must not be read as that operation."""

from __future__ import annotations

from reviewbench.evidence.computation import computation
from tests.selfplay_ports import HEAD, OPEN, PORTS


def _f(body: str, attrs: str = "    query_window = 16\n") -> set[str]:
    src = HEAD + "import numpy as np\n\n\nclass M(EvictionMethod):\n    name = 'm'\n" + attrs + "\n" + body
    return set(computation(src).features)


def _port(paper: str) -> set[str]:
    return set(computation(PORTS[f"{paper} (round 14)"]).features)


def test_a_matrix_vector_product_of_keys_and_a_query_is_attention() -> None:
    assert {"attention", "last_query"} <= _port("TOVA")
    fixed = _f('''    def select(self, view: LayerView) -> Keep:
        w = torch.ones(view.keys.shape[-1])
        s = torch.stack([torch.mv(view.keys[h].float(), w) for h in range(view.n_kv_heads)])
        return Keep.from_topk(s, view.budget, view.valid)
''')
    assert "attention" not in fixed  # keys against a constant vector: no query in it


def test_a_softmax_in_base_two_is_attention() -> None:
    assert "attention" in _port("SnapKV")
    assert "attention" not in _f('''    def select(self, view: LayerView) -> Keep:
        s = torch.exp2(view.keys.float().norm(dim=-1))
        return Keep.from_topk(s, view.budget, view.valid)
''')


def test_an_elementwise_squared_error_against_zero_is_a_squared_norm() -> None:
    assert "key_norm" in _port("K-norm")
    against_mean = _f('''    def select(self, view: LayerView) -> Keep:
        k = view.keys.float()
        s = F.mse_loss(k, k.mean(dim=1, keepdim=True).expand_as(k), reduction="none").mean(dim=-1)
        return Keep.from_topk(s, view.budget, view.valid)
''')
    assert "key_norm" not in against_mean  # a distance to the mean key is no norm


def test_a_cosine_embedding_loss_against_the_mean_key_is_keydiff_s_score() -> None:
    assert "mean_key" in _port("KeyDiff")
    neighbours = _f('''    def select(self, view: LayerView) -> Keep:
        k = view.keys[0].float()
        d = F.cosine_embedding_loss(k[1:], k[:-1], torch.ones(k.shape[0] - 1), reduction="none")
        return Keep.from_topk(torch.cat([d, d.new_zeros(1)])[None], view.budget, view.valid)
''')
    assert "key_similarity" in neighbours and "mean_key" not in neighbours  # each key against the one before it


def test_numpy_sliding_windows_maxed_are_pooling_not_a_maximum_over_the_queries() -> None:
    f = _port("SnapKV")
    assert "pooling" in f and "max_attention" not in f
    windows = _f('''    def select(self, view: LayerView) -> Keep:
        from numpy.lib.stride_tricks import sliding_window_view
        a = np.pad(view.attention().sum(1).double().cpu().numpy(), ((0, 0), (2, 2)), constant_values=-np.inf)
        s = torch.from_numpy(sliding_window_view(a, 5, axis=-1).max(axis=-1))
        return Keep.from_topk(view.group(s, "mean"), view.budget, view.valid)
''')
    assert "pooling" in windows and "max_attention" not in windows
    over_queries = _f('''    def select(self, view: LayerView) -> Keep:
        a = view.attention().double().cpu().numpy()
        s = torch.from_numpy(a.max(axis=1))
        return Keep.from_topk(view.group(s, "mean"), view.budget, view.valid)
''')
    assert "max_attention" in over_queries and "pooling" not in over_queries


def test_a_convolution_whose_filters_are_the_queries_is_their_product_with_the_keys() -> None:
    f = _port("SnapKV")
    assert "attention" in f
    smoothing = _f('''    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention().sum(1), "mean")
        s = F.conv1d(a[:, None], torch.ones(1, 1, 5) / 5, padding=2)[:, 0]
        return Keep.from_topk(s, view.budget, view.valid)
''')
    assert "pooling" in smoothing


def test_islice_and_a_bounded_deque_keep_the_first_and_the_newest_entries() -> None:
    assert {"sinks", "recent"} <= _port("StreamingLLM")
    unbounded = _f('''    def select(self, view: LayerView) -> Keep:
        from collections import deque
        out = []
        for h in range(view.n_kv_heads):
            pages = view.valid_mask()[h].nonzero().flatten().tolist()
            out.append(torch.tensor(list(deque(pages))[: view.budget]))
        return Keep(tuple(out))
''')
    assert "recent" not in unbounded  # a queue with no bound keeps everything it is fed


def test_the_interface_s_reference_attention_is_attention_and_a_signed_magnitude_an_absolute_value() -> None:
    assert {"attention", "value_norm"} <= _port("VATP")
    signed_other = _f('''    def select(self, view: LayerView) -> Keep:
        s = (torch.sign(view.values.float()) * view.keys.float()).sum(dim=-1)
        return Keep.from_topk(s, view.budget, view.valid)
''')
    assert "value_norm" not in signed_other  # the sign of one tensor times another is no magnitude


def test_a_straight_line_between_two_budgets_over_the_layers_is_a_pyramid() -> None:
    assert {"layer_budget", "pyramid"} <= _port("PyramidKV")
    flat = _f('''    def layer_budgets(self, mean_budget, n_tokens, model):
        return [mean_budget] * len(model.attention_layers)

    def select(self, view: LayerView) -> Keep:
        return Keep.from_topk(view.group(view.attention().sum(1), "mean"), view.budget, view.valid)
''')
    assert "pyramid" not in flat


def test_a_sign_clipped_at_zero_counts_the_times_attention_beats_a_bar() -> None:
    assert "attention_threshold" in _port("Scissorhands")
    keys = _f('''    def select(self, view: LayerView) -> Keep:
        s = torch.sign(view.keys.float().sum(-1) - 1.0).clamp_min(0) + view.keys.float().norm(dim=-1)
        return Keep.from_topk(s, view.budget, view.valid)
''')
    assert "attention_threshold" not in keys  # keys against a bar: no attention in it


def test_a_distribution_s_draws_are_random_and_a_layer_s_state_entry_written_through_an_alias_is_state() -> None:
    f = _port("Keyformer")
    assert "random" in f and "layer_span" not in f
    assert "layer_span" not in _port("VATP")
    table = _f('''    ends = (0, 64, 128, 192)

    def select(self, view: LayerView) -> Keep:
        start = self.ends[view.layer]
        span = view.positions >= start
        s = view.group(view.attention().sum(1), "mean").masked_fill(~span, float("-inf"))
        return Keep.from_topk(s, view.budget, view.valid)
''')
    assert "layer_span" in table  # a fixed table read by the layer (never written): a start that moves with it


def test_a_flattened_ranking_by_ravel_is_a_head_budget_and_a_symmetric_kernel_no_fitted_table() -> None:
    f = _port("Ada-KV")
    assert "head_budget" in f and "learned_weights" not in f
    table = _f('''    weights = [0.31, 0.77, 0.12, 0.95]

    def select(self, view: LayerView) -> Keep:
        w = torch.tensor(self.weights)[: view.n_kv_heads, None]
        return Keep.from_topk(w * view.group(view.attention().sum(1), "mean"), view.budget, view.valid)
''')
    assert "learned_weights" in table  # per-head numbers with no symmetry: fitted


def test_channels_split_in_pairs_are_no_blocks_of_tokens() -> None:
    assert "block_scores" not in _port("Expected Attention")
    blocks = _f('''    def select(self, view: LayerView) -> Keep:
        H, T, D = view.keys.shape
        b = 16
        k = view.keys[:, : T // b * b].float().reshape(H, T // b, b, D)
        s = k.norm(dim=-1).mean(dim=-1).repeat_interleave(b, dim=1)
        s = torch.cat([s, s.new_zeros(H, T - s.shape[1])], dim=1)
        return Keep.from_topk(s, view.budget, view.valid)
''')
    assert "block_scores" in blocks


def test_a_cosine_matrix_over_an_outer_product_of_norms_is_a_similarity_and_its_norm_only_a_scale() -> None:
    f = _port("R-KV")
    assert "key_similarity" in f and "key_norm" not in f and "pooling" in f and "max_attention" not in f
    norm_term = _f('''    def select(self, view: LayerView) -> Keep:
        k = view.keys[0].float()
        m = k.norm(dim=-1)
        cos = (k @ k.T) / torch.outer(m, m)
        s = m - cos.mean(0)
        return Keep.from_topk(s[None], view.budget, view.valid)
''')
    assert {"key_norm", "key_similarity"} <= norm_term  # a norm also added to the score is a score term


def test_kvzip_s_port_with_a_pooling_of_its_own_stays_open() -> None:
    assert {"reconstruction", "max_attention"} <= set(computation(OPEN["KVzip (round 14)"]).features)


# --- reading the interface's reference_attention exposed two honest methods of earlier sets (sets 9 and 13) to rules
# they do not compute; the causes, each general, with neighbours written here (not those bundles) ----------------

def test_two_tokens_scores_compared_pair_by_pair_are_a_tournament_not_a_bar() -> None:
    tournament = _f('''    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention().sum(1), "mean")
        out = []
        for h in range(a.shape[0]):
            order = a[h].argsort()
            first, second = order[0::2], order[1::2][: order[0::2].numel()]
            lose = torch.where(a[h][second] > a[h][first[: second.numel()]], first[: second.numel()], second)
            alive = torch.ones_like(a[h], dtype=torch.bool)
            alive[lose] = False
            out.append(alive.nonzero().flatten()[: view.budget])
        return Keep(tuple(out))
''')
    assert "attention_threshold" not in tournament
    bar = _f('''    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention().sum(1), "mean")
        hits = (a > 2 * a.mean(dim=-1, keepdim=True)).float()
        return Keep.from_topk(hits + 1e-3 * a, view.budget, view.valid)
''')
    assert "attention_threshold" in bar  # attention against a bar made of its own mean stays a threshold


def test_a_recalled_counter_is_what_was_stored_not_a_remembered_score() -> None:
    counter = _f('''    def select(self, view: LayerView) -> Keep:
        tier = view.recall("tier")
        heard = view.recall("heard") + view.group(view.attention(reduce="sum"), "sum")
        young = tier < 2
        score = heard.masked_fill(young, float("inf"))
        tier = tier + 1
        view.remember("tier", tier)
        view.remember("heard", heard)
        return Keep.from_topk(score, view.budget, view.valid)
''')
    assert "attention_threshold" not in counter and {"attention", "accumulate"} <= counter
    remembered_score = _f('''    def select(self, view: LayerView) -> Keep:
        heard = view.recall("heard") + view.group(view.attention(reduce="sum"), "sum")
        strong = (heard > 0.5).float()
        view.remember("heard", heard)
        return Keep.from_topk(strong + 1e-3 * heard, view.budget, view.valid)
''')
    assert "attention_threshold" in remembered_score  # accumulated attention against a bar stays a threshold


def test_asking_for_every_query_and_reading_only_rows_chosen_by_a_ranking_is_no_sum_over_all() -> None:
    relays = _f('''    def select(self, view: LayerView) -> Keep:
        qpos = view.query_positions
        last = qpos >= qpos.max() - 15
        a = view.group(view.attention(view.queries[:, last]).sum(1), "mean")
        top = a[0].topk(8).indices
        pick = torch.isin(qpos, view.positions[0][top])
        hop = view.group(view.attention(view.queries[:, pick]).sum(1), "mean")
        return Keep.from_topk(a + 0.5 * hop, view.budget, view.valid)
''', attrs="    query_window = 1 << 16\n")
    assert "accumulate" not in relays and "attention" in relays
    assert "accumulate" in _port("H2O")  # rows newer than a remembered stamp, summed call after call: every query
