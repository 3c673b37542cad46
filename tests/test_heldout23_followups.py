"""After held-out set 23 was measured and its key read (issue 23): the changes its misses and false flags showed, each
general, each with a neighbour written here (none of the set's bundles is used). Set 23 does not measure them."""

from __future__ import annotations

from reviewbench.evidence.computation import computation
from reviewbench.evidence.priorart_evidence import computation_matches
from tests.selfplay_ports import HEAD


def _f(body: str, attrs: str = "    query_window = 32\n") -> set[str]:
    return set(computation(HEAD + "class M(EvictionMethod):\n    name = 'm'\n" + attrs + "\n" + body).features)


TREND = '''    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention(), "mean")                       # (H, N, T)
        t = view.query_positions.float()[None, :, None].expand_as(a)
        n = a.shape[1]
        t_mean = t.mean(1)
        a_mean = a.mean(1)
        dt = t - t_mean[:, None, :]
        slope = (dt * (a - a_mean[:, None, :])).sum(1) / (dt * dt).sum(1).clamp_min(1e-9)
        return Keep.from_topk(a_mean + 8.0 * slope, view.budget, view.valid)
'''


def test_a_least_squares_slope_of_attention_over_the_steps_is_a_trend_not_a_variance() -> None:
    f = _f(TREND)
    assert "attention_trend" in f and "attention_variance" not in f
    spread = _f('''    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention(), "mean")
        a_mean = a.mean(1)
        var = ((a - a_mean[:, None, :]) ** 2).mean(1)
        return Keep.from_topk(a_mean + var.sqrt(), view.budget, view.valid)
''')
    assert "attention_variance" in spread and "attention_trend" not in spread


def test_on_board_b_offline_the_reconstruction_pass_stands_for_a_structural_rule_s_window() -> None:
    # a rule whose own operation is a structure (channel selection) read off the reconstruction pass's queries
    feats = {"attention": 3, "channel_selection": 4, "reconstruction": 0, "sinks": 5}
    ms = computation_matches(feats, "", board="B_offline")
    assert any(m.short_name == "Double Sparsity" and m.level == "same" and not m.extra for m in ms)
    # the same features on board B_online (no reconstruction pass there): the pass is an operation of its own
    assert not any(m.short_name == "Double Sparsity" and m.level == "same"
                   for m in computation_matches(feats, "", board="B_online"))


def test_on_board_b_offline_the_reconstruction_pass_with_one_more_score_term_stays_a_family_member() -> None:
    # KVzip's pass with a redundancy term beside it (an honest method crediting KVzip and adding a term) is no port of
    # the paper whose rule is attention plus that term
    feats = {"attention": 3, "key_similarity": 4, "reconstruction": 0}
    ms = computation_matches(feats, "", board="B_offline")
    assert not any(m.level == "same" and "key_similarity" in m.matched for m in ms), \
        [(m.short_name, m.level, m.extra) for m in ms]


def test_where_the_description_credits_kvzip_s_pass_it_is_that_paper_s_operation_not_the_board_s_queries() -> None:
    # KVzip's pass and maximum credited, blocks of its scores kept whole: the pass stays the credited paper's operation
    # (what the code adds beside a credited rule is judged as anywhere: ``_beside_credited``), not the board's queries
    feats = {"attention": 3, "max_attention": 3, "block_scores": 5, "reconstruction": 0, "sinks": 6}
    desc = ("# Spans\n\n## Method summary\nWe use KVzip's reconstruction scores (arXiv 2505.23416) and keep spans "
            "of tokens whole.\n\n## Builds on\n- KVzip (arXiv 2505.23416): the reconstruction pass and its maximum.\n")
    credited = {m.short_name: m for m in computation_matches(feats, desc, board="B_offline")}
    assert "reconstruction" in credited["CritiPrefill"].extra  # the credited pass is no query choice of the board's
    plain = {m.short_name: m for m in computation_matches(feats, "", board="B_offline")}
    assert plain["CritiPrefill"].level == "same" and not plain["CritiPrefill"].extra


def test_counts_per_head_made_of_attention_handed_to_from_topk_are_head_budgets() -> None:
    shares = _f('''    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention().sum(1), "mean")                  # (H, T)
        reach = a[:, : a.shape[-1] // 2].sum(-1)                         # how far back each head reads
        w = reach / reach.sum()
        counts = (w * view.budget * view.n_kv_heads).floor().long().clamp(1, a.shape[-1])
        return Keep.from_topk(a, counts, view.valid)
''')
    assert "head_budget" in shares
    uniform = _f('''    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention().sum(1), "mean")
        k = min(view.budget, a.shape[-1])
        return Keep.from_topk(a, k, view.valid)
''')
    assert "head_budget" not in uniform  # one count for every head, from the budget and the length alone


LADDER = '''    shares = {}

    def _tier(self, layer):
        return min(len(self.shares) - 1, layer * len(self.shares) // 24)

    def layer_budgets(self, mean_budget, n_tokens, model):
        n = len(model.attention_layers)
        raw = [self.shares[min(len(self.shares) - 1, i * len(self.shares) // n)] for i in range(n)]
        return [max(1, int(mean_budget * r * n / sum(raw))) for r in raw]

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention().sum(1), "mean")
        return Keep.from_topk(a + 1e-3 * self._tier(view.layer), view.budget, view.valid)
'''


def test_a_hand_set_ladder_whose_size_another_hook_reads_is_a_schedule_not_fitted_numbers() -> None:
    ladder = _f(LADDER.replace("shares = {}", "shares = (1.6, 1.2, 0.7, 0.5)"))
    assert not ladder & {"learned_weights", "learned_gate"}
    searched = _f(LADDER.replace("shares = {}", "shares = (0.9, 1.7, 0.6, 1.3)"))
    assert "learned_weights" in searched  # no order with depth: a searched or fitted table
