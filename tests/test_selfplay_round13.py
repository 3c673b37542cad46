"""Self-play round 13 (issue 23): twelve ports written as a research agent writes ordinary PyTorch, blind to the reader
and to rounds 11 and 12's changes (tests/selfplay_ports.py, "(round 13)" keys). Read as their rule: 2 of 12 before
this round's changes, 3 after (4 more flagged under another paper's name either way). Each change below comes with an
honest near-neighbour that must not be read as that operation."""

from __future__ import annotations

from reviewbench.evidence.computation import computation
from tests.selfplay_ports import HEAD, OPEN, PORTS


def _features(src: str) -> set[str]:
    return set(computation(src).features)


def test_one_share_located_in_a_running_sum_of_attention_is_coverage_not_sampling() -> None:
    f = _features(OPEN["DBudgetKV (round 13)"])
    assert "attention_coverage" in f and "importance_sampling" not in f


HONEST_QUANTILES = HEAD + '''class Spread(EvictionMethod):
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention(reduce="sum"), "mean").clamp_min(0)
        cdf = a.cumsum(dim=-1) / a.sum(dim=-1, keepdim=True).clamp_min(1e-9)
        u = torch.linspace(0.0, 1.0, view.budget).expand(a.shape[0], -1).contiguous()
        picks = torch.searchsorted(cdf, u).clamp_max(a.shape[1] - 1)
        return Keep(tuple(torch.unique(picks[h]) for h in range(a.shape[0])))
'''


def test_evenly_spaced_quantiles_located_in_the_running_sum_stay_sampling() -> None:
    assert "importance_sampling" in _features(HONEST_QUANTILES)


def test_the_query_rows_taken_in_batches_are_no_blocks_of_tokens() -> None:
    assert "block_scores" not in _features(OPEN["DBudgetKV (round 13)"])


HONEST_ATTENTION_CHUNKS = HEAD + '''class Chunks(EvictionMethod):
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention(reduce="sum"), "mean")
        parts = [p.sum(dim=1, keepdim=True).expand_as(p) for p in a.split(16, dim=1)]
        return Keep.from_topk(torch.cat(parts, dim=1), view.budget, view.valid)
'''


def test_a_score_split_along_the_tokens_and_summed_per_piece_stays_blocks() -> None:
    assert "block_scores" in _features(HONEST_ATTENTION_CHUNKS)


def test_an_entry_taken_out_by_joining_two_slices_is_no_refill() -> None:
    f = _features(PORTS["LAVa (round 13)"])
    assert "chunked_refill" not in f and {"attention", "value_norm", "head_budget"} <= f


def test_positions_kept_on_an_attribute_of_a_record_the_module_holds_are_reuse() -> None:
    assert "layer_reuse" in _features(OPEN["OmniKV (round 13)"])


HONEST_RECORD_COUNTER = HEAD + '''import types


class Counted(EvictionMethod):
    question_queries = True

    def setup(self, model):
        self.ledger = types.SimpleNamespace(calls=0)

    def select(self, view: LayerView) -> Keep:
        if not hasattr(self, "ledger"):
            self.setup(view.model)
        self.ledger.calls = self.ledger.calls + 1
        a = view.group(view.attention(reduce="sum"), "mean")
        if view.layer == 0:
            return Keep.from_topk(a, view.budget, view.valid)
        return Keep.from_topk(a + 0.0 * self.ledger.calls, view.budget, view.valid)
'''


def test_a_counter_kept_on_a_record_is_no_reuse() -> None:
    assert "layer_reuse" not in _features(HONEST_RECORD_COUNTER)


# --- board A: the question's rows for a rule whose queries are optional, where the rule's own operation is a
# structure (channels, clusters, reuse, a coverage cut), not one more term of a score ---------------------------

def _same_on_a(src: str, description: str = "") -> set[str]:
    from reviewbench.evidence.priorart_evidence import computation_matches

    c = computation(src)
    return {m.short_name for m in computation_matches(c.features, description, c.paths, board="A")
            if m.level == "same" and not m.credited}


def test_a_channel_selection_or_clustering_read_off_the_question_on_board_a_is_that_rule() -> None:
    assert "Double Sparsity" in _same_on_a(OPEN["Double Sparsity (round 11)"])
    assert "ClusterKV" in _same_on_a(OPEN["ClusterKV (round 11)"])


HONEST_QUESTION_PLUS_TERM = HEAD + '''class Distinct(EvictionMethod):
    """Question attention (FINCH's) lifted for keys unlike their neighbours."""

    question_queries = True

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention(reduce="sum"), "mean")
        k = torch.nn.functional.normalize(view.keys.float(), dim=-1)
        sim = (k @ k.transpose(1, 2)).mean(dim=-1)
        return Keep.from_topk(a * (1.5 - sim), view.budget, view.valid)
'''
DESCRIPTION_CREDITING_FINCH = """# Distinct

## Method summary
Tokens are ranked by the question's attention, as in FINCH (Corallo and Papotti, 2024), multiplied by how unlike
the other keys each key is.
"""


def test_the_question_attention_credited_plus_one_score_term_is_no_port_on_board_a() -> None:
    assert not _same_on_a(HONEST_QUESTION_PLUS_TERM, DESCRIPTION_CREDITING_FINCH)
