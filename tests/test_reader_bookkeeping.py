"""Issue 23: a value kept in ``view.state`` is an accumulation only when it carries data (a score, keys, values);
positions kept across calls (the newest position seen, the step a probe is recognised by) are bookkeeping about the
calls. Read as an accumulation, a port that keeps such a note beside a published rule looked like that rule plus an
operation of its own and was never named.

Every snippet is written for this test (none is a held-out or calibration bundle)."""

from __future__ import annotations

from reviewbench.evidence.computation import computation
from reviewbench.evidence.priorart_evidence import computation_matches

HEAD = "import torch\n\nfrom harness.api import EvictionMethod, Keep, LayerView\n\n\n"

# the key-norm rule, with a note of the furthest position each layer has seen (what a probe detector compares)
NOTED = HEAD + '''class FarthestNote(EvictionMethod):
    def select(self, view: LayerView) -> Keep:
        last = view.state.get("far")
        view.state["far"] = int(view.positions.amax())
        fresh = last is None or int(view.positions.amax()) <= last
        size = view.keys.float().pow(2).sum(-1).sqrt()
        return Keep.from_topk(-size if fresh else -size, view.budget, view.valid)
'''

# attention summed into the state call after call: an accumulation
SUMMED = HEAD + '''class Running(EvictionMethod):
    query_window = 8

    def select(self, view: LayerView) -> Keep:
        now = view.group(view.attention().sum(dim=1), "mean")
        before = view.state.get("tally")
        if before is not None and before.shape == now.shape:
            now = now + before
        view.state["tally"] = now
        return Keep.from_topk(now, view.budget, view.valid)
'''

# the positions a ranking chose, remembered: a selection, which the reader does not call bookkeeping
CHOSEN = HEAD + '''class Remembered(EvictionMethod):
    def select(self, view: LayerView) -> Keep:
        size = view.keys.float().norm(dim=-1)
        pick = size.topk(min(view.budget, size.shape[-1]), dim=-1).indices
        view.state["picked"] = view.positions.gather(-1, pick)
        return Keep.from_topk(-size, view.budget, view.valid)
'''


def test_positions_kept_across_calls_are_no_accumulation_and_the_rule_is_named():
    f = computation(NOTED).features
    assert "accumulate" not in f and "key_norm" in f
    same = [m.short_name for m in computation_matches(f, "") if m.level == "same"]
    assert "K-norm" in same


def test_a_score_kept_across_calls_is_an_accumulation():
    assert "accumulate" in computation(SUMMED).features


def test_a_remembered_selection_still_counts_as_carried_state():
    assert "accumulate" in computation(CHOSEN).features


# a count of the calls kept in the state: bookkeeping too
COUNTED = HEAD + '''class Counted(EvictionMethod):
    def select(self, view: LayerView) -> Keep:
        n = view.state.get("n", 0)
        view.state["n"] = n + 1
        view.state["ready"] = n > 3
        return Keep.from_topk(view.keys.float().norm(dim=-1), view.budget, view.valid)
'''


def test_a_count_of_the_calls_or_a_flag_in_the_state_is_no_accumulation():
    f = computation(COUNTED).features
    assert "accumulate" not in f and "key_norm" in f
