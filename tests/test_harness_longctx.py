"""Long contexts: nothing is T x T, chunked computation equals the unchunked one, a context past the model's
trained positions is warned about, and board C's cap is a hard cap on a real run."""

import re
import warnings
from pathlib import Path

import pytest
import torch

import harness.api as api
from harness.api import LayerView, ModelInfo, reference_attention
from harness.boundary import InProcessMethod
from harness.families import loaded
from harness.kv import PREFILL_SPARE, KVRuntime
from harness.methods import H2O, KVzip, SnapKV, StreamingLLM
from harness.runner import Engine, MethodRun, importance, run_decode_item


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def dense_attention(q, k, kpos, qpos, g, valid=None, scale=None, window=None):
    """The textbook formula on the whole N x T matrix at once (the reference the chunked code must match)."""
    kk = k.repeat_interleave(g, dim=0).float()
    logits = torch.einsum("hnd,htd->hnt", q.float(), kk) * (scale if scale is not None else q.shape[-1] ** -0.5)
    kp = kpos.repeat_interleave(g, dim=0)[:, None, :]
    if qpos is not None:
        hide = kp > qpos[None, :, None]
        if window is not None:
            hide |= kp <= qpos[None, :, None] - window
        logits = logits.masked_fill(hide, float("-inf"))
    if valid is not None:
        logits = logits.masked_fill(~valid.repeat_interleave(g, dim=0)[:, None, :], float("-inf"))
    return logits.softmax(-1).nan_to_num(0.0)


@pytest.mark.parametrize("window", [None, 5])
@pytest.mark.parametrize("ragged", [False, True])
def test_chunked_attention_equals_the_dense_formula_whatever_the_chunk(window, ragged):
    g, h_kv, t, n, d = 3, 2, 23, 17, 8
    gen = torch.Generator().manual_seed(0)
    q, k = torch.randn(g * h_kv, n, d, generator=gen), torch.randn(h_kv, t, d, generator=gen)
    kpos = torch.arange(t).expand(h_kv, t).clone()
    valid = None
    if ragged:
        valid = torch.ones(h_kv, t, dtype=torch.bool)
        valid[1, 15:] = False
    qpos = torch.arange(t - n, t)
    ref = dense_attention(q, k, kpos, qpos, g, valid, 0.3, window)
    for chunk in (1, 4, 1000):
        got = reference_attention(q, k, kpos, qpos, g, valid, chunk, scale=0.3, window=window)
        assert torch.allclose(got, ref, atol=1e-6)
        assert torch.allclose(reference_attention(q, k, kpos, qpos, g, valid, chunk, scale=0.3, window=window,
                                                  reduce="sum"), ref.sum(1), atol=1e-5)
        assert torch.allclose(reference_attention(q, k, kpos, qpos, g, valid, chunk, scale=0.3, window=window,
                                                  reduce="mean"), ref.mean(1), atol=1e-6)
        assert torch.allclose(reference_attention(q, k, kpos, qpos, g, valid, chunk, scale=0.3, window=window,
                                                  reduce="max"), ref.amax(1), atol=1e-6)


def test_the_chunk_shrinks_with_the_context_and_the_result_does_not_change(monkeypatch):
    g, h_kv, t, d = 2, 2, 50, 4
    q, k = torch.randn(g * h_kv, t, d), torch.randn(h_kv, t, d)
    kpos = torch.arange(t).expand(h_kv, t)
    whole = reference_attention(q, k, kpos, torch.arange(t), g, reduce="sum")
    monkeypatch.setattr(api, "CHUNK_ELEMENTS", g * h_kv * t * 3)  # three query rows per chunk
    assert torch.allclose(reference_attention(q, k, kpos, torch.arange(t), g, reduce="sum"), whole, atol=1e-5)


def view_of(k, v, q, qpos, g=3):
    h_kv, t, d = k.shape
    info = ModelInfo(name="t", n_layers=1, n_heads=g * h_kv, n_kv_heads=h_kv, head_dim=d, rope_theta=10000.0)
    return LayerView(layer=0, keys=k, values=v, positions=torch.arange(t).expand(h_kv, t).clone(), queries=q,
                     budget=t // 4, board="A", phase="prefill", model=info, query_positions=qpos)


def test_accumulating_methods_score_exactly_as_with_the_full_matrix():
    """H2O (sum over every prompt query) and KVzip (max over the repeat queries) reduce as they go; their
    scores are those of the full N x T attention matrix."""
    gen = torch.Generator().manual_seed(1)
    h_kv, t, d, g = 2, 40, 8, 3
    k, v = torch.randn(h_kv, t, d, generator=gen), torch.randn(h_kv, t, d, generator=gen)
    q = torch.randn(g * h_kv, t, d, generator=gen)
    view = view_of(k, v, q, torch.arange(t))
    full = dense_attention(q, k, view.positions, torch.arange(t), g)
    h2o = view.group(full.sum(1), "sum")
    view.state.clear()
    assert torch.allclose(H2O().select(view).indices[0], Keep_top(h2o, view)[0])
    rep = view_of(k, v, torch.randn(g * h_kv, 30, d, generator=gen), None)
    dense = dense_attention(rep.queries, k, rep.positions, None, g).reshape(h_kv, g, 30, t).amax(dim=(1, 2))
    dense[:, :4] = float("inf")
    got = KVzip().select(rep)
    for h in range(h_kv):
        assert torch.equal(got.indices[h], dense[h].topk(rep.budget).indices.sort().values)


def Keep_top(acc, view):
    """H2O's selection from accumulated scores: the recent half is kept, the rest by score."""
    scores = acc.clone()
    recent = int(view.budget * H2O.recent_share)
    scores[:, view.n_tokens - recent:] = float("inf")
    return [scores[h].topk(view.budget).indices.sort().values for h in range(view.n_kv_heads)]


def peak_rss() -> int:
    return int(re.search(r"VmHWM:\s+(\d+)", Path("/proc/self/status").read_text()).group(1)) * 1024  # type: ignore[union-attr]


def reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")


def test_attention_over_every_prompt_query_never_holds_t_by_t():
    """8,192 queries over 8,192 keys, 2 query heads: the matrix alone would be 512 MiB."""
    t, d = 8192, 16
    q, k = torch.randn(2, t, d), torch.randn(1, t, d)
    kpos = torch.arange(t)[None]
    reset_peak()
    before = peak_rss()
    out = reference_attention(q, k, kpos, torch.arange(t), group_size=2, reduce="sum")
    grew = peak_rss() - before
    assert out.shape == (2, t) and grew < 160 * 1024**2, grew
    assert torch.allclose(out.sum(1), torch.full((2,), float(t)), rtol=1e-4)  # every query's row sums to 1


def test_importance_is_summed_in_chunks_and_equals_the_dense_sum(monkeypatch):
    rt = KVRuntime(1, 3)
    from harness.kv import compact_head

    gen = torch.Generator().manual_seed(2)
    rt.layers[0].heads = [compact_head(torch.randn(30, 8, generator=gen), torch.randn(30, 8, generator=gen),
                                       torch.arange(30)) for _ in range(2)]
    fut = {0: torch.randn(6, 7, 8, generator=gen)}
    k = torch.stack([h.keys() for h in rt.layers[0].heads])
    dense = dense_attention(fut[0], k, torch.arange(30).expand(2, 30), None, 3).sum(1)
    want = dense.reshape(2, 3, 30).amax(1)
    monkeypatch.setattr(api, "CHUNK_ELEMENTS", 6 * 30 * 2)  # two future queries per chunk
    assert torch.allclose(importance(rt, fut, 3)[0], want, atol=1e-5)


# --- chunked prefill ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fam,chunk", [("llama", 16), ("gemma3", 7), ("gemma3", 24), ("qwen3_5", 16),
                                       ("jamba", 16), ("falcon_h1", 11)])
def test_a_prompt_fed_in_chunks_equals_the_model_fed_the_same_chunks(fam, chunk):
    """The harness's chunked prefill against the unmodified model fed the same chunks through its own cache,
    and against the harness in one pass (recurrent scans may differ between one pass and continued passes in
    transformers' own reference kernels, so the like-for-like comparison is the strict one)."""
    from transformers import DynamicCache

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eng = Engine(loaded(fam))
    ids = torch.randint(3, 250, (70,), generator=torch.Generator().manual_seed(1)).tolist()
    model = eng.model
    model.set_attn_implementation("sdpa")
    with torch.no_grad():
        cache = DynamicCache(config=model.config)
        stock = torch.cat([model(input_ids=torch.tensor([ids[a: a + chunk]]), cache=cache, use_cache=True,
                                 position_ids=torch.arange(a, min(a + chunk, 70))[None]).logits[0]
                           for a in range(0, 70, chunk)])
    model.set_attn_implementation("reviewbench_kv")
    want = torch.arange(50, 70)
    got = {}
    for c in (None, chunk):
        eng.prefill_chunk = c
        rt = KVRuntime(eng.info.n_layers, eng.info.group_size)
        rt.queries.prefill_positions = want
        got[c] = (eng.forward(rt, ids, 0), rt)
    logits, rt = got[chunk]
    assert torch.allclose(logits, stock, atol=1e-5, rtol=0), float((logits - stock).abs().max())
    assert torch.allclose(logits, got[None][0], atol=1e-3)
    one_pass = got[None][1]
    assert rt.live_bytes() == one_pass.live_bytes()
    for layer in eng.info.attention_layers:  # the queries a method asked for, whichever way the prompt came
        assert rt.queries.prefill[layer].shape[1] == len(want)
        assert torch.allclose(rt.queries.prefill[layer], one_pass.queries.prefill[layer], atol=1e-3)
    if fam != "gemma3":  # the cache was allocated once for the whole prompt (plus the answer's rows): no regrowth
        assert all(h.k.shape[0] == len(ids) + PREFILL_SPARE for layer in rt.layers for h in layer.heads)


def test_a_context_longer_than_the_trained_positions_is_warned_about():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eng = Engine(loaded("llama", max_positions=64))
    assert eng.info.max_positions == 64
    rt = KVRuntime(eng.info.n_layers, eng.info.group_size)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        eng.forward(rt, list(range(3, 50)), 0, last_only=True)
        assert not caught
        eng.forward(rt, list(range(3, 30)), 47, last_only=True)
    assert len(caught) == 1 and "64 positions the model was trained for" in str(caught[0].message)


def test_prefill_memory_grows_linearly_with_the_context():
    """A tiny model, so the KV cache (and small activations) is all that grows: at each length the peak above
    what was held before stays within a few KV caches, where one T x T float matrix per head alone would be
    4 x 64 MiB at 4,096 tokens."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eng = Engine(loaded("llama", max_positions=1 << 15))
    for t in (1024, 4096):
        ids = torch.randint(3, 250, (t,), generator=torch.Generator().manual_seed(t)).tolist()
        rt = KVRuntime(eng.info.n_layers, eng.info.group_size)
        rt.queries.prefill_positions = torch.arange(t - 32, t)
        reset_peak()
        before = peak_rss()
        eng.forward(rt, ids, 0, last_only=True)
        grew = peak_rss() - before
        kv = rt.live_bytes()
        assert grew < 3 * kv + 32 * 1024**2, (t, grew, kv)
        del rt


# --- board C: the cap is hard ----------------------------------------------------------------------------------------
@pytest.mark.slow
def test_board_c_never_holds_more_than_the_cap_in_any_layer_at_any_step():
    """On the embedded model, a real decode run at a small cap: after every forward pass, no layer's heads
    hold more than the cap (on average per head, what the cap limits, and the reported maximum agrees)."""
    from harness.model import load_model
    from harness.tasks import reasoning_trace

    eng = Engine(load_model())
    item = reasoning_trace(0, eng.n_tokens, 24)
    cap = 64
    capped: set[int] = set()  # the runtimes a method compressed: every forward on them is under the cap
    seen: list[int] = []
    real_forward, real_compress = eng._forward, eng.compress

    def watched(rt, ids, start, last_only):
        out = real_forward(rt, ids, start, last_only)
        if id(rt) in capped:
            seen.append(max(-(-sum(layer.lengths()) // max(1, len(layer.lengths()))) for layer in rt.layers))
        return out

    def compress(rt, *args, **kwargs):
        capped.add(id(rt))
        return real_compress(rt, *args, **kwargs)

    eng._forward = watched  # type: ignore[method-assign]
    eng.compress = compress  # type: ignore[method-assign]
    runs = [MethodRun(n, InProcessMethod(m, n)) for n, m in (("window", StreamingLLM()), ("snapkv", SnapKV()))]
    rows, ref = run_decode_item(eng, item, runs, [cap], [cap])
    assert ref.n_prompt > cap  # the prompt itself is over the cap: evicted before decoding starts
    entry = 2 * eng.info.head_dim * 4
    for name in ("window", "snapkv"):
        row = next(r for r in rows if r.method == name)
        assert row.error is None and row.kv_tokens_layer_max is not None and row.kv_tokens_layer_max <= cap
        assert row.kv_bytes_peak <= eng.info.n_layers * eng.info.n_kv_heads * cap * entry
    steps = len(ref.questions[0].gen) - 1
    assert len(seen) == 2 * steps and max(seen) <= cap and max(seen) >= cap - 1


# --- on a GPU (skipped without CUDA) --------------------------------------------------------------------------------
ON_GPU_METHOD = '''
import torch
from harness import EvictionMethod, Keep, LayerView


class GpuOnly(EvictionMethod):
    """Keeps the most recent tokens, and refuses to run anywhere but on a GPU."""

    name = "gpu_only"
    query_window = 8

    def select(self, view: LayerView) -> Keep:
        if not (view.keys.is_cuda and view.queries.is_cuda and view.positions.is_cuda):
            raise RuntimeError(f"the layer arrived on {view.keys.device}")
        return Keep.from_topk(view.positions.float() + view.attention(reduce="sum").sum() * 0, view.budget, view.valid)
'''


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_on_cuda_a_sandboxed_method_scores_on_the_gpu_end_to_end(tmp_path, monkeypatch):
    """Board A on the GPU: the in-process method and a sandboxed one whose own process moves the host-shared
    layer to its GPU (it raises anywhere else), with a long chunked prefill whose peak memory stays linear."""
    from harness.boundary import SandboxedMethod
    from harness.tasks import generate

    folder = tmp_path / "gpu_only"
    folder.mkdir()
    (folder / "method.py").write_text(ON_GPU_METHOD)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eng = Engine(loaded("qwen3_5", device="cuda", max_positions=1 << 16))
    sandboxed = SandboxedMethod(str(folder), device="cuda")
    try:
        item = generate("niah_single", "dev", 1, eng.n_tokens, 600, offset=0)[0]
        from harness.runner import run_prefill_item

        rows, _ = run_prefill_item(eng, item, [MethodRun("gpu_only", sandboxed),
                                               MethodRun("snapkv", InProcessMethod(SnapKV(), "snapkv"))],
                                   "A", "fraction", [0.25])
        for name in ("gpu_only", "snapkv"):
            row = next(r for r in rows if r.method == name)
            assert row.error is None, row.error
    finally:
        sandboxed.close()
    peaks = []
    for t in (8192, 32768):
        ids = torch.randint(3, 250, (t,), generator=torch.Generator().manual_seed(t)).tolist()
        rt = KVRuntime(eng.info.n_layers, eng.info.group_size)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        eng.forward(rt, ids, 0, last_only=True)
        peaks.append(torch.cuda.max_memory_allocated() - base)
        del rt
    assert peaks[1] / peaks[0] < 4 * 1.3, peaks
