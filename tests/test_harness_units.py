"""Harness pieces without the model: interface helpers, the compact store, validation, tasks, metrics."""

import json

import pytest
import torch

from harness.api import Keep, LayerView, ModelInfo, Rewrite, reference_attention
from harness.kv import SPARE, HeadKV, KVRuntime
from harness.methods import SnapKV, StreamingLLM
from harness.runner import MethodError, apply_result, eviction_cost, fidelity, layer_budget, top_k
from harness.tasks import (GENERATORS, SPLIT_SEED, TASK_SEED_OFFSET, boxed_answer, boxed_match, generate, load_longbench_v2, load_math500,
                           string_match_all, string_match_part)

INFO = ModelInfo(name="t", n_layers=1, n_heads=6, n_kv_heads=2, head_dim=8)


def runtime(n=20, heads=2, d=8):
    rt = KVRuntime(1, 3)
    rt.layers[0].heads = [HeadKV(torch.randn(n, d), torch.randn(n, d), torch.arange(n), n) for _ in range(heads)]
    return rt


def view_of(rt, budget, queries=None, qpos=None, board="A", state=None):
    k, v, p, valid = rt.layers[0].padded()
    return LayerView(layer=0, keys=k, values=v, positions=p, queries=queries, budget=budget, board=board,
                     phase="prefill", model=INFO, valid=valid, query_positions=qpos, state=state if state is not None else {})


def test_ragged_keep_really_shrinks_memory_exactly():
    rt = runtime(n=100)
    full = rt.live_bytes()
    assert full == 2 * 100 * 8 * 4 * 2  # heads x tokens x dim x fp32 x (K and V)
    apply_result(rt, 0, Keep((torch.arange(10), torch.arange(30))), budget=20)  # head-wise: 10 + 30 = 2 x 20
    assert rt.layers[0].lengths() == [10, 30]
    assert rt.live_bytes() == (10 + 30) * 8 * 4 * 2 == full * 0.2
    # compact: no padding, no mask; only SPARE free rows per head so that board C's appends do not copy
    assert rt.allocated_bytes() == rt.live_bytes() + 2 * SPARE * 8 * 4 * 2


def test_kept_entries_keep_their_original_positions():
    rt = runtime(n=50)
    apply_result(rt, 0, Keep((torch.tensor([0, 1, 40, 49]), torch.tensor([3, 44, 45, 46]))), budget=4)
    assert rt.layers[0].heads[0].positions().tolist() == [0, 1, 40, 49]
    _, _, pos, valid = rt.layers[0].padded()
    assert pos[1].tolist() == [3, 44, 45, 46] and valid is None


@pytest.mark.parametrize("result, message", [
    (Keep((torch.arange(5),)), "index sets for 2 KV heads"),
    (Keep((torch.arange(5), torch.tensor([0, 99]))), "out of range"),
    (Keep((torch.arange(5), torch.tensor([1, 1]))), "repeated"),
    (Keep((torch.arange(15), torch.arange(15))), "over the budget"),
    (Keep((torch.arange(5).float(), torch.arange(5))), "integer tensor"),
    ("everything", "expected Keep or Rewrite"),
    (Rewrite((torch.randn(3, 8),) * 2, (torch.randn(3, 8),) * 2, (torch.arange(4),) * 2), "positions"),
])
def test_malformed_answers_are_method_errors(result, message):
    with pytest.raises(MethodError, match=message):
        apply_result(runtime(), 0, result, budget=10)


def test_keep_indexes_the_live_rows_of_a_head_that_grew_past_a_shared_buffer():
    """Board C: the reference copy shares the prefill buffers, so the run's decode appends go to a private tail
    and a head's live length exceeds its buffer end. Every live row is a valid index (regression: the check
    used the buffer end, and every board-C baseline failed with 'index out of range')."""
    rt = runtime(n=20)
    ref = rt.copy()  # shares the buffers: appends below cannot go in place
    for t in range(20, 30):
        for h in rt.layers[0].heads:
            h.append(torch.full((1, 8), float(t)), torch.zeros(1, 8), torch.tensor([t]))
    assert rt.layers[0].lengths() == [30, 30]
    apply_result(rt, 0, Keep((torch.tensor([0, 25, 29]), torch.tensor([1, 2, 28]))), budget=3)
    assert rt.layers[0].heads[0].positions().tolist()[:3] == [0, 25, 29]
    assert ref.layers[0].lengths() == [20, 20]


def test_rewrite_replaces_entries():
    rt = runtime()
    apply_result(rt, 0, Rewrite((torch.ones(3, 8),) * 2, (torch.zeros(3, 8),) * 2, (torch.tensor([0, 5, 9]),) * 2), 3)
    assert rt.layers[0].lengths() == [3, 3] and rt.layers[0].heads[0].positions().tolist() == [0, 5, 9]


def test_from_topk_per_head_and_never_padding():
    scores = torch.tensor([[5.0, 1, 4, 3], [1.0, 2, 9, 8]])
    valid = torch.tensor([[True, True, True, True], [True, True, False, False]])
    k = Keep.from_topk(scores, torch.tensor([2, 3]), valid)
    assert k.indices[0].tolist() == [0, 2] and k.indices[1].tolist() == [0, 1]


def test_attention_helper_is_causal_and_grouped():
    keys = torch.randn(2, 6, 8)
    q = torch.randn(6, 2, 8)
    a = reference_attention(q, keys, torch.arange(6).expand(2, 6), torch.tensor([2, 5]), group_size=3)
    assert a.shape == (6, 2, 6)
    assert torch.allclose(a.sum(-1), torch.ones(6, 2))
    assert (a[:, 0, 3:] == 0).all()  # query at position 2 does not see positions 3..5


def test_remember_and_recall_follow_tokens_through_evictions():
    rt = runtime(n=10)
    state = {}
    v = view_of(rt, 5, state=state)
    v.remember("acc", torch.arange(20, dtype=torch.float32).reshape(2, 10))
    apply_result(rt, 0, Keep((torch.tensor([2, 7]), torch.tensor([0, 9]))), budget=2)
    rt.layers[0].heads[0].append(torch.randn(1, 8), torch.randn(1, 8), torch.tensor([10]))
    got = view_of(rt, 5, state=state).recall("acc")
    assert got[0].tolist()[:3] == [2.0, 7.0, 0.0]  # token at position 10 is new: fill value


def test_streaming_llm_keeps_exactly_sinks_and_recent():
    keep = StreamingLLM().select(view_of(runtime(n=40), budget=10))
    assert keep.indices[0].tolist() == [0, 1, 2, 3, *range(34, 40)]


def test_snapkv_keeps_its_observation_window():
    rt = runtime(n=64)
    qpos = torch.arange(32, 64)
    keep = SnapKV().select(view_of(rt, budget=40, queries=torch.randn(6, 32, 8), qpos=qpos))
    for idx in keep.indices:
        assert set(range(32, 64)) <= set(idx.tolist()) and len(idx) == 40


def test_eviction_cost_and_its_oracle():
    imp = {0: torch.tensor([[0.5, 0.3, 0.1, 0.1], [0.25, 0.25, 0.25, 0.25]])}
    lost, oracle = eviction_cost(imp, {0: [torch.tensor([2, 3]), torch.tensor([0, 1])]})
    assert lost == pytest.approx((0.8 + 0.5) / 2) and oracle == pytest.approx((0.2 + 0.5) / 2)
    assert eviction_cost(imp, {0: [torch.arange(4), torch.arange(4)]}) == (0.0, 0.0)


def test_fidelity_metrics():
    ref = torch.randn(5, 30)
    ids, logp = top_k(ref, 8)
    assert fidelity(ids, logp, ref) == (pytest.approx(0.0, abs=1e-6), 1.0)
    kl, top1 = fidelity(ids, logp, -ref)
    assert kl > 0.5 and top1 == 0.0
    exact = (ref.log_softmax(-1).exp() * (ref.log_softmax(-1) - (-ref).log_softmax(-1))).sum(-1).mean()
    assert kl <= float(exact) + 1e-5  # the top-K + tail coarse-graining is a lower bound of the full KL


def test_layer_budget():
    assert layer_budget("fraction", 0.02, 1000) == 20 and layer_budget("fraction", 0.001, 100) == 1
    assert layer_budget("tokens", 128, 10_000) == 128


def _words(text: str) -> int:
    return len(text.split())


@pytest.mark.parametrize("task", ["niah_single", "niah_multikey", "niah_multiquery", "niah_multivalue", "vt", "cwe", "fwe"])
def test_task_generators_are_seeded_fit_and_answerable(task):
    a = generate(task, "dev", 2, _words, 300)
    b = generate(task, "dev", 2, _words, 300)
    assert [i.context for i in a] == [i.context for i in b]
    for item in a:
        assert _words(item.context) <= 300
        for q in item.questions:
            assert q.answers and all(ans in item.context for ans in q.answers)
    assert "test" not in SPLIT_SEED  # the hidden split is never generated from a public constant
    with pytest.raises(ValueError, match="secret seed"):
        generate(task, "test", 2, _words, 300)
    secret = GENERATORS[task]((1 << 40) + (TASK_SEED_OFFSET[task] << 24), _words, 300)  # how harness.split draws
    assert secret.context not in {i.context for i in a}


def test_ruler_scoring():
    assert string_match_all("The numbers are 123 and 456.", ["123", "456", "789"]) == pytest.approx(2 / 3)
    assert string_match_part("It is PARIS", ["paris", "lyon"]) == 1.0
    assert boxed_answer(r"so \boxed{\frac{1}{2}} done") == r"\frac{1}{2}"
    assert boxed_match(r"answer: \boxed{ \dfrac{1}{2} }", [r"\frac{1}{2}"]) == 1.0
    assert boxed_match("no box here 1/2", ["1/2"]) == 0.0


def test_local_dataset_loaders(tmp_path):
    (tmp_path / "data.json").write_text(json.dumps([{"_id": "x1", "domain": "d", "question": "Q?", "choice_A": "a",
                                                     "choice_B": "b", "choice_C": "c", "choice_D": "d", "answer": "C",
                                                     "context": "long text", "length": "short"}]))
    (lb,) = load_longbench_v2(tmp_path / "data.json")
    assert lb.metric == "choice" and lb.questions[0].answers == ["C"] and lb.context == "long text"
    (tmp_path / "test.jsonl").write_text(json.dumps({"problem": "1+1?", "solution": "2", "answer": "2",
                                                     "subject": "a", "level": 1, "unique_id": "u"}) + "\n")
    (m,) = load_math500(tmp_path / "test.jsonl")
    assert m.metric == "boxed" and "boxed" in m.questions[0].text and m.id == "u"


def test_sandbox_commands_for_each_isolation_level(tmp_path):
    from harness.results import MethodLimits
    from harness.sandbox import method_sandbox_command

    argv, ro, env = ["python", "-m", "x"], [tmp_path / "ro"], {"HOME": "/tmp"}
    limits = MethodLimits(memory_bytes=1 << 30, max_procs=32, cpu_s=60)
    bw = method_sandbox_command(argv, ro, env, limits, kind="bubblewrap")
    assert bw[0] == "bwrap" and "--unshare-net" in bw and "--clearenv" in bw and "--bind" not in bw  # nothing writable
    ro_at = bw.index(str(tmp_path / "ro"))
    assert bw[ro_at - 1] == "--ro-bind" and bw[ro_at + 1] == str(tmp_path / "ro")
    assert "--nproc=32" in bw and f"--as={1 << 30}" in bw and "--cpu=60" in bw and bw[-3:] == argv
    assert bw[bw.index("--tmpfs") - 4: bw.index("--tmpfs") - 2] == ["--size", str(limits.tmpfs_bytes)]
    un = method_sandbox_command(argv, ro, env, limits, kind="unshare-net")
    assert un[:3] == ["unshare", "--net", "--"] and "env" in un and "-i" in un and "HOME=/tmp" in un


def test_reasoning_trace_items_are_distinct_and_the_splits_disjoint():
    n_tokens = lambda text: len(text.split())  # noqa: E731
    dev = {i.questions[0].text for i in generate("reasoning_trace", "dev", 12, n_tokens, 64)}
    base = (1 << 40) + (TASK_SEED_OFFSET["reasoning_trace"] << 24)  # a test split's seeds (harness.split)
    test = {GENERATORS["reasoning_trace"](base + i, n_tokens, 64).questions[0].text for i in range(12)}
    assert len(dev) == 12 and len(test) == 12 and not dev & test
