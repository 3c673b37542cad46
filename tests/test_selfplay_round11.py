"""Self-play round 11 (issue 23): the reader operations its ports needed, each with an honest near-neighbour that
must not be read as that operation. The ports themselves are in tests/selfplay_ports.py ("(round 11)" keys) and run
through test_selfplay_ports.py; before these changes the reader read 3 of the 15 as their rule, after them 10 (two
more flagged under another paper's name, three left in OPEN with the gap named)."""

from __future__ import annotations

from reviewbench.evidence.computation import computation
from tests.selfplay_ports import HEAD, OPEN, PORTS


def _features(src: str) -> set[str]:
    return set(computation(src).features)


# --- a generator helper: what it yields is what the loop over it binds ------------------------------------------

def test_a_generator_yielding_attention_rows_and_counts_is_read_element_by_element() -> None:
    f = _features(PORTS["CORM (round 11)"])  # for row, seen in self._rows(view): heaviside(row - alpha / seen)
    assert {"attention", "attention_threshold", "window_queries"} <= f


def test_a_generator_yielding_ranked_cluster_ids_is_no_attention_threshold() -> None:
    f = _features(OPEN["ClusterKV (round 11)"])  # for c in self._order(face): who == c
    assert "attention_threshold" not in f and "head_budget" not in f


HONEST_GENERATOR = HEAD + '''class Rows(EvictionMethod):
    query_window = 16

    def _rows(self, view):
        a = view.attention()
        for j in range(a.shape[1]):
            yield a[:, j], j

    def select(self, view: LayerView) -> Keep:
        acc = torch.zeros(view.model.n_heads, view.n_tokens)
        for row, j in self._rows(view):
            acc += row * (1.0 + j)
        return Keep.from_topk(view.group(acc, "mean"), view.budget, view.valid)
'''


def test_attention_rows_summed_from_a_generator_carry_no_threshold() -> None:
    f = _features(HONEST_GENERATOR)
    assert "attention" in f and "attention_threshold" not in f


# --- heaviside, addcmul, exp(log_softmax): library spellings of what is written out elsewhere --------------------

HONEST_STEP_ON_POSITIONS = HEAD + '''class Opening(EvictionMethod):
    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention(reduce="sum"), "mean")
        late = torch.heaviside(view.positions.float() - 4.0, torch.zeros(()))
        return Keep.from_topk(a + 1e3 * (1 - late), view.budget, view.valid)
'''


def test_a_unit_step_of_positions_is_no_attention_threshold() -> None:
    assert "attention_threshold" not in _features(HONEST_STEP_ON_POSITIONS)


def test_e_of_a_squared_minus_mean_squared_by_addcmul_is_the_attention_variance() -> None:
    assert "attention_variance" in _features(PORTS["CAKE (round 11)"])


HONEST_ADDCMUL_RUNNING = HEAD + '''class Weighted(EvictionMethod):
    def select(self, view: LayerView) -> Keep:
        a = view.attention()                                     # (Hq, N, T)
        w = torch.linspace(0.5, 1.0, a.shape[1])[None, :, None]
        acc = torch.addcmul(torch.zeros_like(a), a, w).sum(dim=1)  # weights the rows: newer rows count more
        return Keep.from_topk(view.group(acc, "mean"), view.budget, view.valid)
'''


def test_attention_times_weights_added_by_addcmul_is_no_variance() -> None:
    f = _features(HONEST_ADDCMUL_RUNNING)
    assert "attention" in f and "attention_variance" not in f


def test_exp_of_log_softmax_is_attention_not_an_exponential_logit() -> None:
    f = _features(OPEN["TokenSelect (round 11)"])
    assert "attention" in f and "exp_logit" not in f


# --- norms as a cosine's denominator, a mean by nanmean, vecdot -----------------------------------------------------

def test_keys_against_their_nan_mean_by_vecdot_over_two_norms_is_keydiff_not_a_key_norm() -> None:
    f = _features(PORTS["KeyDiff (round 11)"])
    assert "mean_key" in f and "key_norm" not in f


HONEST_TWO_NORMS = HEAD + '''class Sizes(EvictionMethod):
    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention(reduce="sum"), "mean")
        s = a * (view.keys.float().norm(dim=-1) * view.values.float().norm(dim=-1))
        return Keep.from_topk(s, view.budget, view.valid)
'''


def test_a_key_norm_times_a_value_norm_stays_two_norms() -> None:
    f = _features(HONEST_TWO_NORMS)
    assert {"key_norm", "value_norm"} <= f


# --- a power iteration over the queries' Gram matrix ---------------------------------------------------------------

def test_a_recursive_power_iteration_on_the_queries_gram_is_their_principal_direction() -> None:
    assert "query_svd" in _features(PORTS["Q-Filters (round 11)"])


HONEST_QUERY_SPREAD = HEAD + '''class Spread(EvictionMethod):
    query_window = 32

    def select(self, view: LayerView) -> Keep:
        q = view.queries.float()                                 # (Hq, N, D)
        g = view.model.group_size
        out = []
        for h in range(view.n_kv_heads):
            r = q[h * g:(h + 1) * g].reshape(-1, q.shape[-1])
            gram = r.T @ r / r.shape[0]
            out.append((view.keys[h].float() @ gram * view.keys[h].float()).sum(-1))
        return Keep.from_topk(torch.stack(out), view.budget, view.valid)
'''


def test_a_queries_gram_used_once_is_no_power_iteration() -> None:
    assert "query_svd" not in _features(HONEST_QUERY_SPREAD)


# --- pairwise wins, one head's flatten, a group's rows ----------------------------------------------------------------

def test_counting_pairwise_wins_of_one_score_is_a_rank_and_one_heads_flatten_no_head_budget() -> None:
    f = _features(PORTS["LagKV (round 11)"])
    assert {"minmax_norm", "key_variance"} <= f and "attention_threshold" not in f and "head_budget" not in f


HONEST_ABOVE_A_BAR = HEAD + '''class Above(EvictionMethod):
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        a = view.attention()                                      # (Hq, N, T)
        bar = a.mean(dim=-1, keepdim=True)
        hits = (a[:, :, None, :] > bar[:, None, :, :]).float().sum(dim=(1, 2))
        return Keep.from_topk(view.group(hits, "mean"), view.budget, view.valid)
'''


def test_attention_against_another_tensor_broadcast_stays_a_threshold() -> None:
    assert "attention_threshold" in _features(HONEST_ABOVE_A_BAR)


HONEST_FLAT_OVER_HEADS = HEAD + '''class Pool(EvictionMethod):
    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention(reduce="sum"), "mean").masked_fill(~view.valid_mask(), float("-inf"))
        H, T = a.shape
        top = a.flatten().topk(min(view.budget * H, int(view.valid_mask().sum()))).indices
        return Keep(tuple(torch.sort(top[top // T == h] % T).values for h in range(H)))
'''


def test_a_flatten_over_every_head_stays_a_head_budget() -> None:
    assert "head_budget" in _features(HONEST_FLAT_OVER_HEADS)


def test_one_kv_heads_group_of_queries_reduced_over_its_rows_is_no_head_average() -> None:
    assert "head_average" not in _features(OPEN["ClusterKV (round 11)"])


# --- a selection handed to a store the module holds, read back by other layers ----------------------------------

def test_a_selection_kept_through_closure_accessors_and_served_to_later_layers_is_reuse() -> None:
    assert "layer_reuse" in _features(PORTS["GemFilter (round 11)"])


HONEST_LOGGED = HEAD + '''def _recorder():
    seen = []
    def log(x):
        seen.append(int(x.numel()))
    return log, seen


class Logged(EvictionMethod):
    def setup(self, model) -> None:
        self.log, self.seen = _recorder()

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention(reduce="sum"), "mean")
        picked = a[0].topk(min(view.budget, a.shape[1])).indices
        if view.layer == 0:
            self.log(picked)
        return Keep.same_for_all_heads(picked, view.n_kv_heads)
'''


def test_a_selection_only_logged_is_no_reuse() -> None:
    assert "layer_reuse" not in _features(HONEST_LOGGED)


# --- board C: ``select`` runs at decode time ----------------------------------------------------------------------

BLOCK_PEAKS_ON_C = HEAD + '''class Peaks(EvictionMethod):
    query_window = 8

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention(), "mean").amax(dim=1)    # (H, T): each token's peak over the newest rows
        H, T = a.shape
        n = T // 16
        blocks = a[:, : n * 16].reshape(H, n, 16).amax(dim=-1)   # a block's score: its strongest token
        keep = blocks.repeat_interleave(16, dim=1)
        score = torch.cat([keep, torch.full((H, T - n * 16), float("inf"))], dim=1)
        return Keep.from_topk(score, view.budget, view.valid)
'''


def _on_board(src: str, board: str) -> list:
    from reviewbench.evidence.priorart_evidence import computation_matches

    c = computation(src)
    return computation_matches(c.features, "", c.paths, board=board)


def test_a_decode_time_block_rule_run_from_select_on_board_c_is_that_rule() -> None:
    names = {m.short_name for m in _on_board(BLOCK_PEAKS_ON_C, "C") if m.level == "same"}
    assert "SeerAttention-R" in names
    assert "SeerAttention-R" not in {m.short_name for m in _on_board(BLOCK_PEAKS_ON_C, "A")}


def test_a_window_attention_on_board_c_is_no_rule_whose_one_distinction_is_decode_time() -> None:
    ms = _on_board(OPEN["MorphKV (round 11)"], "C")
    assert not any(m.short_name in ("MorphKV", "SCOPE") for m in ms)
