"""What a model is made of, as the harness needs to know it: :func:`describe` -> :class:`harness.api.ModelInfo`.

Read from the model itself rather than from config field names, which differ per family: one two-token
forward pass through the harness's attention hook shows which layers are attention layers (only they call
it), their head counts, head size, softmax scale and sliding window; the (cos, sin) the model hands each
attention module in that pass give its RoPE — how many features it rotates (partial RoPE) and at which
frequencies (any position scaling included). The layers with recurrent state are those transformers' own
cache types for the config (linear attention, Mamba/SSM, short convolutions).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import torch

from harness.api import ModelInfo, Rope
from harness.kv import HOOK_NAME, KVRuntime, install_hook, state_cache, use


def text_config(model: Any) -> Any:
    cfg = model.config
    return cfg.get_text_config(decoder=True) if hasattr(cfg, "get_text_config") else cfg


def plain_rope_theta(cfg: Any) -> float | None:
    """The RoPE base when the config declares unscaled, full-width RoPE (what ``rope_theta`` promises)."""
    params = getattr(cfg, "rope_parameters", None) or {}
    if isinstance(params, dict) and params and all(isinstance(v, dict) for v in params.values()):
        return None  # one RoPE per layer type (Gemma 3): no single base
    kind = params.get("rope_type", "default") if isinstance(params, dict) else "default"
    scaling = getattr(cfg, "rope_scaling", None)
    partial = params.get("partial_rotary_factor", 1.0) if isinstance(params, dict) else 1.0
    if kind != "default" or (isinstance(scaling, dict) and scaling.get("rope_type", scaling.get("type")) not in
                             (None, "default")) or getattr(cfg, "partial_rotary_factor", 1.0) != 1.0 or partial != 1.0:
        return None
    theta = params.get("rope_theta") if isinstance(params, dict) else None
    theta = theta or getattr(cfg, "rope_theta", None)
    return float(theta) if theta else None


class _Probe(KVRuntime):
    """A runtime that also records what each attention layer's call looked like."""

    def __init__(self, n_layers: int) -> None:
        super().__init__(n_layers, 1)
        self.seen: dict[int, dict[str, Any]] = {}

    def attend(self, layer_idx: int, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
               scaling: float, window: int | None = None) -> torch.Tensor:
        if layer_idx in self.seen:
            raise ValueError(f"two attention modules report layer index {layer_idx}: layers share attention "
                             "(unsupported)")
        self.seen[layer_idx] = {"heads": int(query.shape[1]), "kv_heads": int(key.shape[1]),
                                "head_dim": int(key.shape[-1]), "scale": float(scaling), "window": window}
        return super().attend(layer_idx, query, key, value, scaling, window)


def _rope_from(cos: torch.Tensor, sin: torch.Tensor, buffers: list[torch.Tensor]) -> Rope | None:
    """The Rope behind (cos, sin) at positions (0, 1), each (..., 2, dim); None if not half-split RoPE."""
    c = cos.reshape(-1, 2, cos.shape[-1])[0].double()
    s = sin.reshape(-1, 2, sin.shape[-1])[0].double()
    dim = c.shape[-1]
    half = dim // 2
    if dim % 2 or not torch.allclose(c[:, :half], c[:, half:]) or not torch.allclose(s[:, :half], s[:, half:]):
        return None  # not transformers' half-split layout (e.g. interleaved pairs)
    scale = float(c[0, 0])
    if not torch.allclose(c[0], torch.full_like(c[0], scale), rtol=1e-3) or scale <= 0:
        return None
    freq = torch.atan2(s[1, :half], c[1, :half])  # the angle at position 1 is the frequency itself (< pi)
    tol = max(1e-5, 4 * float(torch.finfo(cos.dtype).eps))
    best = None
    for buf in buffers:  # the model's own inv_freq when it is one of its buffers: exact, not re-derived
        if buf.numel() == half:
            err = float(((buf.double().cpu() - freq.cpu()).abs() / freq.cpu().abs().clamp_min(1e-12)).max())
            if err < tol and (best is None or err < best[0]):
                best = (err, buf)
    values = best[1].double().cpu() if best is not None else freq.cpu()
    return Rope(tuple(float(f) for f in values), scale=1.0 if math.isclose(scale, 1.0, rel_tol=1e-3) else scale)


@torch.no_grad()
def describe(model: Any, name: str) -> ModelInfo:
    """The :class:`ModelInfo` of a transformers causal LM (routed through the harness's attention hook)."""
    install_hook()
    cfg = text_config(model)
    previous = getattr(model.config, "_attn_implementation", None)
    if previous != HOOK_NAME:
        model.set_attn_implementation(HOOK_NAME)
    n_layers = int(cfg.num_hidden_layers)
    probe = _Probe(n_layers)
    device = next(model.parameters()).device
    probe.positions = torch.arange(2, device=device)
    captured: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def grab(module: Any, args: Any, kwargs: dict[str, Any]) -> None:
        pe = kwargs.get("position_embeddings")
        idx = getattr(module, "layer_idx", None)
        if isinstance(pe, tuple) and len(pe) == 2 and isinstance(idx, int):
            captured.setdefault(idx, (pe[0].detach(), pe[1].detach()))

    handles = [m.register_forward_pre_hook(grab, with_kwargs=True) for m in model.modules()
               if isinstance(getattr(m, "layer_idx", None), int)]
    state = state_cache(model)
    kw: dict[str, Any] = {"use_cache": state is not None}
    if state is not None:
        kw[cache_kwarg(model)] = state
    try:
        with use(probe):
            model(input_ids=torch.tensor([[1, 2]], device=device), position_ids=probe.positions[None], **kw)
    finally:
        for h in handles:
            h.remove()
        if previous not in (None, HOOK_NAME):
            model.set_attn_implementation(previous)
    if not probe.seen:
        raise ValueError(f"{name}: no layer called the attention hook (no attention layers, or an attention "
                         "implementation the harness cannot route)")
    seen = probe.seen
    shapes = {(s["heads"], s["kv_heads"], s["head_dim"]) for s in seen.values()}
    if len(shapes) != 1:
        raise ValueError(f"{name}: attention layers differ in head counts or size {sorted(shapes)} (unsupported)")
    n_heads, n_kv_heads, head_dim = shapes.pop()
    scales = [s["scale"] for s in seen.values()]
    scale = max(set(scales), key=scales.count)
    if len(set(scales)) > 1:
        warnings.warn(f"{name}: attention layers use different softmax scales; methods see {scale}", stacklevel=2)

    recurrent = _recurrent_layers(state)
    config_types = list(getattr(cfg, "layer_types", None) or [])
    windows = {i: s["window"] for i, s in seen.items() if s["window"]}
    if not windows and getattr(cfg, "sliding_window", None):  # a sliding layer whose call did not say so
        windows = {i: int(cfg.sliding_window) for i in seen
                   if i < len(config_types) and config_types[i] == "sliding_attention"}
    types = []
    for i in range(n_layers):
        if i in seen:
            types.append("sliding_attention" if i in windows else "full_attention")
        else:
            types.append("linear_attention" if i in recurrent else "none")
    window_values = set(windows.values())
    if len(window_values) > 1:
        raise ValueError(f"{name}: sliding layers with different windows {sorted(window_values)} (unsupported)")

    buffers = [b for n_, b in model.named_buffers() if n_.endswith("inv_freq") and b.dim() == 1]
    has_rope = bool(buffers) or bool(captured)
    ropes: list[Rope] = []
    layer_rope = []
    for i in range(n_layers):
        if i not in seen:
            layer_rope.append(-1)
            continue
        if i not in captured:
            layer_rope.append(-2 if has_rope else -1)
            continue
        rope = _rope_from(*captured[i], buffers)
        if rope is None:
            layer_rope.append(-2)
            continue
        if rope not in ropes:
            ropes.append(rope)
        layer_rope.append(ropes.index(rope))
    if -2 in layer_rope:
        warnings.warn(f"{name}: the RoPE of some attention layers is not the half-split kind; LayerView.rotate "
                      "will refuse them", stacklevel=2)

    theta = plain_rope_theta(cfg)
    plain = (theta is not None and len(ropes) == 1 and ropes[0].dim == head_dim and ropes[0].scale == 1.0 and
             all(r in (0, -1) for r in layer_rope) and
             all(math.isclose(a, b, rel_tol=1e-5) for a, b in zip(ropes[0].inv_freq,
                                                                   Rope.from_theta(theta, head_dim).inv_freq)))
    return ModelInfo(name=name, n_layers=n_layers, n_heads=n_heads, n_kv_heads=n_kv_heads, head_dim=head_dim,
                     rope_theta=theta if plain else None, layer_types=tuple(types),
                     recurrent_layers=tuple(sorted(recurrent)),
                     sliding_window=window_values.pop() if window_values else None, ropes=tuple(ropes),
                     layer_rope=tuple(layer_rope), attention_scale=scale,
                     max_positions=getattr(cfg, "max_position_embeddings", None))


def _recurrent_layers(state: Any) -> set[int]:
    if state is None:
        return set()
    from transformers.cache_utils import LinearAttentionCacheLayerMixin

    return {i for i, layer in enumerate(state.layers) if isinstance(layer, LinearAttentionCacheLayerMixin)}


def cache_kwarg(model: Any) -> str:
    """The forward argument that takes a cache object: ``cache`` in transformers >= 5.x, else the old name."""
    import inspect

    params = inspect.signature(model.forward).parameters
    return "cache" if "cache" in params else "past_key_values"
