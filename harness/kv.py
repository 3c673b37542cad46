"""A KV cache that really shrinks, and the attention hook that reads it.

Every (layer, KV head) owns its own key/value/position buffers, so heads may hold different numbers of
tokens and the memory is what they hold (kvpress masks evicted entries instead and saves nothing). The
model runs with ``use_cache=False`` and a registered attention function: it receives each layer's fresh
post-RoPE queries/keys/values, appends them here and attends over what is stored, per KV head. Positions
of new tokens are passed explicitly and continue from the original prompt length.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

SPARE = 32  # rows of headroom per buffer so that decode appends are not a copy per token


@dataclass
class HeadKV:
    k: torch.Tensor  # (capacity, D)
    v: torch.Tensor
    pos: torch.Tensor  # (capacity,) long
    n: int

    def append(self, k: torch.Tensor, v: torch.Tensor, pos: torch.Tensor) -> None:
        m = k.shape[0]
        if self.n + m > self.k.shape[0]:
            cap = self.n + m + SPARE
            self.k = torch.cat([self.k[: self.n], k.new_empty(cap - self.n, k.shape[1])])
            self.v = torch.cat([self.v[: self.n], v.new_empty(cap - self.n, v.shape[1])])
            self.pos = torch.cat([self.pos[: self.n], pos.new_empty(cap - self.n)])
        self.k[self.n : self.n + m] = k
        self.v[self.n : self.n + m] = v
        self.pos[self.n : self.n + m] = pos
        self.n += m

    def live_bytes(self) -> int:
        return self.n * (self.k.shape[1] * self.k.element_size() + self.v.shape[1] * self.v.element_size())

    def allocated_bytes(self) -> int:
        return self.k.numel() * self.k.element_size() + self.v.numel() * self.v.element_size()


def _compact(k: torch.Tensor, v: torch.Tensor, pos: torch.Tensor) -> HeadKV:
    n = int(k.shape[0])
    head = HeadKV(k=k.new_empty(n + SPARE, k.shape[1]), v=v.new_empty(n + SPARE, v.shape[1]),
                  pos=pos.new_empty(n + SPARE), n=n)
    head.k[:n], head.v[:n], head.pos[:n] = k, v, pos
    return head


@dataclass
class LayerKV:
    heads: list[HeadKV] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.heads

    def lengths(self) -> list[int]:
        return [h.n for h in self.heads]

    def padded(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """(H, T, D) keys/values, (H, T) positions and validity (None when all heads are full length)."""
        t = max(self.lengths())
        ks = torch.zeros(len(self.heads), t, self.heads[0].k.shape[1], dtype=self.heads[0].k.dtype)
        vs = torch.zeros(len(self.heads), t, self.heads[0].v.shape[1], dtype=self.heads[0].v.dtype)
        ps = torch.full((len(self.heads), t), -1, dtype=torch.long)
        valid = torch.zeros(len(self.heads), t, dtype=torch.bool)
        for i, h in enumerate(self.heads):
            ks[i, : h.n], vs[i, : h.n], ps[i, : h.n], valid[i, : h.n] = h.k[: h.n], h.v[: h.n], h.pos[: h.n], True
        return ks, vs, ps, (None if bool(valid.all()) else valid)

    def keep(self, indices: list[torch.Tensor]) -> None:
        """Gather each head's kept entries into fresh compact buffers (the old ones are freed), with spare
        rows so that the next appends (board C) do not copy the buffer again."""
        self.heads = [_compact(h.k[idx], h.v[idx], h.pos[idx]) for h, idx in
                      zip(self.heads, (i.to(torch.long) for i in indices))]

    def replace(self, keys: list[torch.Tensor], values: list[torch.Tensor], positions: list[torch.Tensor]) -> None:
        self.heads = [_compact(k, v, p.to(torch.long)) for k, v, p in zip(keys, values, positions)]

    def copy(self) -> "LayerKV":
        return LayerKV([HeadKV(h.k[: h.n].clone(), h.v[: h.n].clone(), h.pos[: h.n].clone(), h.n) for h in self.heads])


@dataclass
class QueryLog:
    """Queries a method asked for: prefill rows at chosen positions, and a ring of recent decode queries."""

    prefill_positions: torch.Tensor | None = None
    prefill: dict[int, torch.Tensor] = field(default_factory=dict)  # layer -> (H_q, N, D)
    window: int = 0
    recent: dict[int, list[tuple[torch.Tensor, torch.Tensor]]] = field(default_factory=dict)  # layer -> [(q, pos)]
    record_all: bool = False  # keep every decode query (teacher-forced reference: future queries for KVP)
    all_queries: dict[int, list[torch.Tensor]] = field(default_factory=dict)


class KVRuntime:
    """One sequence's cache plus what its attention hook needs to know about the current forward pass."""

    def __init__(self, n_layers: int, group: int) -> None:
        self.layers = [LayerKV() for _ in range(n_layers)]
        self.group = group
        self.positions: torch.Tensor | None = None  # positions of the tokens in the current forward
        self.queries = QueryLog()
        self.peak_live = 0
        self.peak_allocated = 0

    def live_bytes(self) -> int:
        return sum(h.live_bytes() for layer in self.layers for h in layer.heads)

    def allocated_bytes(self) -> int:
        return sum(h.allocated_bytes() for layer in self.layers for h in layer.heads)

    def note_peak(self) -> None:
        self.peak_live = max(self.peak_live, self.live_bytes())
        self.peak_allocated = max(self.peak_allocated, self.allocated_bytes())

    def reset_peak(self) -> None:
        self.peak_live = self.peak_allocated = 0
        self.note_peak()

    def copy(self) -> "KVRuntime":
        rt = KVRuntime(len(self.layers), self.group)
        rt.layers = [layer.copy() for layer in self.layers]
        return rt

    # --- the attention hook ----------------------------------------------------------------------------------
    def attend(self, layer_idx: int, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
               scaling: float) -> torch.Tensor:
        """query (1, H_q, n, D), key/value (1, H_kv, n, D) post-RoPE -> output (1, n, H_q, D)."""
        pos = self.positions
        assert pos is not None, "positions must be set before a forward pass"
        self._log_queries(layer_idx, query[0], pos)
        layer = self.layers[layer_idx]
        n = query.shape[2]
        if layer.empty:  # prefill: dense causal attention, then the cache takes the keys/values
            out = F.scaled_dot_product_attention(query, key, value, is_causal=n > 1, scale=scaling, enable_gqa=True)
            layer.heads = [HeadKV(key[0, h].clone(), value[0, h].clone(), pos.clone(), n) for h in range(key.shape[1])]
            return out.transpose(1, 2).contiguous()
        g = self.group
        outs = []
        for h, head in enumerate(layer.heads):
            head.append(key[0, h], value[0, h], pos)
            k, v = head.k[: head.n].unsqueeze(0).unsqueeze(0), head.v[: head.n].unsqueeze(0).unsqueeze(0)
            q = query[:, h * g : (h + 1) * g]
            mask = None
            if n > 1:  # the new tokens see everything cached before them and each other causally
                t = head.n
                mask = torch.arange(t).view(1, -1) <= (t - n + torch.arange(n)).view(-1, 1)
            outs.append(F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scaling, enable_gqa=True))
        return torch.cat(outs, dim=1).transpose(1, 2).contiguous()

    def _log_queries(self, layer: int, q: torch.Tensor, pos: torch.Tensor) -> None:
        log = self.queries
        if self.layers[layer].empty and log.prefill_positions is not None and log.prefill_positions.numel():
            idx = torch.searchsorted(pos, log.prefill_positions).clamp(max=pos.numel() - 1)
            log.prefill[layer] = q[:, idx].clone()
        elif not self.layers[layer].empty:
            if log.window:
                ring = log.recent.setdefault(layer, [])
                ring.append((q.clone(), pos.clone()))
                while sum(x[0].shape[1] for x in ring) - ring[0][0].shape[1] >= log.window:
                    ring.pop(0)
            if log.record_all:
                log.all_queries.setdefault(layer, []).append(q.clone())

    def recent_queries(self, layer: int) -> tuple[torch.Tensor, torch.Tensor] | None:
        ring = self.queries.recent.get(layer)
        if not ring:
            return None
        q = torch.cat([x[0] for x in ring], dim=1)[:, -self.queries.window :]
        p = torch.cat([x[1] for x in ring])[-self.queries.window :]
        return q, p


_ACTIVE: list[KVRuntime] = []
HOOK_NAME = "reviewbench_kv"


def install_hook() -> None:
    """Register the attention function once; the runtime it serves is the one made active with ``use``."""
    from transformers import AttentionInterface

    def hook(module, query, key, value, attention_mask=None, scaling=None, dropout=0.0, **kwargs):
        rt = _ACTIVE[-1]
        scale = scaling if scaling is not None else query.shape[-1] ** -0.5
        return rt.attend(module.layer_idx, query, key, value, scale), None

    AttentionInterface.register(HOOK_NAME, hook)


class use:
    """``with use(rt): model(...)`` routes every attention call of that forward to ``rt``."""

    def __init__(self, rt: KVRuntime) -> None:
        self.rt = rt

    def __enter__(self) -> KVRuntime:
        _ACTIVE.append(self.rt)
        return self.rt

    def __exit__(self, *exc: object) -> None:
        _ACTIVE.pop()
