"""Board C's decode protocol on the real embedded model: a layer asks the method only when it reaches its cap and
then gives back a block (every due layer in one call); the cap is hard per layer (and per head where asked);
methods are budgeted from the cap, not from the prompt."""

import pytest
import torch

from harness.api import EvictionMethod, Keep, ModelInfo
from harness.boundary import InProcessMethod
from harness.methods import H2O, PyramidKV, StreamingLLM
from harness.model import load_model
from harness.runner import Engine, MethodRun, decode_block, run_decode_item
from harness.tasks import reasoning_trace

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def eng():
    return Engine(load_model())


class Recording(InProcessMethod):
    """A trusted handle that records every round trip: its layers, budgets and query positions."""

    def __init__(self, method):
        super().__init__(method)
        self.calls: list[list[tuple[int, int, list[int]]]] = []

    def call_layers(self, op, views):
        if op == "on_decode":
            self.calls.append([(v.layer, v.budget, [] if v.query_positions is None else v.query_positions.tolist())
                               for v in views])
        return super().call_layers(op, views)


def _prompt_len(eng, item):
    ctx, q = eng.segments(item, item.questions[0])
    return len(ctx) + len(q)


def test_a_layer_at_its_cap_evicts_a_block_and_every_due_layer_goes_in_one_call(eng):
    item = reasoning_trace(1, eng.n_tokens, 72)
    n = _prompt_len(eng, item)
    cap = n + 8
    handle = Recording(H2O())
    rows, _ = run_decode_item(eng, item, [MethodRun("h2o", handle)], [cap], [cap])
    row = next(r for r in rows if r.method == "h2o")
    assert row.error is None and row.kv_tokens_layer_max is not None and row.kv_tokens_layer_max <= cap
    block = decode_block(cap)
    steps = 72 - 1 - (cap - n)  # decode steps once the cap is reached
    # once per block of steps, not before every token (the old protocol: one call per step past the cap)
    assert 1 <= len(handle.calls) <= steps // block + 1
    layers = list(eng.info.attention_layers)
    for call in handle.calls:
        assert sorted(layer for layer, _, _ in call) == layers  # uniform budgets: every layer due at once
        assert {budget for _, budget, _ in call} == {cap - block}  # back to the cap minus a block
    # H2O accumulates per step: each call sees every query since the previous one (no gap in layer 0's positions)
    seen = [set(q) for q in (next(p for layer, _, p in call if layer == layers[0]) for call in handle.calls)]
    for before, now in zip(seen, seen[1:]):
        assert min(now) <= max(before) + 1
    assert min(seen[0]) == 0  # the first call also hands the prompt's queries (H2O scores them too)


class Lopsided(StreamingLLM):
    """Overrides layer_budgets: twice the cap in the first two layers, less elsewhere, the sum within the total."""

    name = "lopsided"

    def layer_budgets(self, mean_budget: int, n_tokens: int, model: ModelInfo) -> list[int]:
        n = len(model.attention_layers)
        return [2 * mean_budget] * 2 + [mean_budget - 4 * mean_budget // (n - 2) - 1] * (n - 2)


def test_layer_budgets_over_the_per_layer_cap_are_refused_with_one_line(eng):
    item = reasoning_trace(2, eng.n_tokens, 24)
    cap = _prompt_len(eng, item) + 4
    rows, _ = run_decode_item(eng, item, [MethodRun("lopsided", InProcessMethod(Lopsided()))], [cap], [cap])
    row = next(r for r in rows if r.method == "lopsided")
    assert row.error is not None and "\n" not in row.error
    assert f"layer_budgets gives layer 0 {2 * cap} tokens, over the per-layer cap {cap}" in row.error


class OneHeadHoards(EvictionMethod):
    """Keeps every token in head 0 and the rest of the layer's budget in the others: within the layer's total,
    over a per-head cap."""

    name = "hoard"

    def select(self, view):
        h = view.n_kv_heads
        n0 = int(view.valid_mask()[0].sum())
        rest = max(0, (view.budget * h - n0) // max(1, h - 1))
        return Keep((torch.arange(n0),) + tuple(torch.arange(min(rest, int(view.valid_mask()[i].sum())))
                                                for i in range(1, h)))


def test_a_per_head_cap_refuses_a_head_over_it_and_the_layer_cap_allows_it(eng):
    item = reasoning_trace(3, eng.n_tokens, 40)
    cap = _prompt_len(eng, item) + 4
    per_layer, _ = run_decode_item(eng, item, [MethodRun("hoard", InProcessMethod(OneHeadHoards()))], [cap], [cap])
    per_head, _ = run_decode_item(eng, item, [MethodRun("hoard", InProcessMethod(OneHeadHoards()))], [cap], [cap],
                                  per_head=True)
    assert next(r for r in per_layer if r.method == "hoard").error is None
    err = next(r for r in per_head if r.method == "hoard").error
    assert err is not None and "head 0" in err and f"over the per-head cap {cap - decode_block(cap)}" in err


def test_pyramidkv_is_budgeted_from_the_cap_so_its_two_cap_rows_differ(eng):
    item = reasoning_trace(4, eng.n_tokens, 40)
    n = _prompt_len(eng, item)
    caps = [n + 4, n + 20]  # both above the prompt: budgeting from the prompt made both rows the same run
    run = MethodRun("pyramidkv", InProcessMethod(PyramidKV()))
    for cap in caps:
        assert max(eng.layer_budgets(run, cap, n, cap=cap)) <= cap
    rows, _ = run_decode_item(eng, item, [run], caps, caps)
    got = {r.budget: r for r in rows if r.method == "pyramidkv"}
    assert all(r.error is None for r in got.values())
    assert got[caps[0]].kv_tokens_layer_max != got[caps[1]].kv_tokens_layer_max
    assert all(r.kv_tokens_layer_max is not None and r.kv_tokens_layer_max <= b for b, r in got.items())
    assert (got[caps[0]].kl, got[caps[0]].kv_bytes_peak) != (got[caps[1]].kl, got[caps[1]].kv_bytes_peak)


def test_board_c_results_carry_their_own_harness_version_and_older_bars_are_stale():
    """Board C's protocol (a block per due layer) changed after version 2: its bars, stored benchmarks and
    references of the per-token protocol must never be compared with the new ones; other boards are unmoved."""
    from harness.evaluate import reference_key
    from harness.results import HARNESS_VERSION, RunConfig, harness_version
    from reviewbench.arena import Board
    from reviewbench.bars import BarsFile, stale_reason

    assert harness_version("C") != HARNESS_VERSION
    assert {harness_version(b) for b in ("A", "B_online", "B_offline")} == {HARNESS_VERSION}
    c, a = RunConfig(board="C", methods=["h2o"]), RunConfig(board="A", methods=["snapkv"])
    assert reference_key(c, "m", "id", None)["harness"] == harness_version("C")
    assert reference_key(a, "m", "id", None)["harness"] == HARNESS_VERSION
    board = Board(name="C", budget_kind="tokens", phase="decode", query_aware=False, budgets=[2048, 4096])
    assert board.harness_board == "C"
    bars = BarsFile.model_construct(harness_board="C", split_hash="s", harness_version=HARNESS_VERSION,
                                    budgets=[2048, 4096])
    assert "harness version" in (stale_reason(bars, board, "s", harness_version("C")) or "")
    fresh = bars.model_copy(update={"harness_version": harness_version("C")})
    assert stale_reason(fresh, board, "s", harness_version("C")) is None
