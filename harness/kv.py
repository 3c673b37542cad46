"""A KV cache that really shrinks, and the attention hook that reads it.

Every (layer, KV head) owns its own key/value/position buffers, so heads may hold different numbers of
tokens and the memory is what they hold (kvpress masks evicted entries instead and saves nothing). The
model runs with a registered attention function: it receives each attention layer's fresh post-RoPE
queries/keys/values, appends them here and attends over what is stored, per KV head. Positions of new tokens
are passed explicitly and continue from the original prompt length.

Only attention layers ever reach the hook. A hybrid model's recurrent layers (linear attention, Mamba, short
convolutions) keep their fixed-size state in a transformers ``Cache`` whose attention entries store nothing
(:func:`state_cache`), owned by the same :class:`KVRuntime` and copied with it; eviction never touches it.
A sliding-window layer (Gemma 3) holds what the model can still see, ``window - 1`` past tokens, as the
model's own cache does.

Copies are cheap: a copy shares its parent's buffers (read-only rows). What it appends goes into free rows at
the end of a shared buffer when nobody has written there yet; otherwise the copy first moves its rows into a
buffer of its own (once). Running several methods from one prefill thus holds the prefill once plus the
cache being worked on, and a copy that only compresses (then gathers into fresh buffers) never copies it.
"""

from __future__ import annotations

import copy as _copy
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F

SPARE = 32  # rows of headroom per buffer so that decode appends are not a copy per token
PREFILL_SPARE = 256  # free rows after a prompt: a copy that answers from the full cache appends there, in place
ATTN_ELEMENTS = 1 << 24  # attention logits held at once by a chunked attention call


class _Frontier:
    """Shared by every head that reads one buffer: how many rows of it have been written. A head may append in
    place only at the frontier: rows below it never change again, so copies read them safely."""

    __slots__ = ("filled",)

    def __init__(self, filled: int) -> None:
        self.filled = filled


@dataclass
class HeadKV:
    """One KV head: rows ``[start, n)`` of the buffers ``k``/``v``/``pos``, possibly shared with copies of the
    cache (read-only below the frontier)."""

    k: torch.Tensor  # (capacity, D)
    v: torch.Tensor
    pos: torch.Tensor  # (capacity,) long
    n: int
    start: int = 0
    frontier: _Frontier = field(default_factory=lambda: _Frontier(-1))
    origin: tuple[_Frontier, int] | None = None  # a copy: the shared frontier and the rows it was made with

    def __post_init__(self) -> None:
        if self.frontier.filled < 0:
            self.frontier.filled = self.n

    @property
    def length(self) -> int:
        return self.n - self.start

    def segments(self) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
        """(keys, values, positions) of the live rows, as one contiguous piece (no copy)."""
        return [(self.keys(), self.values(), self.positions())]

    def keys(self) -> torch.Tensor:
        return self.k[self.start: self.n]

    def values(self) -> torch.Tensor:
        return self.v[self.start: self.n]

    def positions(self) -> torch.Tensor:
        return self.pos[self.start: self.n]

    def append(self, k: torch.Tensor, v: torch.Tensor, pos: torch.Tensor) -> None:
        """Append in place at the frontier when nobody else has written past it; else (a shared buffer whose
        free rows another copy took, or a full one) move this head's rows into a buffer of its own, with
        headroom. A copy that decodes thus pays one O(T) copy at its first step, then appends in place and
        attends over one contiguous buffer (a private tail attended beside the shared rows made every decode
        step ~3x slower on CPU)."""
        m = k.shape[0]
        if self.frontier.filled == self.n and self.n + m <= self.k.shape[0]:
            self.k[self.n: self.n + m], self.v[self.n: self.n + m], self.pos[self.n: self.n + m] = k, v, pos
            self.n += m
            self.frontier.filled = self.n
            return
        fresh = compact_head(torch.cat([self.keys(), k]), torch.cat([self.values(), v]),
                             torch.cat([self.positions(), pos]), spare=max(SPARE, (self.length + m) // 8))
        self.k, self.v, self.pos, self.n, self.start, self.frontier = (fresh.k, fresh.v, fresh.pos, fresh.n, 0,
                                                                       fresh.frontier)

    def gather(self, idx: torch.Tensor, spare: int = SPARE) -> "HeadKV":
        """A fresh compact head of the live rows ``idx`` (indices into the live order, kept in the order given),
        with ``spare`` free rows; gathered straight into the new buffers (no intermediate copy)."""
        idx = idx.to(device=self.k.device, dtype=torch.long)
        r = int(idx.numel())
        out = HeadKV(self.k.new_empty(r + spare, self.k.shape[1]), self.v.new_empty(r + spare, self.v.shape[1]),
                     self.pos.new_empty(r + spare), r)
        i = idx + self.start
        for dst, src in ((out.k, self.k), (out.v, self.v), (out.pos, self.pos)):
            torch.index_select(src, 0, i, out=dst[:r])
        return out

    def live_bytes(self) -> int:
        return self.length * (self.k.shape[1] * self.k.element_size() + self.v.shape[1] * self.v.element_size())

    def allocated_bytes(self) -> int:
        return self.k.numel() * self.k.element_size() + self.v.numel() * self.v.element_size()

    def share(self) -> "HeadKV":
        """A copy that reads the same rows without copying them (its own appends go elsewhere)."""
        return HeadKV(self.k, self.v, self.pos, self.n, start=self.start, frontier=self.frontier,
                      origin=(self.frontier, self.n))

    def release(self) -> None:
        """This copy is done: rows it appended in place at the shared frontier are free again, so the next copy
        of the same cache appends there too instead of copying the whole head (the full cache's answer, then
        its teacher-forced pass, then each method's, held the prompt's cache twice)."""
        if self.origin is not None and self.origin[0] is self.frontier and self.frontier.filled == self.n:
            self.frontier.filled = self.origin[1]
        self.origin = None

    # --- attention over this head ------------------------------------------------------------------------------
    def attend(self, q: torch.Tensor, qpos: torch.Tensor, scale: float, window: int | None) -> torch.Tensor:
        """q (1, g, n, D) at positions ``qpos`` over every live row (causal by position, and within ``window``
        on a sliding layer) -> (1, g, n, D)."""
        k, v = self.keys(), self.values()
        if q.shape[2] == 1 and window is None:  # a decode step: everything cached is visible
            return F.scaled_dot_product_attention(q, k[None, None], v[None, None], scale=scale, enable_gqa=True)
        return segmented_attention(q, self.segments(), qpos, scale, window)


def compact_head(k: torch.Tensor, v: torch.Tensor, pos: torch.Tensor, spare: int = SPARE) -> HeadKV:
    """A head in fresh buffers of exactly its rows plus ``spare`` free ones (appends after an eviction do not
    copy it again)."""
    n = int(k.shape[0])
    head = HeadKV(k=k.new_empty(n + spare, k.shape[1]), v=v.new_empty(n + spare, v.shape[1]),
                  pos=pos.new_empty(n + spare), n=n)
    head.k[:n], head.v[:n], head.pos[:n] = k, v, pos
    return head


def _compact(k: torch.Tensor, v: torch.Tensor, pos: torch.Tensor) -> HeadKV:  # the name other modules used
    return compact_head(k, v, pos)


def _visible(kpos: torch.Tensor, qpos: torch.Tensor, window: int | None) -> torch.Tensor:
    """(n, T) bool: key at kpos visible from a query at qpos (causal by position, within the window)."""
    ok = kpos[None, :] <= qpos[:, None]
    if window is not None:
        ok &= kpos[None, :] > qpos[:, None] - window
    return ok


def segmented_attention(q: torch.Tensor, segs: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]],
                        qpos: torch.Tensor, scale: float, window: int | None) -> torch.Tensor:
    """Exact softmax attention of q (1, g, n, D) over the concatenation of ``segs`` without concatenating
    them, in query chunks whose logits stay under ``ATTN_ELEMENTS`` (never n x T for a long n)."""
    g, n, d = q.shape[1], q.shape[2], q.shape[3]
    total = sum(int(s[0].shape[0]) for s in segs)
    rows = max(1, min(n, ATTN_ELEMENTS // max(1, g * total)))
    out = torch.empty_like(q)
    for a in range(0, n, rows):
        qc, pc = q[:, :, a: a + rows], qpos[a: a + rows]
        if len(segs) == 1:
            k, v, kp = segs[0]
            mask = _visible(kp, pc, window)
            out[:, :, a: a + rows] = F.scaled_dot_product_attention(qc, k[None, None], v[None, None],
                                                                    attn_mask=mask, scale=scale, enable_gqa=True)
            continue
        qf = qc[0].float()  # (g, c, D)
        logits = torch.cat([torch.matmul(qf, k.float().T).masked_fill(~_visible(kp, pc, window), float("-inf"))
                            for k, _, kp in segs], dim=-1) * scale
        w = logits.softmax(dim=-1).nan_to_num(0.0)
        o = torch.zeros(qf.shape, dtype=torch.float32, device=q.device)
        off = 0
        for _, v, _ in segs:
            t = v.shape[0]
            o += torch.matmul(w[..., off: off + t], v.float())
            off += t
        out[:, :, a: a + rows] = o[None].to(q.dtype)
    return out


def prefill_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, scale: float,
                      window: int | None) -> torch.Tensor:
    """The first forward of an empty layer: causal (flash-style on CPU and GPU, no T x T mask) or, on a
    sliding layer longer than its window, banded in query chunks that see only their window."""
    n = query.shape[2]
    if window is None or n <= window:
        return F.scaled_dot_product_attention(query, key, value, is_causal=n > 1, scale=scale, enable_gqa=True)
    out = torch.empty_like(query)
    chunk = max(window, 256)
    idx = torch.arange(n, device=query.device)
    for a in range(0, n, chunk):
        b = min(n, a + chunk)
        lo = max(0, a - window + 1)
        mask = _visible(idx[lo:b], idx[a:b], window)
        out[:, :, a:b] = F.scaled_dot_product_attention(query[:, :, a:b], key[:, :, lo:b], value[:, :, lo:b],
                                                        attn_mask=mask, scale=scale, enable_gqa=True)
    return out


@dataclass
class LayerKV:
    heads: list[HeadKV] = field(default_factory=list)
    window: int | None = None  # a sliding layer's window (learnt from the model's attention call)

    @property
    def empty(self) -> bool:
        return not self.heads

    def lengths(self) -> list[int]:
        return [h.length for h in self.heads]

    def padded(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """(H, T, D) keys/values, (H, T) positions and validity (None when all heads are full length)."""
        t = max(self.lengths())
        h0 = self.heads[0]
        dev = h0.k.device
        ks = torch.zeros(len(self.heads), t, h0.k.shape[1], dtype=h0.k.dtype, device=dev)
        vs = torch.zeros(len(self.heads), t, h0.v.shape[1], dtype=h0.v.dtype, device=dev)
        ps = torch.full((len(self.heads), t), -1, dtype=torch.long, device=dev)
        valid = torch.zeros(len(self.heads), t, dtype=torch.bool, device=dev)
        for i, h in enumerate(self.heads):
            off = 0
            for k, v, p in h.segments():
                r = k.shape[0]
                ks[i, off: off + r], vs[i, off: off + r], ps[i, off: off + r] = k, v, p
                off += r
            valid[i, :off] = True
        return ks, vs, ps, (None if bool(valid.all()) else valid)

    def keep(self, indices: list[torch.Tensor]) -> None:
        """Gather each head's kept entries into fresh compact buffers (the old ones are freed unless a copy of
        the cache still reads them), with spare rows so that the next appends (board C) do not copy again."""
        self.heads = [h.gather(idx) for h, idx in zip(self.heads, indices)]

    def replace(self, keys: list[torch.Tensor], values: list[torch.Tensor], positions: list[torch.Tensor]) -> None:
        dev = self.heads[0].k.device if self.heads else None
        self.heads = [compact_head(k.to(dev) if dev else k, v.to(dev) if dev else v,
                                   p.to(device=dev, dtype=torch.long) if dev else p.to(torch.long))
                      for k, v, p in zip(keys, values, positions)]

    def copy(self) -> "LayerKV":
        return LayerKV([h.share() for h in self.heads], self.window)

    def forget_before(self, cutoff: int) -> None:
        """Drop entries at positions <= ``cutoff`` (out of a sliding window for good): a prefix of the shared
        rows just moves the start; anything else, or many dead rows, is compacted into fresh buffers."""
        for i, h in enumerate(self.heads):
            live = h.positions()
            dead = live <= cutoff
            nd = int(dead.sum())
            if not nd:
                continue
            nb = h.n - h.start
            prefix = nd <= nb and bool(dead[:nd].all())
            if prefix and h.start + nd <= max(SPARE, h.length):
                h.start += nd
            else:
                self.heads[i] = h.gather(torch.nonzero(~dead).flatten())


def state_cache(model: Any) -> Any | None:
    """A transformers cache holding only the recurrent state of ``model``'s non-attention layers (None when it
    has none): its attention entries store nothing and hand the fresh keys/values straight to the hook."""
    try:
        from transformers import DynamicCache
        from transformers.cache_utils import LinearAttentionCacheLayerMixin
    except ImportError:
        return None
    cfg = model.config.get_text_config(decoder=True) if hasattr(model.config, "get_text_config") else model.config
    try:
        probe = DynamicCache(config=cfg)
    except Exception:  # noqa: BLE001 - a config transformers cannot type has no typed recurrent layers either
        return None
    if not any(isinstance(layer, LinearAttentionCacheLayerMixin) for layer in probe.layers):
        return None
    return _state_cache_class()(config=cfg)


_STATE_CLASS: type | None = None


def _state_cache_class() -> type:
    global _STATE_CLASS
    if _STATE_CLASS is None:
        from transformers import DynamicCache

        class StateOnlyCache(DynamicCache):
            """Recurrent state only: ``update`` stores no key/value (the harness's cache holds them)."""

            seen = 0  # tokens before the current forward: what the model believes the cache length is

            def update(self, key_states, value_states, layer_idx, *args, **kwargs):
                return key_states, value_states

            def get_seq_length(self, layer_idx: int = 0) -> int:
                return self.seen

            def get_query_offset(self, layer_idx: int = 0) -> int:
                return self.seen

            def get_mask_sizes(self, query_length, layer_idx):
                return self.seen + int(query_length), 0

        _STATE_CLASS = StateOnlyCache
    return _STATE_CLASS


def state_bytes(cache: Any) -> int:
    """Bytes of recurrent state (conv and SSM/linear-attention states) a state cache holds."""
    if cache is None:
        return 0
    total = 0
    for layer in cache.layers:
        for states in (getattr(layer, "conv_states", None), getattr(layer, "recurrent_states", None)):
            for t in (states or {}).values():
                if isinstance(t, torch.Tensor):
                    total += t.numel() * t.element_size()
    return total


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
    """One sequence's cache plus what its attention hook needs to know about the current forward pass.

    ``layers`` is indexed by the model's layer index; only attention layers ever hold entries (the others
    stay empty and cost nothing). ``state`` is the recurrent state of a hybrid model's other layers.
    """

    def __init__(self, n_layers: int, group: int) -> None:
        self.layers = [LayerKV() for _ in range(n_layers)]
        self.group = group
        self.positions: torch.Tensor | None = None  # positions of the tokens in the current forward
        self.queries = QueryLog()
        self.state: Any = None  # transformers cache of recurrent state (hybrid models), created at prefill
        self.prefilling = False  # a prompt fed in several chunks: every chunk is prefill (queries logged as such)
        self.reserve = 0  # rows per head to allocate at the first chunk (the whole prompt: no regrowth)
        self.peak_live = 0
        self.peak_allocated = 0

    def live_bytes(self) -> int:
        """Bytes of the key/value entries held (exactly what a real cache must store)."""
        return sum(h.live_bytes() for layer in self.layers for h in layer.heads)

    def allocated_bytes(self) -> int:
        return sum(h.allocated_bytes() for layer in self.layers for h in layer.heads)

    def state_bytes(self) -> int:
        """Bytes of a hybrid model's recurrent state (fixed size, never evicted)."""
        return state_bytes(self.state)

    def note_peak(self) -> None:
        self.peak_live = max(self.peak_live, self.live_bytes())
        self.peak_allocated = max(self.peak_allocated, self.allocated_bytes())

    def reset_peak(self) -> None:
        self.peak_live = self.peak_allocated = 0
        self.note_peak()

    def release(self) -> None:
        """Done with this copy (no later use of it, and no copy of it still in use): its in-place appends to
        buffers shared with the cache it was copied from are given back (see ``HeadKV.release``)."""
        for layer in self.layers:
            for h in layer.heads:
                h.release()

    def copy(self) -> "KVRuntime":
        """An independent cache that shares this one's rows until either side rewrites them."""
        rt = KVRuntime(len(self.layers), self.group)
        rt.layers = [layer.copy() for layer in self.layers]
        rt.state = _copy.deepcopy(self.state) if self.state is not None else None
        # the prompt's logged queries (read-only) travel with the copy: the newest queries before any decode step
        rt.queries.prefill_positions = self.queries.prefill_positions
        rt.queries.prefill = dict(self.queries.prefill)
        return rt

    # --- the attention hook ----------------------------------------------------------------------------------
    def attend(self, layer_idx: int, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
               scaling: float, window: int | None = None) -> torch.Tensor:
        """query (1, H_q, n, D), key/value (1, H_kv, n, D) post-RoPE -> output (1, n, H_q, D)."""
        pos = self.positions
        assert pos is not None, "positions must be set before a forward pass"
        pos = pos.to(key.device)
        self._log_queries(layer_idx, query[0], pos)
        layer = self.layers[layer_idx]
        if window is not None:
            layer.window = window
        if layer.empty:  # prefill: dense causal attention, then the cache takes the keys/values
            out = prefill_attention(query, key, value, scaling, window)
            a = 0 if window is None else max(0, key.shape[2] - (window - 1))  # a sliding layer keeps its window
            rows = key.shape[2] - a if window is not None else max(key.shape[2], self.reserve) + PREFILL_SPARE
            layer.heads = [compact_head(key[0, h, a:], value[0, h, a:], pos[a:], rows - (key.shape[2] - a))
                           for h in range(key.shape[1])]
        else:
            g = query.shape[1] // key.shape[1]
            outs = []
            for h, head in enumerate(layer.heads):
                head.append(key[0, h], value[0, h], pos)
                outs.append(head.attend(query[:, h * g: (h + 1) * g], pos, scaling, window))
            out = torch.cat(outs, dim=1)
        if window is not None:  # what no later query can see: the next one, at pos[-1] + 1, sees > pos[-1] + 1 - W
            layer.forget_before(int(pos[-1]) + 1 - window)
        return out.transpose(1, 2).contiguous()

    def _log_queries(self, layer: int, q: torch.Tensor, pos: torch.Tensor) -> None:
        log = self.queries
        empty = self.layers[layer].empty
        if empty or self.prefilling:  # the prompt (possibly in chunks): keep the rows at the wanted positions
            if log.prefill_positions is not None and log.prefill_positions.numel():
                sel = torch.isin(pos, log.prefill_positions.to(pos.device))
                rows = q[:, sel].clone()
                old = None if empty else log.prefill.get(layer)
                log.prefill[layer] = rows if old is None else torch.cat([old, rows], dim=1)
        else:
            if log.window:
                ring = log.recent.setdefault(layer, [])
                ring.append((q.clone(), pos.clone()))
                while sum(x[0].shape[1] for x in ring) - ring[0][0].shape[1] >= log.window:
                    ring.pop(0)
            if log.record_all:
                log.all_queries.setdefault(layer, []).append(q.clone())

    def recent_queries(self, layer: int) -> tuple[torch.Tensor, torch.Tensor] | None:
        """The newest ``window`` queries of this layer, oldest first: the decode steps' (the ring), preceded by the
        prompt's last logged ones when the decode steps so far are fewer. Board C asks a method only when a layer
        reaches its cap, so every query since its previous call is here (when the window covers a block)."""
        w = self.queries.window
        if not w:
            return None
        ring = self.queries.recent.get(layer) or []
        qs, ps = [x[0] for x in ring], [x[1] for x in ring]
        have = sum(int(q.shape[1]) for q in qs)
        pre, pos = self.queries.prefill.get(layer), self.queries.prefill_positions
        if have < w and pre is not None and pos is not None and pos.numel() and pre.shape[1] == pos.numel():
            qs.insert(0, pre[:, -(w - have):])
            ps.insert(0, pos[-(w - have):].to(pre.device))
        if not qs:
            return None
        return torch.cat(qs, dim=1)[:, -w:], torch.cat(ps)[-w:]


class UnsupportedAttention(ValueError):
    """A model whose attention uses a variant the hook would compute wrong (soft-capping, sinks): refused."""


_ACTIVE: list[KVRuntime] = []
HOOK_NAME = "reviewbench_kv"
UNSUPPORTED = ("softcap", "s_aux", "sinks")  # attention variants the hook would silently get wrong


def install_hook() -> None:
    """Register the attention function once; the runtime it serves is the one made active with ``use``."""
    from transformers import AttentionInterface

    def hook(module, query, key, value, attention_mask=None, scaling=None, dropout=0.0, **kwargs):
        for name in UNSUPPORTED:
            if kwargs.get(name) is not None:
                raise UnsupportedAttention(f"the harness's attention does not implement {name!r} "
                                          f"({type(module).__name__})")
        rt = _ACTIVE[-1]
        scale = scaling if scaling is not None else query.shape[-1] ** -0.5
        window = kwargs.get("sliding_window")
        return rt.attend(module.layer_idx, query, key, value, scale, int(window) if window else None), None

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
