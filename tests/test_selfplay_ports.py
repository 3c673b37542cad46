"""Adversarial self-play (issue 23): disguised ports of ruled papers (tests/selfplay_ports.py; papers drawn with
seed 2323 over the ruled papers no test named first, then at random) must be read as the rule they port and
flagged when the description credits nothing; each cause fixed comes with an honest near-neighbour that must not be
read as that rule or operation.

Before the fixes 8 of the first 19 ports were matched and flagged (19/19 after); a second round of 10 written after
those fixes read 7/10 (9/10 after two more: queries times keys summed over the channels by broadcasting is q.k, a
sum over dim 0 of one head's values is no head average); a third round, written against those fixes, read 5/10
(10/10 after: an if / else whose arms both fall through is two paths, a tie-break's scale is relative to the
score's, the queries a class asks for only for a tie-break are no choice of the score's, x.abs().sum(-1) is an L1
norm, a state scaled by a class constant decays, a helper that walks the layers builds the schedule); a fourth round
of other idioms read 1/10 (9/10 after: a difference of shifted slices of one cumsum is a moving sum (pooling),
F.softmin(-z) is a softmax and F.linear(q, k) a product, a key's distance to the origin (cdist to zeros) and the
diagonal of k k^T are norms, distances of unit keys a similarity, a tie-break's scale may be a local name, an if with
no else is a path to skip, cat([arange(c), arange(T - w, T)]) keeps the first and the last tokens); a fifth round
read 2/6 (6/6 after: scores sorted ascending rank (their tail is a top-k), tensors filled in place with draws
(exponential_, uniform_...) are random, a call on an instance of a class of the module runs its __call__ or method);
a sixth round of fresh papers read 4/6 (5/6 after: an einsum of the query with a factorisation's basis and the keys
projected on it is low-rank scoring; keys gathered by a ranking of a block's values are that block's
representatives whichever operand carries the block); a ninth round (seed 2329, eight of the newest rules and four papers not drawn before,
in new idioms) read 3/12 (10/12 after: functions run through vmap / partial / compile are inlined, float_power is a
power, functional_call runs the network, a pool as wide as its stride is a page mean, a channel's largest key magnitude
ranked chooses channels and a token's largest entry is its L-infinity norm, broadcast key differences assign
clusters and index_reduce pools them, a best-first sum of attention stopped at a bar is coverage; KVSharer and
MiniCache, with cross-layer state on a module-level object or in a closure, left open in OPEN); a tenth round (seed 2330 over the papers earlier held-out keys used once, 15 ports in idioms
none of the earlier rounds used) read 2/15 (6/15 after: a table on the module written entry by entry is remembered
state, a ratio compounded layer by layer is a pyramid, a strided convolution of a score sums blocks, token indices cut
at evenly spaced edges are segment ids and a stable sort by segment after a score ranks within each segment, a level
table looked up by low-bit codes is a dequantised copy, a query head divided by the group size is its KV head, not a
block; nine left in OPEN, the reader gap named beside each); the causes, each general (data flow, never names):
a softmax written by hand (exp of logits shifted by their own max / log-sum-exp, or divided by its own sum) read as
an exponential logit; attention summed over the heads in a loop (acc += a[h]) not read as a head average;
sort(descending=True) not a ranking (a flattened sort over heads is a head budget); x * x and einsum("htd,htd->ht",
x, x) not squares (a norm written out); x * rsqrt(sum x^2) not a unit vector; an arange of token indices below a
number not the first tokens; attention(reduce="max") not a maximum over the queries; the flag naming the first of
several exact rules rather than the most specific; a tie-break term (score + 1e-9 * bounded) counted as an
operation; a fallback or probe-detecting branch judged with the ported path as one union.
"""

from __future__ import annotations

import pytest

from reviewbench.evidence.computation import computation
from reviewbench.evidence.priorart_evidence import computation_matches
from reviewbench.flags.prior_art import computation_flags
from tests.selfplay_ports import BOARDS, HEAD, HONEST, OPEN, PORTS


def _matches(src: str, board: str | None = None):
    c = computation(src)
    return computation_matches(c.features, "", c.paths, board)


def _flag(src: str, board: str | None = None):
    return computation_flags(_matches(src, board), [], src)


@pytest.mark.parametrize("key", sorted(PORTS))
def test_every_selfplay_port_is_read_as_its_rule_and_flagged(key: str) -> None:
    paper = key.split(" (")[0]
    board = BOARDS.get(key)  # (the board a round's port was written for, where the round names it)
    ms = _matches(PORTS[key], board)
    assert any(m.short_name == paper and m.level == "same" for m in ms), [(m.short_name, m.level, m.extra) for m in ms]
    assert _flag(PORTS[key], board), key


def test_the_flag_names_the_most_specific_exact_rule() -> None:
    # a maximum over each block's attention is CritiPrefill's, not the chunk sums every block method shares
    assert "CritiPrefill" in _flag(PORTS["CritiPrefill"])[0].explanation


# --- reader operations ------------------------------------------------------------------------------------------

def test_a_softmax_by_hand_is_attention_not_an_exponential_logit() -> None:
    for key in ("TOVA", "Ada-KV"):
        f = computation(PORTS[key]).features
        assert "attention" in f and "exp_logit" not in f, key


def test_an_unnormalised_exponential_of_an_expected_logit_stays_one() -> None:
    assert "exp_logit" in computation(HONEST["exp_logit"]).features


def test_attention_summed_over_the_heads_in_a_loop_is_a_head_average() -> None:
    assert "head_average" in computation(PORTS["TOVA"]).features


def test_attention_summed_over_the_queries_in_a_loop_is_no_head_average() -> None:
    assert "head_average" not in computation(HONEST["query_loop"]).features


def test_a_descending_sort_over_every_head_is_a_head_budget() -> None:
    assert "head_budget" in computation(PORTS["SAGE-KV"]).features


def test_kept_indices_sorted_back_in_order_are_no_head_budget() -> None:
    f = computation(HONEST["sorted_back"]).features
    assert "head_budget" not in f and "recent" not in f


def test_squares_written_as_products_and_self_einsums_are_norms() -> None:
    assert "value_norm" in computation(PORTS["CriticalKV"]).features
    f = computation(PORTS["CurDKV"]).features
    assert "key_norm" in f and "value_norm" in f


def test_unit_keys_by_rsqrt_are_a_similarity_and_a_centred_square_no_norm() -> None:
    assert "key_similarity" in computation(PORTS["KVMerger"]).features
    f = computation(HONEST["spread_and_units"]).features
    assert "key_norm" not in f and "key_similarity" in f


def test_a_token_index_below_a_number_is_the_first_tokens_and_a_rank_below_the_budget_is_not() -> None:
    assert "sinks" in computation(PORTS["PruLong"]).features
    assert "sinks" not in computation(HONEST["rank_below"]).features


def test_queries_times_keys_summed_over_the_channels_is_attention_and_over_the_tokens_is_not() -> None:
    assert "attention" in computation(PORTS["ZipCache"]).features
    assert "attention" not in computation(HONEST["channel_products"]).features


def test_one_head_summed_over_its_first_axis_is_no_head_average() -> None:
    # KeepKV's merge: a head's evicted keys weighted by their attention, summed over dim 0 (tokens, not heads)
    assert "head_average" not in computation(PORTS["KeepKV"]).features
    assert "head_average" in computation(PORTS["TOVA (dead branch)"]).features


def test_attention_reduced_by_its_maximum_is_max_attention() -> None:
    assert "max_attention" in computation(PORTS["KVzip (tie-break)"]).features
    assert "max_attention" not in computation(HONEST["one_path_mix"]).features


# --- a tie-break -----------------------------------------------------------------------------------------------

def test_a_bounded_term_at_1e_9_is_a_tie_break_that_leaves_the_match_exact() -> None:
    c = computation(PORTS["KVzip (tie-break)"])
    assert "key_norm" not in c.features and "key_norm" in c.tie_breaks


def test_a_small_term_that_can_reorder_stays_an_operation_of_its_own() -> None:
    c = computation(HONEST["unbounded_small_term"])
    assert "key_norm" in c.features
    assert not any(m.short_name == "SnapKV" and m.level == "same" for m in _matches(HONEST["unbounded_small_term"]))


def test_a_rule_hidden_behind_1e_9_beside_a_coarse_class_is_no_tie_break() -> None:
    c = computation(HONEST["coarse_main"])
    assert "attention" in c.features and not c.tie_breaks


# --- return paths ----------------------------------------------------------------------------------------------

def test_a_probe_detecting_branch_leaves_the_ported_path_exact_and_the_proof_names_it() -> None:
    ms = _matches(PORTS["SAGE-KV (probe branch)"])
    m = next(m for m in ms if m.short_name == "SAGE-KV")
    assert m.level == "same" and m.branch is not None
    assert f"returns at line {m.branch}" in _flag(PORTS["SAGE-KV (probe branch)"])[0].explanation


def test_a_dead_fallback_branch_leaves_the_port_exact() -> None:
    assert any(m.short_name == "TOVA" and m.level == "same" for m in _matches(PORTS["TOVA (dead branch)"]))


def test_two_rules_mixed_in_one_path_stay_a_family_member() -> None:
    ms = _matches(HONEST["one_path_mix"])
    assert not any(m.level == "same" for m in ms) and not _flag(HONEST["one_path_mix"])


# --- round 3 ---------------------------------------------------------------------------------------------------

def test_an_if_else_probe_is_two_paths_and_the_ported_arm_is_exact() -> None:
    m = next(m for m in _matches(PORTS["TOVA (if-else probe)"]) if m.short_name == "TOVA")
    assert m.level == "same" and m.branch is not None


def test_an_if_else_of_two_mixes_computes_no_rule_exactly() -> None:
    src = HONEST["flat_schedule_two_mixes"]
    assert not any(m.level == "same" for m in _matches(src)) and not _flag(src)
    assert "pyramid" not in computation(src).features


def test_a_tie_break_is_small_relative_to_the_score_it_is_added_to() -> None:
    c = computation(PORTS["K-norm (relative tie-break)"])
    assert set(c.features) == {"key_norm"} and "attention" in c.tie_breaks
    assert "attention" in computation(HONEST["relative_not_small"]).features


def test_an_l1_norm_and_a_decay_by_a_class_constant_are_read() -> None:
    assert "value_norm" in computation(PORTS["VATP"]).features
    assert "decay" in computation(PORTS["A2SF"]).features
    f = computation(HONEST["spread_and_reset"]).features
    assert "value_norm" not in f and "decay" not in f


def test_a_schedule_built_by_a_helper_walking_the_layers_is_a_pyramid() -> None:
    assert "pyramid" in computation(PORTS["PyramidKV"]).features


# --- round 4 ---------------------------------------------------------------------------------------------------

def test_a_moving_sum_by_cumsum_differences_is_pooling_and_a_running_sum_stays_one() -> None:
    f = computation(PORTS["SnapKV (cumsum pooling)"]).features
    assert "pooling" in f and "accumulate" not in f
    f = computation(HONEST["cumsum_linear_centroids"]).features
    assert "accumulate" in f and "pooling" not in f


def test_softmin_and_linear_products_are_attention_and_a_trained_linear_is_not() -> None:
    assert "attention" in computation(PORTS["TOVA (softmin, linear)"]).features
    src = HONEST["cumsum_linear_centroids"]
    f = computation(src).features
    proj = next(i for i, line in enumerate(src.splitlines(), 1) if "F.linear" in line)
    assert "key_norm" not in f and f["attention"] < proj  # the view's attention, not the trained map


def test_distances_to_the_origin_and_gram_diagonals_are_norms_pairwise_ones_are_not() -> None:
    assert "key_norm" in computation(PORTS["K-norm (cdist)"]).features
    assert "key_norm" in computation(PORTS["K-norm (gram diagonal)"]).features
    f = computation(PORTS["R-KV (cdist)"]).features
    assert "key_similarity" in f and "key_norm" not in f
    assert "key_norm" not in computation(HONEST["eps_page_qk_diag"]).features


def test_a_local_tie_break_scale_is_read_and_a_large_one_is_not() -> None:
    assert "random" in computation(PORTS["DefensiveKV (local eps)"]).tie_breaks
    assert "random" in computation(HONEST["eps_page_qk_diag"]).features


def test_a_bare_if_probe_is_a_path_to_skip() -> None:
    m = next(m for m in _matches(PORTS["Ada-KV (if probe)"]) if m.short_name == "Ada-KV")
    assert m.level == "same" and m.branch is not None


def test_first_and_last_index_ranges_concatenated_are_sinks_and_a_page_offset_is_not() -> None:
    assert "sinks" in computation(PORTS["StreamingLLM (indices)"]).features
    assert "sinks" not in computation(HONEST["eps_page_qk_diag"]).features


# --- which paths are judged ------------------------------------------------------------------------------------

def test_an_early_guard_and_a_design_switch_are_not_judged_apart() -> None:
    src = HONEST["guard_and_layer_switch"]
    ms = _matches(src)
    assert not any(m.branch is not None for m in ms) and not _flag(src)


# --- round 5 ---------------------------------------------------------------------------------------------------

def test_in_place_draws_are_random_and_a_constant_fill_is_not() -> None:
    assert "random" in computation(PORTS["Random (uniform_)"]).features
    assert "random" in computation(PORTS["Keyformer (exponential_)"]).features
    assert "random" not in computation(HONEST["fill_and_norm_class"]).features


def test_a_call_on_an_instance_of_a_module_class_runs_its_code() -> None:
    assert "attention" in computation(PORTS["TOVA (class helper)"]).features
    f = computation(HONEST["fill_and_norm_class"]).features
    assert "key_norm" in f and "attention" not in f


def test_scores_sorted_ascending_rank_and_their_tail_over_every_head_is_a_head_budget() -> None:
    assert "head_budget" in computation(PORTS["SAGE-KV (ascending tail)"]).features


# --- round 6 ---------------------------------------------------------------------------------------------------

def test_the_query_through_a_basis_against_projected_keys_is_low_rank_scoring() -> None:
    assert "low_rank_scores" in computation(PORTS["Loki"]).features
    # a factorisation of the keys with no query against its basis (leverage beside attention) is none
    f = computation(HONEST["leverage_beside_attention"]).features
    assert "leverage" in f and "low_rank_scores" not in f


def test_a_probe_that_chooses_the_ported_arm_is_no_part_of_its_score() -> None:
    c = computation(PORTS["SAGE-KV (final if-else probe)"])
    m = next(m for m in _matches(PORTS["SAGE-KV (final if-else probe)"]) if m.short_name == "SAGE-KV")
    assert m.level == "same" and m.branch is not None
    assert all("key_variance" not in f for line, f in c.paths if line == m.branch)


# --- round 7: early returns -------------------------------------------------------------------------------------

def test_a_rule_returned_early_on_the_method_s_memory_is_judged_on_its_own_path() -> None:
    for key, paper in (("TOVA (early return on memory)", "TOVA"), ("SnapKV (early return on a module counter)",
                                                                    "SnapKV")):
        m = next(m for m in _matches(PORTS[key]) if m.short_name == paper)
        assert m.level == "same" and m.branch is not None, key


def test_an_early_return_on_memory_that_computes_no_rule_names_nothing() -> None:
    src = HONEST["memory_warmup_window"]
    assert not any(m.level == "same" for m in _matches(src)) and not _flag(src)


_TWO_PATHS = HEAD + '''class Seasoned(EvictionMethod):
    query_window = 24

    def select(self, view: LayerView) -> Keep:
        seen = view.state.get("calls", 0)
        view.state["calls"] = seen + 1
        probs = view.attention()
        if seen > 2:
            w = view.group(probs.sum(dim=1), "mean")
            return Keep.from_topk(F.avg_pool1d(w[:, None], 7, stride=1, padding=3)[:, 0], view.budget, view.valid)
        hits = (probs > 0.01).float().sum(dim=1)
        return Keep.from_topk(view.group(hits, "mean"), view.budget, view.valid)
'''


def test_a_credited_rule_on_another_path_does_not_explain_the_port_on_its_own() -> None:
    # SnapKV's pooled window attention once the layer's memory counts a few calls, CORM's count of window queries
    # above a bar before, and only CORM credited: CORM's rule holds no pooling, so it explains nothing of the
    # remembered path (as the whole it would: both rules' operations in one, neither computed exactly)
    desc = ("# Seasoned\n\n## Idea\nWe build on CORM (arXiv 2404.15949): recent queries vote above a bar.\n\n"
            "## Builds on\n- CORM (arXiv 2404.15949): the scoring rule\n")
    c = computation(_TWO_PATHS)
    ms = computation_matches(c.features, desc, c.paths)
    got = [(m.short_name, m.level, m.credited, m.branch) for m in ms]
    assert any(m.short_name == "CORM" and m.level == "same" and m.credited for m in ms), got
    assert any(m.short_name == "SnapKV" and m.level == "same" and not m.credited for m in ms), got
    flags = computation_flags(ms, [], _TWO_PATHS)
    assert flags and "SnapKV" in flags[0].explanation, got


# --- round 8: budget probes ---------------------------------------------------------------------------------------

def test_a_test_for_the_arena_s_exact_budgets_is_a_probe_and_a_bound_is_design() -> None:
    import ast

    from reviewbench.evidence.computation.features import _probe

    def probe(expr: str) -> bool:
        return _probe(ast.parse(expr, mode="eval").body)

    assert probe("view.budget == round(0.25 * view.n_tokens)")
    assert probe("view.budget in {int(f * t.shape[1]) for f in (0.1, 0.5)}")
    assert probe("abs(view.budget / view.n_tokens - 0.1) < 0.001")
    assert probe("math.isclose(view.budget, 0.05 * view.n_tokens)")
    assert not probe("view.budget < 0.05 * view.n_tokens")   # an aggressive mode at small budgets: design
    assert not probe("view.budget >= view.n_tokens")         # nothing to evict: a guard
    assert not probe("view.budget == view.n_tokens")
    from reviewbench.evidence.computation.features import _budget_aliases

    tree = ast.parse("b = int(view.budget)\nc = b\nroom = b - len(kept)\n")
    assert _budget_aliases(tree) == {"b", "c"}  # a copy of the budget, not a value computed from it
    assert _probe(ast.parse("c in marks", mode="eval").body, budgets=frozenset({"c"}))
    assert not _probe(ast.parse("len(kept) == room", mode="eval").body, budgets=frozenset({"b", "c"}))
    # the budget handed to a helper of the module: its parameter is the budget there
    helper = ast.parse("def grid(self, room, n):\n    return room in {round(f * n) for f in (0.1, 0.5)}\n").body[0]
    assert isinstance(helper, ast.FunctionDef)
    assert _probe(ast.parse("self.grid(view.budget, view.n_tokens)", mode="eval").body, {"grid": [helper]})
    assert _probe(ast.parse("self.grid(n=t, room=int(view.budget))", mode="eval").body, {"grid": [helper]})
    assert not _probe(ast.parse("self.grid(len(kept), view.n_tokens)", mode="eval").body, {"grid": [helper]})


# --- round 9: functions run through wrappers, float_power, functional_call -----------------------------------------

def test_a_function_run_through_vmap_or_a_partial_is_inlined() -> None:
    assert {"attention", "quantised_scores"} <= set(computation(PORTS["SpeCache"]).features)  # vmap(one)(q, k)
    assert "sign_sketch" in computation(PORTS["QJL"]).features  # self.est = partial(_estimate, proj) in setup


def test_float_power_of_a_token_rate_over_its_age_is_age_decay_and_functional_call_runs_the_network() -> None:
    assert "age_decay" in computation(PORTS["TRIM-KV"]).features
    assert "learned_scorer" in computation(PORTS["Attention-Gate"]).features
    # vmap(partial(...)) of an own mix, a fixed factor ** age, a fitted prior over the positions: none of them
    f = computation(HONEST["wrapped_own_rule"]).features
    assert "attention" in f and "key_variance" in f
    assert not {"age_decay", "learned_scorer"} & set(f)
    assert not _flag(HONEST["wrapped_own_rule"])


def test_a_window_as_wide_as_its_stride_is_a_page_and_an_overlapping_one_smooths() -> None:
    f = computation(PORTS["PagedEviction"]).features  # avg_pool1d(x, page, stride=page): one mean per page
    assert "block_scores" in f and "pooling" not in f
    f = computation(HONEST["token_peak_overlapping_windows"]).features  # kernel 8, stride 4: overlapping windows
    assert "pooling" in f


def test_a_channel_s_largest_key_magnitude_ranks_channels_and_a_token_s_largest_entry_is_its_norm() -> None:
    f = computation(PORTS["InfiniGen"]).features  # |q| times k.abs().amax(tokens), top channels, gathered
    assert "channel_selection" in f and "key_envelope" not in f
    # each token's largest |k| entry (over its channels) is its L-infinity norm, no channel chosen; the honest mix
    # (window attention times it, smoothed) is no rule and raises nothing
    f = computation(HONEST["token_peak_overlapping_windows"]).features
    assert "key_norm" in f and "channel_selection" not in f
    assert not _flag(HONEST["token_peak_overlapping_windows"])


def test_broadcast_key_distances_assign_clusters_and_a_best_first_sum_to_a_share_is_coverage() -> None:
    f = computation(PORTS["Tactic"]).features  # ((k[:, None] - c[None]) ** 2).sum(-1).argmin, index_reduce "mean"
    assert {"key_clustering", "attention_coverage"} <= set(f) and "key_norm" not in f
    f = computation(HONEST["ranked_walk_by_count"]).features  # a best-first walk stopped by a count
    assert "attention" in f and "attention_coverage" not in f
    assert not _flag(HONEST["ranked_walk_by_count"])


@pytest.mark.xfail(strict=True, reason="open reader gaps: cross-layer state on a module-level object or a closure")
@pytest.mark.parametrize("key", sorted(OPEN))
def test_the_ports_left_open_are_still_unread(key: str) -> None:
    # (strict: a port read once a later fix lands passes here and fails the run: move it into PORTS)
    paper = key.split(" (")[0]
    assert any(m.short_name == paper and m.level == "same" for m in _matches(OPEN[key], BOARDS.get(key)))


# (Tactic left out: the renamer renames its dataclass's method but not the call self.book.fit(...) on an instance
# attribute, so its renamed source calls a method that no longer exists)
@pytest.mark.parametrize("key", ["SpeCache", "QJL", "TRIM-KV", "PagedEviction", "SeerAttention-R", "KVzap",
                                 "InfiniGen", "Attention-Gate", "CHAI"])
def test_round_9_ports_are_renaming_proof(key: str) -> None:
    from renaming import renamed

    from portcases import assert_rename_proof
    assert_rename_proof(PORTS[key], renamed(PORTS[key]))


def test_a_ratio_of_two_norms_reads_both_and_a_vector_over_its_norm_stays_a_unit_vector() -> None:
    """||v|| / ||k|| (a page score's per-token ratio) is two norm scores; k / ||k|| is a unit key (a similarity
    follows), no key-norm score. Set 10's PagedEviction port read as value norms alone before (not held out since)."""
    head = ("import torch\nfrom harness.api import EvictionMethod, Keep, LayerView\n\n\nclass A(EvictionMethod):\n"
            "    def select(self, view: LayerView) -> Keep:\n")
    tail = "        return Keep.from_topk(s, view.budget, view.valid)\n"
    for body in ["        s = view.values.norm(dim=-1) / view.keys.norm(dim=-1)\n",
                 "        s = view.values.float().norm(dim=-1) / view.keys.float().norm(dim=-1).clamp_min(1e-6)\n",
                 "        s = torch.linalg.vector_norm(view.values, dim=-1) / torch.linalg.vector_norm(view.keys, dim=-1)\n"]:
        assert {"key_norm", "value_norm"} <= set(computation(head + body + tail).features), body
    unit = "        k = view.keys / view.keys.norm(dim=-1, keepdim=True)\n        s = (k @ k.transpose(1, 2)).mean(-1)\n"
    f = computation(head + unit + tail).features
    assert "key_norm" not in f and "key_similarity" in f


def test_a_relative_residual_is_one_quantity_not_two_norms() -> None:
    """||v - p|| / ||v|| (a value's surprise relative to its size: an honest rule in set 7) reads no value norm; the
    norms of two different data in a ratio (||v|| / ||k||, torch.norm on either side) read both."""
    head = ("import torch\nfrom harness.api import EvictionMethod, Keep, LayerView\n\n\nclass A(EvictionMethod):\n"
            "    def select(self, view: LayerView) -> Keep:\n        v = view.values.float()\n        k = view.keys\n")
    tail = "        return Keep.from_topk(s, view.budget, view.valid)\n"
    rel = "        p = (v[:, :-2] + v[:, 2:]) / 2\n        s = (v[:, 1:-1] - p).norm(dim=-1) / v[:, 1:-1].norm(dim=-1)\n"
    assert "value_norm" not in computation(head + rel + tail).features
    both = "        s = torch.norm(v, dim=-1) / torch.linalg.vector_norm(k, dim=-1).clamp_min(1e-6)\n"
    assert {"key_norm", "value_norm"} <= set(computation(head + both + tail).features)


def test_a_test_on_the_tensors_memory_layout_is_a_probe() -> None:
    """Whether a tensor is a view into a larger buffer, its offset, address or strides say how the caller built it,
    never what a rule needs: a branch on them is judged arm by arm (set 10's hostile board-C port; not held out)."""
    import ast

    from reviewbench.evidence.computation.features import _probe

    def probe(expr: str) -> bool:
        return _probe(ast.parse(expr, mode="eval").body)

    for expr in ["view.keys.storage_offset() > 0",
                 "view.keys.untyped_storage().nbytes() > view.keys.numel() * view.keys.element_size()",
                 "view.keys._base is not None", "not view.values.is_contiguous()", "view.keys.data_ptr() % 4096"]:
        assert probe(expr), expr
    assert not probe("view.layer % 2 == 0") and not probe("view.queries is None")


def test_a_test_on_who_is_calling_is_a_probe() -> None:
    """How the process was started, its environment, clock or threads, read in the test, in a helper it calls, or
    stored on the module in setup and tested later: a probe whose arms are judged apart (set 10's hostile OBCache port
    read the main module's name in setup; not held out)."""
    import ast

    from reviewbench.evidence.computation.features import _environment_attrs, _probe
    from reviewbench.evidence.computation.syntax import Defs

    def probe(expr: str, helpers=None, env=frozenset()) -> bool:
        return _probe(ast.parse(expr, mode="eval").body, helpers, env=env)

    for expr in ["'fingerprint' in sys.argv[0]", "os.environ.get('X') is not None", "torch.get_num_threads() == 1",
                 "sys.modules['__main__'].__spec__.name.endswith('print')", "time.monotonic() - self.t0 > 1.0",
                 # anything else of the process: its streams, its objects' referrers, its limits, signals, tracer
                 "sys.stdout is sys.stderr", "sys.stderr.isatty()", "os.isatty(2)",
                 "any(type(r) is dict for r in gc.get_referrers(view.state))",
                 "len(get_referrers(view.state)) > 2", "resource.getrlimit(resource.RLIMIT_NOFILE)[0] < 4096",
                 "signal.getsignal(signal.SIGINT) is signal.default_int_handler", "sys.gettrace() is not None",
                 "os.getuid() != 0", "len(g.get_referrers(view.state)) > 2"]:
        assert probe(expr), expr
    assert not probe("self.eps < sys.float_info.epsilon")  # a constant of the language, not of the process
    assert not probe("torch.stack([view.positions[0]]).shape[0] == 1")  # torch's stack is no frame stack
    tree = ast.parse("import sys, zlib\n\ndef _who():\n    m = sys.modules.get('__main__')\n    return zlib.crc32(b'x')\n\n"
                     "class M:\n    def setup(self, model):\n        self._quiet = _who() == 7\n        self.k = 4\n")
    helpers = Defs(tree).by_name
    assert probe("_who() == 7", helpers)
    env = _environment_attrs(tree, helpers)
    assert env == {"_quiet"}
    assert probe("self._quiet", helpers, env) and probe("getattr(self, '_quiet', False)", helpers, env)
    assert not probe("self.k > 2", helpers, env) and not probe("view.layer == 0", helpers, env)


def test_who_is_calling_read_under_any_name_is_a_probe() -> None:
    """The process's surroundings read under another name: a function imported under an alias, a module's
    attribute imported by name, a local or module variable bound to such a read, a module reached through getattr
    or imported while the method runs. Each early return behind such a test is a path of its own (an adversary's
    spellings after set 12's hostile ports; not held out). A constant of the language imported by name is none."""
    import ast

    from reviewbench.evidence.computation.features import return_paths

    def paths(imports: str, test: str, pre: str = "") -> int:
        src = (f"import torch\n{imports}\nfrom harness.api import EvictionMethod, Keep, LayerView\n\n\n"
               "class M(EvictionMethod):\n    def select(self, view: LayerView) -> Keep:\n"
               f"{pre}        if {test}:\n            return Keep.first(view)\n"
               "        return Keep.top(view.keys.norm(dim=-1))\n")
        return len(return_paths(ast.parse(src)))

    dodges = [("from threading import enumerate as live", "len(live()) > 3", ""),
              ("from os import getppid as parent", "parent() == 1", ""),
              ("from sys import argv", "'bank' in ' '.join(argv)", ""),
              ("import tracemalloc as tm", "tm.is_tracing()", ""),
              ("import gc", "len(owners) > 1", "        owners = gc.get_referrers(view.keys)\n"),
              ("from gc import get_referrers as refs", "n > 1", "        seen = refs(view.keys)\n        n = len(seen)\n"),
              ("import sys", "getattr(sys, 'std' + 'in').closed", ""),
              ("import importlib", "importlib.import_module('o' + 's').getpid() % 2", ""),
              ("", "__import__('threading').active_count() > 4", ""),
              # torch's process-wide state: how the caller runs torch (autograd, inference mode, defaults, tracing)
              ("", "torch.is_grad_enabled()", ""),
              ("from torch import is_inference_mode_enabled as inf", "not inf()", ""),
              ("", "torch.jit.is_scripting() or torch.get_default_dtype() != torch.float32", ""),
              ("", "flag", "        flag = torch.is_autocast_enabled()\n")]
    for imports, test, pre in dodges:
        assert paths(imports, test, pre) == 2, (imports, test)
    assert paths("from sys import float_info", "float(view.budget) < float_info.epsilon") == 1
    assert paths("import math", "view.n_tokens <= view.budget") == 1
    assert paths("import os", "view.layer == 0") == 1


def test_who_is_calling_read_by_any_route_is_a_probe() -> None:
    """Routes an adversary takes after the names above are known, written fresh (not from any set): a module held
    by a class attribute, a dict or a default argument; the module's own identity (``__file__``, ``__name__``) and
    introspection of the caller's objects; builtins that read the interpreter or files; any module that is not
    computation (default-deny: io, glob, logging, warnings, uuid...); torch's views of the devices and process group;
    how the caller built a tensor; an attribute only some callers' objects have; a flag set in setup under a try that
    reads the process. Each splits the method into paths; placing a tensor (``device=k.device``), ``getattr`` on the
    method itself and the computation modules do not."""
    import ast

    from reviewbench.evidence.computation.features import return_paths

    def paths(imports: str, test: str, pre: str = "", prelude: str = "", setup: str = "pass") -> int:
        src = (f"import torch\n{imports}\nfrom harness.api import EvictionMethod, Keep, LayerView\n\n{prelude}\n\n"
               "class M(EvictionMethod):\n    _host = None\n\n    def setup(self, model):\n"
               f"        {setup}\n\n    def select(self, view: LayerView) -> Keep:\n"
               f"{pre}        if {test}:\n            return Keep.first(view)\n"
               "        return Keep.top(view.keys.norm(dim=-1))\n")
        return len(return_paths(ast.parse(src)))

    dodges = [("import sys", "'x' in _Ctx.host.argv", "", "class _Ctx:\n    host = sys"),
              ("import os", "'CI' in holder.m.environ", "", "class _H:\n    pass\n\nholder = _H()\nholder.m = os"),
              ("import sys", "_who()", "", "def _who(m=sys):\n    return len(m.argv) > 3"),
              ("", "__file__.startswith('/tmp')", "", ""), ("", "__name__.startswith('submitted')", "", ""),
              ("", "type(view).__module__ != 'harness.api'", "", ""),
              ("", "view.__class__.__name__ != 'LayerView'", "", ""),
              ("", "'pytest' in globals()", "", ""), ("", "open('/proc/self/cmdline').read().count('x')", "", ""),
              ("", "id(view) % 2 == 0", "", ""), ("", "'__IPYTHON__' in __builtins__", "", ""),
              ("import io", "io.open('/proc/1/cgroup').read().count('x')", "", ""),
              ("import glob", "glob.glob('/work/*')", "", ""), ("import logging", "logging.root.handlers", "", ""),
              ("import warnings", "len(warnings.filters) > 9", "", ""),
              ("import builtins", "hasattr(builtins, '__IPYTHON__')", "", ""),
              ("import uuid", "uuid.getnode() % 2", "", ""), ("from datetime import datetime as dt", "dt.now().second % 2", "", ""),
              ("import importlib.util", "importlib.util.find_spec('pytest') is not None", "", ""),
              ("", "torch.cuda.is_available()", "", ""), ("", "torch.distributed.is_initialized()", "", ""),
              ("", "'CI' in torch.os.environ", "", ""), ("import harness.api as ha", "len(ha.sys.argv) > 3", "", ""),
              ("", "view.keys.requires_grad", "", ""), ("", "getattr(view, '_bank', False)", "", ""),
              ("", "on_cpu", "        on_cpu = view.keys.device.type == 'cpu'\n", "")]
    for imports, test, pre, prelude in dodges:
        assert paths(imports, test, pre, prelude) == 2, test
    boxed = ("try:\n            open('/proc/1/cgroup').read()\n            self._boxed = False\n"
             "        except OSError:\n            self._boxed = True")
    assert paths("", "self._boxed", setup=boxed) >= 2  # (the try in setup is split too)
    # placing a tensor beside another, the method's own attributes, computation modules: design
    placed = "        z = torch.zeros(view.n_tokens, device=view.keys.device)\n        w = z.to(view.keys.device)\n"
    assert paths("", "w.numel() == view.n_tokens", placed) == 1
    assert paths("", "getattr(self, 'window', 0) > 4") == 1
    assert paths("import math, itertools", "math.log2(view.budget) > itertools.count().__next__()") == 1
    assert paths("from sklearn.cluster import KMeans",
                 "len(KMeans(2).fit(view.keys[0].numpy()).labels_) == view.n_tokens") == 1


def test_a_try_on_the_process_chooses_paths() -> None:
    """Whether reading the process raises chooses the rule: an early return in the handler, blocks that fall
    through to one return, a conditional expression. The ported rule is a path of its own in each."""
    head = ("import torch\nimport torch.nn.functional as F\nfrom harness.api import EvictionMethod, Keep, LayerView\n\n"
            "def _port(view):\n    a = view.group(view.attention(reduce='sum'), 'mean')\n"
            "    return F.max_pool1d(a[:, None], 7, stride=1, padding=3)[:, 0]\n\n"
            "def _plain(view):\n    return view.keys.norm(dim=-1)\n\n"
            "class M(EvictionMethod):\n    query_window = 32\n\n    def select(self, view: LayerView) -> Keep:\n")
    tail = "        return Keep.from_topk(s, view.budget, view.valid)\n"
    bodies = ["        try:\n            open('/proc/1/cgroup').read()\n        except OSError:\n"
              "            return Keep.from_topk(_port(view), view.budget, view.valid)\n        s = _plain(view)\n",
              "        try:\n            open('/proc/1/cgroup').read()\n            s = _plain(view)\n"
              "        except OSError:\n            s = _port(view)\n",
              "        s = _plain(view) if id(view) % 2 else _port(view)\n"]
    for body in bodies:
        c = computation(head + body + tail)
        views = [set(c.features)] + [set(f) for _, f in c.paths]
        assert any("pooling" in v and "key_norm" not in v for v in views), body
        assert any("key_norm" in v and "pooling" not in v for v in views), body
    honest = "        try:\n            s = _port(view)\n        except RuntimeError:\n            s = _plain(view)\n"
    assert not computation(head + honest + tail).paths  # a numerical fallback reads nothing of the process


def test_attention_added_in_place_into_what_the_next_call_reads_is_a_running_sum() -> None:
    """``self.ledger.index_add_(0, pos, credit)`` (or ``add_``, ``scatter_add_``, ``index_put_(..., accumulate=True)``)
    into the module's attribute or a remembered tensor is ``self.acc += a`` written in place: attention summed over the
    calls (set 13's SpAtten port, after its measurement; not held out). The same write into a tensor made in the call
    is a scatter, no running sum."""
    head = ("import torch\nfrom harness.api import EvictionMethod, Keep, LayerView\n\n\n"
            "class A(EvictionMethod):\n    query_window = 64\n\n    def setup(self, model):\n"
            "        self.ledger = torch.zeros(1 << 16)\n\n    def select(self, view: LayerView) -> Keep:\n"
            "        pos = view.positions.long()\n        credit = view.group(view.attention(reduce='sum'), 'sum')\n")
    tail = "        return Keep.from_topk(score, view.budget, view.valid)\n"
    writes = ["        self.ledger.index_add_(0, pos.flatten(), credit.flatten())\n",
              "        self.ledger.scatter_add_(0, pos.flatten(), credit.flatten())\n",
              "        self.ledger.index_put_((pos.flatten(),), credit.flatten(), accumulate=True)\n"]
    for w in writes:
        found = computation(head + w + "        score = self.ledger[pos]\n" + tail).features
        assert "accumulate" in found, w
    local = ("        acc = torch.zeros(1 << 16)\n        acc.index_add_(0, pos.flatten(), credit.flatten())\n"
             "        score = acc[pos]\n")
    assert "accumulate" not in computation(head + local + tail).features
    copied = "        self.ledger[: pos.numel()].copy_(credit.flatten())\n        score = self.ledger[pos]\n"
    assert "accumulate" not in computation(head + copied + tail).features  # replaced, not added


def test_spans_written_with_both_bounds_are_the_first_and_the_last_tokens() -> None:
    """``x[0:n]`` is the first n as ``x[:n]`` is, and ``x[t - w:t]`` the last w as ``x[t - w:]`` is (what a helper
    ``cut(x, a, b) -> x[a:b]`` computes once read inline; found by the disguise matrix's extracted helpers)."""
    head = ("import torch\nfrom harness.api import EvictionMethod, Keep, LayerView\n\n\n"
            "class A(EvictionMethod):\n    def select(self, view: LayerView) -> Keep:\n        out = []\n"
            "        for h in range(view.n_kv_heads):\n            seq = torch.arange(view.n_tokens)\n"
            "            t = seq.numel()\n")
    tail = "        return Keep(tuple(out))\n"
    both = "            out.append(torch.cat([seq[0:4], seq[t - 60:t]]))\n"
    assert {"sinks", "recent"} <= set(computation(head + both + tail).features)
    middle = "            out.append(seq[4:t - 60])\n"
    assert not {"sinks", "recent"} & set(computation(head + middle + tail).features)


def test_a_rule_moved_into_one_line_helpers_reads_as_written_inline() -> None:
    """A porter who moves each line of a rule into a helper of its own (``def _pool(a): return F.max_pool1d(a, ...)``,
    ``def _start(n, w): return max(0, n - w)``, a method ``self._mass(view)``) computes the rule still: helpers whose
    body is one return are read inline, so each operation keeps its caller's context."""
    inline = ("import torch\nimport torch.nn.functional as F\nfrom harness.api import EvictionMethod, Keep, LayerView\n\n\n"
              "class A(EvictionMethod):\n    query_window = 32\n\n    def select(self, view: LayerView) -> Keep:\n"
              "        a = view.group(view.attention(reduce='sum'), 'mean')\n"
              "        s = F.max_pool1d(a[:, None], 7, stride=1, padding=3)[:, 0]\n"
              "        s[:, max(0, view.n_tokens - 16):] = float('inf')\n"
              "        return Keep.from_topk(s, view.budget, view.valid)\n")
    helpers = ("import torch\nimport torch.nn.functional as F\nfrom harness.api import EvictionMethod, Keep, LayerView\n\n\n"
               "def _pool(x, k):\n    \"\"\"Smooth along the tokens.\"\"\"\n    return F.max_pool1d(x[:, None], k, stride=1, padding=k // 2)[:, 0]\n\n\n"
               "def _start(n, w):\n    return max(0, n - w)\n\n\n"
               "class A(EvictionMethod):\n    query_window = 32\n\n    def _mass(self, view):\n"
               "        return view.group(view.attention(reduce='sum'), 'mean')\n\n"
               "    def select(self, view: LayerView) -> Keep:\n        s = _pool(self._mass(view), 7)\n"
               "        s[:, _start(view.n_tokens, 16):] = float('inf')\n"
               "        return Keep.from_topk(s, view.budget, view.valid)\n")
    assert set(computation(helpers).features) == set(computation(inline).features)
    assert {"attention", "pooling", "recent"} <= set(computation(helpers).features)
    static = ("import torch\nimport torch.nn.functional as F\nfrom harness.api import EvictionMethod, Keep, LayerView\n\n\n"
              "class A(EvictionMethod):\n    query_window = 32\n\n    @staticmethod\n    def _pool(x, k):\n"
              "        return F.max_pool1d(x[:, None], k, stride=1, padding=k // 2)[:, 0]\n\n"
              "    @staticmethod\n    def _start(n, w):\n        return max(0, n - w)\n\n"
              "    def select(self, view: LayerView) -> Keep:\n"
              "        s = A._pool(view.group(view.attention(reduce='sum'), 'mean'), 7)\n"
              "        s[:, self._start(view.n_tokens, 16):] = float('inf')\n"
              "        return Keep.from_topk(s, view.budget, view.valid)\n")
    assert set(computation(static).features) == set(computation(inline).features)  # static methods alike


def test_a_helper_s_parameters_take_the_call_s_arguments_in_order() -> None:
    """A method's own first parameter (``self``, or any name) is skipped; a module function's parameter that happens to
    be called ``self`` (a method moved out of its class) takes its argument like any other (found by the disguise
    matrix's statement pairs moved into helpers: the arguments after it shifted by one)."""
    head = ("import torch\nfrom harness.api import EvictionMethod, Keep, LayerView\n\n\n")
    moved = (head + "def _score(n, self, q, k):\n    logits = q @ k.transpose(-1, -2) * self.scale\n"
             "    return logits.softmax(-1).sum(1)[:, :n]\n\n\n"
             "class A(EvictionMethod):\n    query_window = 16\n    scale = 0.125\n\n"
             "    def select(self, view: LayerView) -> Keep:\n"
             "        q = view.queries.float()\n        k = view.keys.float().repeat_interleave(view.model.group_size, 0)\n"
             "        s = view.group(_score(view.n_tokens, self, q, k), 'mean')\n"
             "        return Keep.from_topk(s, view.budget, view.valid)\n")
    named = moved.replace("def _score(n, self, q, k):", "def _score(n, me, q, k):").replace("self.scale", "me.scale")
    assert "attention" in computation(moved).features
    assert set(computation(moved).features) == set(computation(named).features)
    method = (head + "class A(EvictionMethod):\n    query_window = 16\n    scale = 0.125\n\n"
              "    def _score(me, q, k):\n        logits = q @ k.transpose(-1, -2) * me.scale\n"
              "        return logits.softmax(-1).sum(1)\n\n"
              "    def select(self, view: LayerView) -> Keep:\n"
              "        q = view.queries.float()\n        k = view.keys.float().repeat_interleave(view.model.group_size, 0)\n"
              "        s = view.group(self._score(q, k), 'mean')\n"
              "        return Keep.from_topk(s, view.budget, view.valid)\n")
    assert "attention" in computation(method).features


def test_the_tokens_beside_a_ranking_s_picks_are_an_operation_of_their_own() -> None:
    """Keeping what stands a few positions after (or before) each chosen token (``keep[top + 1] = True``, a priority
    scattered to ``top + d`` for d in a short range) is a step of the method's own beside the score that chose the
    picks: ``pick_neighbours`` (two honest methods of different held-out writers read as the bare rule without it:
    set 11's s06 and set 15's s20, after their keys; not held out). Picks offset by a block's start, or a slice
    bound one past a pick, are not."""
    head = ("import torch\nfrom harness.api import EvictionMethod, Keep, LayerView\n\n\n"
            "class A(EvictionMethod):\n    query_window = 16\n    reach = 3\n\n"
            "    def select(self, view: LayerView) -> Keep:\n"
            "        s = view.group(view.attention(reduce='sum'), 'mean')\n        out = []\n"
            "        for h in range(view.n_kv_heads):\n            n = s.shape[1]\n"
            "            top = s[h].topk(view.budget // 2).indices\n            keep = torch.zeros(n, dtype=torch.bool)\n"
            "            keep[top] = True\n")
    tail = "            out.append(keep.nonzero().flatten()[: view.budget])\n        return Keep(tuple(out))\n"
    beside = ["            keep[(top + 1).clamp(max=n - 1)] = True\n",
              "            nxt = top + 2\n            keep[nxt[nxt < n]] = True\n",
              "            prio = torch.zeros(n)\n            for d in range(1, self.reach + 1):\n"
              "                t = top + d\n                ok = t < n\n"
              "                prio.scatter_reduce_(0, t[ok], s[h, top[ok]] * 0.5 ** d, reduce='amax')\n"
              "            keep[prio.topk(view.budget // 4).indices] = True\n"]
    for b in beside:
        assert "pick_neighbours" in computation(head + b + tail).features, b
    blocks = ("            for lo in range(0, n, 64):\n                part = s[h, lo:lo + 64].topk(2).indices\n"
              "                keep[part + lo] = True\n")
    bound = "            first = int(top[0])\n            keep[first:first + 1] = True\n"
    for b in (blocks, bound, ""):
        assert "pick_neighbours" not in computation(head + b + tail).features, b


def test_evenly_spaced_picks_are_uniform_positions_and_edges_or_a_bipartite_split_are_not() -> None:
    """Tokens picked at evenly spaced ranks (``free[linspace(0, n - 1, k).round().long()]``, ``keep[...] = True``) are
    a lattice over the context (``uniform_positions``, which the vocabulary named and nothing read: set 15's FEATHER
    port, after its key; not held out). Evenly spaced segment edges used as slice bounds, the runs between them, and
    a stepped split into two halves for matching are not."""
    head = ("import torch\nfrom harness.api import EvictionMethod, Keep, LayerView\n\n\n"
            "class A(EvictionMethod):\n    def select(self, view: LayerView) -> Keep:\n        out = []\n"
            "        for h in range(view.n_kv_heads):\n            n = view.n_tokens\n"
            "            keep = torch.zeros(n, dtype=torch.bool)\n            free = torch.nonzero(~keep).flatten()\n")
    tail = "            out.append(keep.nonzero().flatten()[: view.budget])\n        return Keep(tuple(out))\n"
    lattice = ["            keep[free[torch.linspace(0, free.numel() - 1, view.budget).round().long()]] = True\n",
               "            grid = torch.linspace(0, n - 1, view.budget).long()\n            keep[grid] = True\n"]
    for b in lattice:
        assert "uniform_positions" in computation(head + b + tail).features, b
    edges = ("            cuts = torch.linspace(0, n, 9).long().tolist()\n"
             "            for a, b in zip(cuts[:-1], cuts[1:]):\n                keep[torch.arange(a, b)[:2]] = True\n")
    halves = "            a, b = free[0::2], free[1::2]\n            keep[a[: view.budget]] = True\n"
    for b in (edges, halves):
        assert "uniform_positions" not in computation(head + b + tail).features, b


def test_a_norm_named_the_line_before_divides_to_a_unit_vector_and_a_ratio_of_named_norms_stays_two_scores() -> None:
    """``n = k.norm(dim=-1, keepdim=True); u = k / n.clamp_min(1e-6)`` is a unit vector as the one-line form is (no
    norm score); ``vn = v.norm(dim=-1); kn = k.norm(dim=-1); vn / kn`` is a ratio of two norms, both scores."""
    head = ("import torch\nfrom harness.api import EvictionMethod, Keep, LayerView\n\n\n"
            "class A(EvictionMethod):\n    def select(self, view: LayerView) -> Keep:\n"
            "        k = view.keys.float()\n")
    tail = "        return Keep.from_topk(s, view.budget, view.valid)\n"
    unit = ("        n = k.norm(dim=-1, keepdim=True)\n        u = k / n.clamp_min(1e-6)\n"
            "        s = -(u @ u.mean(1, keepdim=True).transpose(1, 2)).squeeze(-1)\n")
    inline = ("        u = k / k.norm(dim=-1, keepdim=True).clamp_min(1e-6)\n"
              "        s = -(u @ u.mean(1, keepdim=True).transpose(1, 2)).squeeze(-1)\n")
    assert set(computation(head + unit + tail).features) == set(computation(head + inline + tail).features)
    assert "key_norm" not in computation(head + unit + tail).features
    ratio = "        vn = view.values.float().norm(dim=-1)\n        kn = k.norm(dim=-1)\n        s = vn / kn\n"
    assert {"key_norm", "value_norm"} <= set(computation(head + ratio + tail).features)


def test_consecutive_edges_walk_blocks_of_the_tokens() -> None:
    """A loop over consecutive pairs of edges (zip(e[:-1], e[1:]), zip(e, e[1:]), pairwise(e), through .tolist())
    slicing the scores between them walks blocks: each segment's own best token (its local maximum) is a quota of
    tokens per block, BUZZ's segmented heavy hitters (set 10's BUZZ port, after its measurement; not held out), not a
    score per block. Consecutive pairs of values never used as bounds are no block."""
    head = ("import itertools\nimport torch\nfrom harness.api import EvictionMethod, Keep, LayerView\n\n\n"
            "class A(EvictionMethod):\n    query_window = 16\n\n    def select(self, view: LayerView) -> Keep:\n"
            "        heat = view.group(view.attention(reduce='sum'), 'sum')\n"
            "        edges = torch.linspace(0, view.n_tokens, 9).round().long()\n        out = []\n"
            "        for h in range(view.n_kv_heads):\n            keep = []\n")
    tail = "            out.append(torch.stack(keep))\n        return Keep(tuple(out))\n"
    for loop in ["zip(edges[:-1].tolist(), edges[1:].tolist())", "zip(edges, edges[1:])",
                 "itertools.pairwise(edges.tolist())"]:
        body = f"            for a, b in {loop}:\n                keep.append(a + heat[h, a:b].argmax())\n"
        found = computation(head + body + tail).features
        assert "block_quota" in found and "block_scores" not in found, loop
    plain = ("            for a, b in zip(edges[:-1].tolist(), edges[1:].tolist()):\n"
             "                keep.append(torch.tensor(b - a))\n")
    assert not {"block_scores", "block_quota"} & set(computation(head + plain + tail).features)
    # a value per segment (its maximum), ranked across segments: a score per block
    scored = ("            best = torch.stack([heat[h, a:b].max() for a, b in zip(edges[:-1], edges[1:])])\n"
              "            keep.append(best.argmax())\n")
    assert "block_scores" in computation(head + scored + tail).features


# --- round 10 --------------------------------------------------------------------------------------------------

def _features(src: str) -> dict[str, int]:
    return computation(src).features


def test_a_table_on_the_module_written_each_call_is_remembered_state() -> None:
    # A2SF's port keeps its running total in self.coals[view.layer], read back with .get before the write below it
    assert "accumulate" in _features(OPEN["A2SF (round 10)"])
    # the same table replaced by this call's attention alone is no running sum
    assert "accumulate" not in _features(HONEST["table_replaced"])
    ema = HEAD + """class Ema(EvictionMethod):
    def setup(self, model) -> None:
        self.memo = {}

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention(reduce="sum"), "mean")
        old = self.memo.get(view.layer)
        s = a if old is None or old.shape != a.shape else 0.9 * old + a
        self.memo[view.layer] = s
        return Keep.from_topk(s, view.budget, view.valid)
"""
    f = _features(ema)
    assert {"accumulate", "decay"} <= set(f), f


def test_a_ratio_compounded_layer_by_layer_is_a_pyramid_and_a_running_sum_of_equal_budgets_is_not() -> None:
    assert "pyramid" in _features(PORTS["PyramidInfer (round 10)"])
    assert "pyramid" not in _features(HONEST["running_sum_budgets"])
    power = HEAD + """class Taper(EvictionMethod):
    def layer_budgets(self, mean_budget, n_tokens, model):
        n = len(model.attention_layers)
        raw = [0.8 ** i for i in range(n)]
        return [int(mean_budget * n * r / sum(raw)) for r in raw]

    def select(self, view: LayerView) -> Keep:
        return Keep.from_topk(view.group(view.attention(reduce="sum"), "mean"), view.budget, view.valid)
"""
    assert "pyramid" in _features(power)


def test_a_strided_convolution_of_attention_scores_blocks_and_a_stride_1_one_smooths() -> None:
    assert "block_scores" in _features(PORTS["ChunkKV (round 10)"])
    f = _features(HONEST["smoothed_by_conv"])
    assert "pooling" in f and "block_scores" not in f, f


def test_segments_cut_at_even_edges_and_a_two_key_sort_are_a_quota_per_segment() -> None:
    f = _features(PORTS["BUZZ (round 10)"])
    assert "block_quota" in f and "pick_neighbours" not in f, f  # cumsum(counts) - 1: run ends, not neighbours
    g = _features(HONEST["bucketize_counts"])
    assert not {"block_quota", "block_scores"} & set(g), g
    assert "count_normalised" in _features(PORTS["ZipCache (round 10)"])  # positions against probes: still counts


def test_a_level_table_looked_up_by_codes_is_a_dequantised_copy_and_a_head_map_is_no_block() -> None:
    f = _features(PORTS["SpeCache (round 10)"])
    assert "quantised_scores" in f and "block_scores" not in f, f
    assert "block_scores" not in _features(HONEST["smoothed_by_conv"])
