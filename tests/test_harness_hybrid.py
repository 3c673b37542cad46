"""The harness on hybrid attention/recurrent models, sliding windows and partial RoPE.

Every model here is a tiny random-initialised config of a real transformers family (``harness/families.py``),
built offline: Llama (plain), Gemma 3 (sliding + global layers), Qwen 3.5 and Qwen3-Next (gated delta-net
linear attention, partial RoPE), LFM2 (short convolutions), Jamba (Mamba, no RoPE), Bamba (Mamba-2, partial
RoPE), Falcon-H1 (attention and Mamba in every layer) and NemotronH (separate Mamba/attention/MLP blocks).
The unmodified model, run by transformers with its own cache, is the reference throughout.
"""

import warnings

import pytest
import torch

from harness.api import EvictionMethod, Keep, LayerView
from harness.boundary import InProcessMethod
from harness.families import FAMILIES, HYBRID, loaded
from harness.kv import KVRuntime
from harness.methods import PyramidKV, SnapKV
from harness.runner import Engine, MethodRun, run_decode_item, run_prefill_item
from harness.tasks import generate, reasoning_trace

N = 48  # prompt tokens: longer than Gemma 3's window here (16), so sliding layers really slide


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Tiny models are all per-call overhead: a second intra-op thread only spins against other jobs."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module", params=FAMILIES)
def eng(request):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Engine(loaded(request.param))


@pytest.fixture(scope="module")
def engines():
    cache: dict[str, Engine] = {}

    def get(family: str) -> Engine:
        if family not in cache:
            cache[family] = Engine(loaded(family))
        return cache[family]

    return get


def run_(name: str, method: EvictionMethod) -> MethodRun:
    return MethodRun(name, InProcessMethod(method, name))


def prompt(seed: int = 1, n: int = N) -> list[int]:
    return torch.randint(3, 250, (n,), generator=torch.Generator().manual_seed(seed)).tolist()


def family(eng: Engine) -> str:
    return eng.info.name.removeprefix("random-").removesuffix("-tiny")


@torch.no_grad()
def stock(eng: Engine, ids: list[int], then: list[int], keep: set[int] | None = None) -> torch.Tensor:
    """The unmodified model (sdpa, its own transformers cache): logits of the last prompt token and of each
    token of ``then`` fed one by one; ``keep`` masks every other prompt position out of attention (what an
    eviction of the same tokens in every attention layer and head means)."""
    from transformers import DynamicCache

    model, dev = eng.model, eng.device
    model.set_attn_implementation("sdpa")
    try:
        cache = DynamicCache(config=model.config)
        out = model(input_ids=torch.tensor([ids], device=dev), cache=cache, use_cache=True)
        logits = [out.logits[0, -1]]
        mask = torch.ones(1, len(ids) + len(then), dtype=torch.long, device=dev)
        if keep is not None:
            mask[0, [i for i in range(len(ids)) if i not in keep]] = 0
        for i, tok in enumerate(then):
            n = len(ids) + i
            out = model(input_ids=torch.tensor([[tok]], device=dev), cache=cache, use_cache=True,
                        attention_mask=mask[:, : n + 1], position_ids=torch.tensor([[n]], device=dev))
            logits.append(out.logits[0, -1])
        return torch.stack(logits).float().cpu()
    finally:
        model.set_attn_implementation("reviewbench_kv")


def harness_logits(eng: Engine, rt: KVRuntime, last: torch.Tensor, then: list[int], start: int) -> torch.Tensor:
    return torch.stack([last] + [eng.forward(rt, [tok], start + i)[-1] for i, tok in enumerate(then)])


class KeepSet(EvictionMethod):
    """Keeps the same prompt positions in every head of every layer it is handed; records the layers."""

    name = "keepset"

    def __init__(self, positions: set[int]) -> None:
        self.keep = positions
        self.layers: list[int] = []

    def select(self, view: LayerView) -> Keep:
        self.layers.append(view.layer)
        want = torch.tensor(sorted(self.keep), device=view.positions.device)
        rows = [torch.nonzero(torch.isin(view.positions[h], want)).flatten() for h in range(view.n_kv_heads)]
        return Keep(tuple(rows))


def expected_layers(eng: Engine) -> tuple[list[int], list[int], list[int]]:
    """(attention, sliding, recurrent) layers as the family's config declares them."""
    cfg = eng.model.config
    n = cfg.num_hidden_layers
    fam = family(eng)
    if fam in ("llama",):
        return list(range(n)), [], []
    if fam == "gemma3":
        return list(range(n)), [i for i, t in enumerate(cfg.layer_types) if t == "sliding_attention"], []
    if fam == "falcon_h1":
        return list(range(n)), [], list(range(n))
    if fam == "nemotron_h":  # the config maps its block pattern to layer types (mlp blocks have no state)
        kinds = cfg.layer_types
        return ([i for i, t in enumerate(kinds) if t == "full_attention"], [],
                [i for i, t in enumerate(kinds) if t == "linear_attention"])
    if fam == "bamba":
        attn = list(cfg.attn_layer_indices)
    elif fam == "lfm2":
        attn = list(cfg.full_attn_idxs)
    elif fam == "jamba":
        attn = [i for i in range(n) if i % cfg.attn_layer_period == cfg.attn_layer_offset]
    else:
        attn = [i for i, t in enumerate(cfg.layer_types) if t == "full_attention"]
    return attn, [], [i for i in range(n) if i not in attn]


def expected_rotary_dim(eng: Engine) -> int:
    cfg = eng.model.config
    fam = family(eng)
    if fam in ("jamba", "nemotron_h"):
        return 0  # attention without any positional encoding
    params = cfg.rope_parameters or {}
    partial = params.get("partial_rotary_factor", 1.0) if "rope_type" in params else 1.0
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    return int(head_dim * partial)


# --- what the harness sees --------------------------------------------------------------------------------------
def test_model_info_names_attention_sliding_and_recurrent_layers_and_the_rotary_dim(eng):
    attn, sliding, recurrent = expected_layers(eng)
    info = eng.info
    assert list(info.attention_layers) == attn and list(info.sliding_layers) == sliding
    assert list(info.recurrent_layers) == recurrent
    assert info.rotary_dim == expected_rotary_dim(eng)
    assert info.sliding_window == (eng.model.config.sliding_window if sliding else None)
    if family(eng) in ("qwen3_5", "qwen3_next"):
        assert info.rotary_dim == info.head_dim // 4  # Qwen 3.5 rotates a quarter of each head (64 of 256)
    if family(eng) == "gemma3":  # one RoPE for the sliding layers, another for the global ones
        assert info.rope(0) != info.rope(attn[-1]) and info.rope_theta is None
        assert info.scale == eng.model.config.query_pre_attn_scalar ** -0.5
    if family(eng) == "llama":
        assert info.rope_theta == eng.model.config.rope_parameters["rope_theta"]


# --- exactness ----------------------------------------------------------------------------------------------------
def test_keeping_everything_gives_the_unmodified_models_output(eng):
    """Prefill, a 'keep everything' eviction through the real path (fresh compact buffers), then decoding:
    the same logits as the unmodified model with its own cache, at every step."""
    ids, then = prompt(), prompt(2, 6)
    ref = stock(eng, ids, then)
    rt = KVRuntime(eng.info.n_layers, eng.info.group_size)
    last = eng.forward(rt, ids, 0, last_only=True)[-1]
    method = KeepSet(set(range(len(ids))))
    eng.compress(rt, run_("all", method), [len(ids)] * eng.info.n_layers, "A", "prefill", lambda layer: None)
    got = harness_logits(eng, rt, last, then, len(ids))
    assert torch.allclose(got, ref, atol=1e-5, rtol=0), float((got - ref).abs().max())
    assert got.argmax(-1).tolist() == ref.argmax(-1).tolist()


def test_only_attention_layers_are_compressed_and_recurrent_state_is_left_alone(eng):
    ids = prompt()
    rt = KVRuntime(eng.info.n_layers, eng.info.group_size)
    eng.forward(rt, ids, 0, last_only=True)
    before = [t.clone() for t in _state_tensors(rt)]
    method = KeepSet(set(range(0, len(ids), 3)))
    eng.compress(rt, run_("third", method), [len(ids)] * eng.info.n_layers, "A", "prefill", lambda layer: None)
    assert method.layers == list(eng.info.attention_layers)
    after = _state_tensors(rt)
    assert len(after) == len(before) and all(torch.equal(a, b) for a, b in zip(after, before))
    assert bool(before) == bool(eng.info.recurrent_layers)
    for i, layer in enumerate(rt.layers):
        assert layer.empty == (i not in eng.info.attention_layers)


def _state_tensors(rt: KVRuntime) -> list[torch.Tensor]:
    if rt.state is None:
        return []
    out = []
    for layer in rt.state.layers:
        for states in (getattr(layer, "conv_states", None), getattr(layer, "recurrent_states", None)):
            out += [t for t in (states or {}).values() if isinstance(t, torch.Tensor)]
    return out


def test_after_an_eviction_positions_continue_from_the_prompt_length(eng):
    """Evicting two thirds of the prompt in every attention layer equals the unmodified model with those
    tokens masked out of attention, decoding on at the original positions; restarting positions at the
    cache's length (a common harness bug) does not, on every model whose attention uses RoPE."""
    ids, then = prompt(), prompt(3, 4)
    keep = set(range(0, len(ids), 3)) | {len(ids) - 1}
    ref = stock(eng, ids, then, keep=keep)
    rt = KVRuntime(eng.info.n_layers, eng.info.group_size)
    last = eng.forward(rt, ids, 0, last_only=True)[-1]
    eng.compress(rt, run_("k", KeepSet(keep)), [len(ids)] * eng.info.n_layers, "A", "prefill", lambda layer: None)
    full_layer = next(i for i in eng.info.attention_layers if i not in eng.info.sliding_layers)
    assert rt.layers[full_layer].lengths() == [len(keep)] * eng.info.n_kv_heads
    right = harness_logits(eng, rt.copy(), last, then, len(ids))
    assert torch.allclose(right, ref, atol=1e-5, rtol=0), float((right - ref).abs().max())
    assert rt.copy().layers[full_layer].heads[0].positions().tolist() == sorted(keep)
    if eng.info.rotary_dim:
        wrong = harness_logits(eng, rt.copy(), last, then, len(keep))
        assert float((wrong - ref).abs().max()) > 100 * float((right - ref).abs().max()) + 1e-4


def test_rotate_is_the_models_own_rope_partial_or_not(eng):
    """The same tokens prefilled from position 0 and from position 700 give post-RoPE keys related by the
    model's rotation (attention depends on relative positions only): rotate(keys_at_0, +700) = keys_at_700."""
    ids, shift = prompt(4, 12), 700
    rts = []
    for start in (0, shift):
        rt = KVRuntime(eng.info.n_layers, eng.info.group_size)
        rt.queries.prefill_positions = torch.arange(start, start + len(ids))
        eng.forward(rt, ids, start, last_only=True)
        rts.append(rt)
    for layer in eng.info.attention_layers:
        k0, _, p0, _ = rts[0].layers[layer].padded()
        k1, _, p1, _ = rts[1].layers[layer].padded()
        view = eng.view(rts[0], layer, 1, "A", "prefill", None)
        moved = view.rotate(k0, torch.full((k0.shape[1],), shift))
        scale = float(k1.abs().max())
        assert torch.allclose(moved, k1, atol=2e-4 * scale, rtol=0), (layer, float((moved - k1).abs().max()))
        assert torch.equal(p1, p0 + shift)
        q1 = rts[1].queries.prefill[layer]
        pre = view.rotate(q1, -(torch.arange(len(ids)) + shift))  # back to pre-RoPE, then forward to 0
        q0 = rts[0].queries.prefill[layer]
        assert torch.allclose(view.rotate(pre, torch.arange(len(ids))), q0, atol=2e-4 * float(q0.abs().max()))
        rot = eng.info.rotary_dim or 0
        assert torch.allclose(k0[..., rot:], k1[..., rot:], atol=1e-4 * scale)  # features RoPE leaves alone


# --- memory ---------------------------------------------------------------------------------------------------------
def test_kv_bytes_are_exactly_what_the_unmodified_models_cache_holds(eng):
    """After prefill the harness holds the same key/value bytes as transformers' own cache for this model
    (attention layers only; sliding layers their window) and the same recurrent state; after eviction, the
    kept entries' bytes, and the tensors it reports are the tensors it holds."""
    from transformers import DynamicCache

    ids = prompt()
    cache = DynamicCache(config=eng.model.config)
    eng.model.set_attn_implementation("sdpa")
    try:
        with torch.no_grad():
            eng.model(input_ids=torch.tensor([ids]), cache=cache, use_cache=True)
    finally:
        eng.model.set_attn_implementation("reviewbench_kv")
    stock_kv = sum(t.numel() * t.element_size() for layer in cache.layers
                   for t in (getattr(layer, "keys", None), getattr(layer, "values", None)) if isinstance(t, torch.Tensor))
    rt = KVRuntime(eng.info.n_layers, eng.info.group_size)
    eng.forward(rt, ids, 0, last_only=True)
    assert rt.live_bytes() == stock_kv
    from harness.kv import state_bytes

    assert rt.state_bytes() == state_bytes(cache)
    eng.compress(rt, run_("k", KeepSet(set(range(0, len(ids), 4)))), [len(ids)] * eng.info.n_layers, "A",
                 "prefill", lambda layer: None)
    held = sum(seg.numel() * seg.element_size() for layer in rt.layers for h in layer.heads
               for k, v, _ in h.segments() for seg in (k, v))
    assert rt.live_bytes() == held
    entries = sum(sum(layer.lengths()) for layer in rt.layers)
    assert rt.live_bytes() == entries * 2 * eng.info.head_dim * 4  # K and V, float32, per (layer, head, token)
    assert rt.allocated_bytes() >= rt.live_bytes()


# --- budgets and the boards ------------------------------------------------------------------------------------------
def test_layer_budgets_allocate_over_the_attention_layers(engines):
    eng = engines("qwen3_5")
    attn = eng.info.attention_layers
    assert 1 < len(attn) < eng.info.n_layers
    budgets = eng.layer_budgets(run_("pyramidkv", PyramidKV()), 60, 400)
    assert [b for i, b in enumerate(budgets) if i not in attn] == [0] * (eng.info.n_layers - len(attn))
    on = [budgets[i] for i in attn]
    assert on[0] > on[-1] and sum(on) <= 60 * len(attn)

    class OldStyle(SnapKV):
        """Written against the interface before hybrid models: one budget per layer of the model."""

        def layer_budgets(self, mean_budget, n_tokens, model):
            return [mean_budget + (5 if i in model.attention_layers[:1] else -5 if i in model.attention_layers[1:2]
                                   else 1000) for i in range(model.n_layers)]

    old = eng.layer_budgets(run_("old", OldStyle()), 20, 100)
    assert [old[i] for i in attn][:2] == [25, 15]


@pytest.mark.parametrize("fam", HYBRID[:1] + ("gemma3",))
def test_board_a_runs_end_to_end_on_a_hybrid_model(engines, fam):
    eng = engines(fam)
    item = generate("niah_single", "dev", 1, eng.n_tokens, 300, offset=0)[0]
    rows, ref = run_prefill_item(eng, item, [run_("snapkv", SnapKV())], "A", "fraction", [0.25])
    full, snap = (next(r for r in rows if r.method == m) for m in ("full", "snapkv"))
    assert snap.error is None and full.error is None
    budget = round(0.25 * ref.n_prompt)  # a sliding layer never held more than its window in the first place
    held = [min(budget, eng.info.sliding_window - 1) if i in eng.info.sliding_layers else budget
            for i in eng.info.attention_layers]
    assert abs(snap.kept_tokens - sum(held) / len(held)) <= 1
    assert snap.kv_bytes < 0.5 * full.kv_bytes and snap.kl is not None and snap.kl >= 0


@pytest.mark.parametrize("fam", HYBRID[:1] + ("gemma3",))
def test_board_c_cap_holds_on_a_hybrid_model(engines, fam):
    eng = engines(fam)
    item = reasoning_trace(0, eng.n_tokens, 48)
    cap = 40
    rows, _ = run_decode_item(eng, item, [run_("snapkv", SnapKV())], [cap], [cap])
    row = next(r for r in rows if r.method == "snapkv")
    assert row.error is None and row.kv_tokens_layer_max is not None and row.kv_tokens_layer_max <= cap
    entry = 2 * eng.info.head_dim * 4
    assert row.kv_bytes_peak <= len(eng.info.attention_layers) * eng.info.n_kv_heads * cap * entry


# --- the same on a GPU (skipped without CUDA) ---------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("fam", ["llama", "gemma3", "qwen3_5", "bamba", "falcon_h1"])
def test_on_cuda_eviction_and_decoding_match_the_unmodified_model(fam):
    """Everything on the GPU (cache, masks, the method's scoring): float32 exact against the unmodified
    model; bf16 runs with the cache held in bf16 (2 bytes per entry)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eng = Engine(loaded(fam, device="cuda", dtype=torch.float32))
    ids, then = prompt(), prompt(3, 4)
    keep = set(range(0, len(ids), 3)) | {len(ids) - 1}
    ref = stock(eng, ids, then, keep=keep)
    rt = KVRuntime(eng.info.n_layers, eng.info.group_size)
    last = eng.forward(rt, ids, 0, last_only=True)[-1]
    eng.compress(rt, run_("k", KeepSet(keep)), [len(ids)] * eng.info.n_layers, "A", "prefill", lambda layer: None)
    layer = eng.info.attention_layers[0]
    assert rt.layers[layer].heads[0].k.is_cuda
    got = harness_logits(eng, rt, last, then, len(ids))
    assert torch.allclose(got, ref, atol=1e-4, rtol=0), float((got - ref).abs().max())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        half = Engine(loaded(fam, device="cuda"))
    rt = KVRuntime(half.info.n_layers, half.info.group_size)
    half.forward(rt, ids, 0, last_only=True)
    entries = sum(sum(x.lengths()) for x in rt.layers)
    assert rt.live_bytes() == entries * 2 * half.info.head_dim * 2
    snap = run_("snapkv", SnapKV())
    rt.queries.prefill_positions = None
    half.compress(rt, snap, [len(ids) // 4] * half.info.n_layers, "A", "prefill", lambda layer: None)
    assert rt.live_bytes() < entries * 2 * half.info.head_dim * 2 / 3
