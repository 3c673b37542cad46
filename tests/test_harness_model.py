"""The harness with the real embedded model (SmolLM2-135M) on small inputs."""

import pytest
import torch

from harness.api import EvictionMethod, Keep
from harness.boundary import InProcessMethod
from harness.kv import KVRuntime
from harness.methods import SnapKV, StreamingLLM
from harness.model import load_model
from harness.runner import Engine, MethodRun, run_decode_item, run_prefill_item
from harness.tasks import generate, reasoning_trace

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def eng():
    return Engine(load_model())


def needle(eng, length=600, seed=3, task="niah_single"):
    return generate(task, "dev", 1, eng.n_tokens, length, offset=seed)[0]


def test_the_hook_decodes_exactly_like_the_stock_model(eng):
    ids = eng.tok.apply_chat_template([{"role": "user", "content": "Name three colours."}], add_generation_prompt=True,
                                      return_tensors="pt", return_dict=True)["input_ids"]
    eng.model.set_attn_implementation("sdpa")
    ref = eng.model.generate(ids, max_new_tokens=10, do_sample=False)[0, ids.shape[1]:].tolist()
    eng.model.set_attn_implementation("reviewbench_kv")
    rt = KVRuntime(eng.info.n_layers, eng.info.group_size)
    first = eng.forward(rt, ids[0].tolist(), 0)[-1]
    got, _, _ = eng.generate(rt, first, ids.shape[1], 10)
    assert got == ref[: len(got)] and len(got) >= 5


def _compressed(eng, item, budget_frac):
    ctx, q = eng.segments(item, item.questions[0])
    ids = ctx + q
    rt0 = KVRuntime(eng.info.n_layers, eng.info.group_size)
    rt0.queries.prefill_positions = torch.arange(len(ids) - 32, len(ids))
    last = eng.forward(rt0, ids, 0)[-1]
    rt = rt0.copy()
    run = MethodRun("snapkv", InProcessMethod(SnapKV()))
    from harness.runner import _queries_for

    b = int(budget_frac * len(ids))
    eng.compress(rt, run, [b] * eng.info.n_layers, "A", "prefill", _queries_for(rt0, run, len(ids), None, "A"))
    return rt0, rt, last, len(ids)


def test_positions_continue_from_the_original_length_after_eviction(eng):
    item = needle(eng)
    rt0, rt, last, n = _compressed(eng, item, 0.5)
    assert max(rt.layers[0].lengths()) < n
    ans = item.questions[0].answers[0]
    full, _, _ = eng.generate(rt0.copy(), last, n, 10)
    right, _, _ = eng.generate(rt.copy(), last, n, 10)
    cache_len = max(rt.layers[0].lengths())
    wrong, _, _ = eng.generate(rt.copy(), last, cache_len, 10)  # what a harness that restarts positions would do
    dec = eng.tok.decode
    assert ans in dec(full) and ans in dec(right)
    assert ans not in dec(wrong) or dec(wrong) != dec(right)
    ref = eng.forward(rt0.copy(), full, n)
    ok = eng.forward(rt.copy(), full, n)
    bad = eng.forward(rt.copy(), full, cache_len)
    from harness.runner import fidelity, top_k

    ids, logp = top_k(ref)
    assert fidelity(ids, logp, bad)[0] > 3 * fidelity(ids, logp, ok)[0]


def test_compressed_memory_is_exact_and_falls_with_the_budget(eng):
    item = needle(eng, 400)
    sizes = []
    for frac in (0.5, 0.25, 0.1):
        rt0, rt, _, n = _compressed(eng, item, frac)
        per_entry = eng.info.head_dim * 4 * 2
        assert rt.live_bytes() == sum(sum(l.lengths()) for l in rt.layers) * per_entry
        sizes.append(rt.live_bytes() / rt0.live_bytes())
    assert sizes[0] > sizes[1] > sizes[2] and sizes[2] < 0.11


class HeadSkewed(EvictionMethod):
    """Head 0 keeps twice the budget, head 1 none of its own: ragged, same total."""

    name = "skewed"

    def select(self, view):
        n = view.n_tokens
        two = min(2 * view.budget, n)
        rest = view.budget * view.n_kv_heads - two
        idx = [torch.arange(n - two, n)] + [torch.arange(n - rest // (view.n_kv_heads - 1), n)] * (view.n_kv_heads - 1)
        return Keep(tuple(idx))


def test_head_wise_budgets_are_stored_ragged(eng):
    item = needle(eng, 300)
    rows, _ = run_prefill_item(eng, item, [MethodRun("skewed", InProcessMethod(HeadSkewed()))], "A", "fraction", [0.2])
    full, sk = (next(r for r in rows if r.method == m) for m in ("full", "skewed"))
    assert sk.error is None and sk.kv_bytes is not None and full.kv_bytes is not None
    assert sk.kv_bytes <= 0.21 * full.kv_bytes  # head-wise, and still only the budget's bytes


def test_board_b_answers_several_questions_from_one_compressed_context(eng, monkeypatch):
    item = needle(eng, 400, task="niah_multiquery")
    assert len(item.questions) == 4
    calls = []
    real = eng.forward
    monkeypatch.setattr(eng, "forward", lambda rt, ids, start, last_only=False: calls.append((start, len(ids)))
                        or real(rt, ids, start, last_only))
    rows, _ = run_prefill_item(eng, item, [MethodRun("window", InProcessMethod(StreamingLLM()))], "B_online", "fraction",
                               [0.5])
    assert sum(1 for start, _ in calls if start == 0) == 1  # the context is prefilled once
    assert {r.question for r in rows if r.method == "window"} == {0, 1, 2, 3}
    assert all(r.error is None for r in rows)


class Counting(StreamingLLM):
    name = "counting"
    query_window = 4
    calls = 0

    def on_decode(self, view):
        type(self).calls += 1
        assert view.phase == "decode" and view.queries is not None and view.queries.shape[1] <= 4
        return super().on_decode(view)


def test_board_c_caps_the_cache_while_decoding(eng):
    item = reasoning_trace(0, eng.n_tokens, 48)
    cap = 40
    rows, _ = run_decode_item(eng, item, [MethodRun("counting", InProcessMethod(Counting()))], [cap], [cap])
    row = next(r for r in rows if r.method == "counting")
    full = next(r for r in rows if r.method == "full")
    assert row.error is None and Counting.calls > 0
    per_entry = eng.info.head_dim * 4 * 2
    # a hard cap: never more than cap entries per layer and head, at any step
    assert row.kv_tokens_layer_max is not None and row.kv_tokens_layer_max <= cap
    assert row.kv_bytes_peak is not None and full.kv_bytes is not None
    assert row.kv_bytes_peak <= eng.info.n_layers * eng.info.n_kv_heads * cap * per_entry < full.kv_bytes
    assert row.top1 is not None and row.kl is not None
    assert 0 <= row.top1 <= 1 and row.kl >= 0


class Reconstructs(StreamingLLM):
    name = "reconstructs"
    reconstruction_queries = True
    seen = []

    def select(self, view):
        type(self).seen.append((view.board, None if view.queries is None else view.queries.shape[1]))
        return super().select(view)


def test_b_offline_hands_over_the_reconstruction_pass_and_times_it_apart(eng):
    item = needle(eng, 200, task="niah_multiquery")
    ctx, _ = eng.segments(item, item.questions[0])
    rows, _ = run_prefill_item(eng, item, [MethodRun("r", InProcessMethod(Reconstructs()))], "B_offline", "fraction",
                               [0.5])
    r = next(x for x in rows if x.method == "r")
    assert r.offline_s and r.offline_s > 0 and r.error is None
    board, n_queries = Reconstructs.seen[-1]
    assert board == "B_offline" and n_queries > len(ctx)  # the repeat instruction plus the whole context
    rows, _ = run_prefill_item(eng, item, [MethodRun("r", InProcessMethod(Reconstructs()))], "B_online", "fraction",
                               [0.5])
    assert next(x for x in rows if x.method == "r").offline_s is None and Reconstructs.seen[-1][1] is None


def test_rotate_recovers_the_models_pre_rope_queries(eng):
    """LayerView.rotate(q, -pos) on the hook's post-RoPE queries gives q_proj(hidden) back (Expected Attention)."""
    from harness.api import apply_rope

    assert eng.info.rope_theta is not None
    ids = eng.tok("The quick brown fox jumps over the lazy dog.", add_special_tokens=False)["input_ids"]
    captured = {}
    attn = eng.model.model.layers[3].self_attn
    h = attn.q_proj.register_forward_hook(lambda mod, inp, out: captured.setdefault("pre", out.detach().clone()))
    rt = KVRuntime(eng.info.n_layers, eng.info.group_size)
    rt.queries.prefill_positions = torch.arange(len(ids))
    try:
        eng.forward(rt, ids, 0)
    finally:
        h.remove()
    pre = captured["pre"][0].view(len(ids), eng.info.n_heads, eng.info.head_dim).transpose(0, 1)
    back = apply_rope(rt.queries.prefill[3], -torch.arange(len(ids)), eng.info.rope_theta)
    assert torch.allclose(back, pre.float(), atol=1e-3 * pre.abs().max().item())
