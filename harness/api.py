"""The method interface: the contract between the harness and a submission's ``method.py``.

A method sees one attention layer at a time through a read-only :class:`LayerView` and answers with the
entries to keep per KV head (:class:`Keep`, ragged: heads may keep different numbers of tokens) or with
rewritten keys/values (:class:`Rewrite`, for merging methods). Everything else (model, prompts, budgets,
the cache itself, decoding, metrics) belongs to the harness, so two methods differ only in this code.

This module is deliberately free of harness internals: reviewbench reads it statically (``ast``) to find a
submission's class without importing untrusted code.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import ClassVar, Literal

import torch

Board = Literal["A", "B_online", "B_offline", "C"]
Phase = Literal["prefill", "decode"]

from harness.contract import INTERFACE_BASE, INTERFACE_HOOK, OPTIONAL_HOOKS  # noqa: E402,F401  (re-exported)


ATTENTION_TYPES = ("full_attention", "sliding_attention")


@dataclass(frozen=True)
class Rope:
    """One rotary embedding as the model applies it: the first ``dim`` features of each head, in half-split pairs
    (transformers' ``rotate_half``); the remaining features pass unrotated (partial RoPE: Qwen 3.5 rotates 64 of
    256). ``inv_freq`` already includes any position scaling (linear, Llama 3, YaRN); ``scale`` is the cos/sin
    magnitude (YaRN's attention factor, 1 otherwise)."""

    inv_freq: tuple[float, ...]
    scale: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "inv_freq", tuple(float(f) for f in self.inv_freq))

    @property
    def dim(self) -> int:
        return 2 * len(self.inv_freq)

    @staticmethod
    def from_theta(theta: float, dim: int) -> "Rope":
        """Plain (Llama-style) RoPE of base ``theta`` over ``dim`` features."""
        return Rope(tuple(theta ** (-i / dim) for i in range(0, dim, 2)))

    def angles(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(cos, sin), each (N, dim), at ``positions`` (N,); angles in float64, as exact as the positions."""
        inv = torch.tensor(self.inv_freq, dtype=torch.float64, device=positions.device)
        ang = positions.to(torch.float64)[:, None] * inv[None, :]
        ang = torch.cat([ang, ang], dim=-1)
        return (ang.cos() * self.scale).float(), (ang.sin() * self.scale).float()

    def apply(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """``x`` (..., N, D) rotated to ``positions`` (N,); negative positions undo a rotation (float32 out).
        With ``scale`` != 1 the inverse also divides by ``scale**2``, so ``apply(apply(x, p), -p) == x``."""
        x = x.float()
        if self.dim == 0:
            return x
        cos, sin = self.angles(positions.to(x.device))
        if self.scale != 1.0:
            back = (positions < 0).to(cos.device)[:, None]
            cos, sin = torch.where(back, cos / self.scale**2, cos), torch.where(back, sin / self.scale**2, sin)
        rot, rest = x[..., : self.dim], x[..., self.dim:]
        return torch.cat([rot * cos + rotate_half(rot) * sin, rest], dim=-1)


@dataclass(frozen=True)
class ModelInfo:
    """Static facts about the model, handed to :meth:`EvictionMethod.setup` once.

    Hybrid models interleave attention layers, which hold a KV cache, with layers that keep a recurrent state
    (linear attention, Mamba/SSM, short convolutions); only the attention layers are ever evicted, so a method
    sees only ``attention_layers``. ``layer_types`` says what each layer is; sliding-window layers (Gemma 3)
    hold at most ``sliding_window - 1`` past tokens by the model's own design, and are evicted like the others
    when their budget is smaller. Objects built with the first six fields only describe a plain all-attention
    model with full-width RoPE of base ``rope_theta`` (the interface before hybrid models).
    """

    name: str
    n_layers: int
    n_heads: int  # query heads
    n_kv_heads: int
    head_dim: int
    rope_theta: float | None = None  # base of plain full-width RoPE shared by every layer; None otherwise
    layer_types: tuple[str, ...] = ()  # per layer: full_attention, sliding_attention, linear_attention or none
    recurrent_layers: tuple[int, ...] = ()  # layers with a recurrent/SSM/conv state (Falcon-H1: attention too)
    sliding_window: int | None = None  # a sliding layer's query at p sees keys at positions > p - window
    ropes: tuple[Rope, ...] = ()  # the model's distinct rotary embeddings (Gemma 3: one local, one global)
    layer_rope: tuple[int, ...] = ()  # per layer: index into ``ropes``; -1 no RoPE at all; -2 unknown
    attention_scale: float | None = None  # softmax scale of QK^T (None: head_dim ** -0.5)
    max_positions: int | None = None  # the context length the model was trained for

    def __post_init__(self) -> None:
        # the wire and torch.load hand lists and dicts back: normalise, so the object is hashable and typed
        ropes = tuple(r if isinstance(r, Rope) else Rope(**r) for r in self.ropes)
        if not ropes and self.rope_theta is not None and not self.layer_rope:
            ropes = (Rope.from_theta(self.rope_theta, self.head_dim),)
        types = tuple(self.layer_types) or ("full_attention",) * self.n_layers
        layer_rope = tuple(int(i) for i in self.layer_rope) or (
            (0 if ropes else -2,) * self.n_layers)
        if len(types) != self.n_layers or len(layer_rope) != self.n_layers:
            raise ValueError(f"layer_types and layer_rope need one entry per layer ({self.n_layers})")
        object.__setattr__(self, "ropes", ropes)
        object.__setattr__(self, "layer_types", types)
        object.__setattr__(self, "layer_rope", layer_rope)
        object.__setattr__(self, "recurrent_layers", tuple(int(i) for i in self.recurrent_layers))

    @property
    def group_size(self) -> int:
        """Query heads per KV head (GQA)."""
        return self.n_heads // self.n_kv_heads

    @property
    def attention_layers(self) -> tuple[int, ...]:
        """The layers that hold a KV cache: the only ones the harness evicts in and hands to a method."""
        return tuple(i for i, t in enumerate(self.layer_types) if t in ATTENTION_TYPES)

    @property
    def sliding_layers(self) -> tuple[int, ...]:
        return tuple(i for i, t in enumerate(self.layer_types) if t == "sliding_attention")

    def rope(self, layer: int) -> Rope | None:
        """The rotary embedding of ``layer``: None when it has no positional rotation (Jamba's attention)."""
        i = self.layer_rope[layer]
        if i == -2:
            raise ValueError(f"the harness could not determine layer {layer}'s RoPE")
        return None if i < 0 else self.ropes[i]

    @property
    def rotary_dim(self) -> int | None:
        """Features per head that RoPE rotates in the attention layers (0: no RoPE; None: unknown or mixed)."""
        dims = {-1 if self.layer_rope[i] == -2 else (self.ropes[self.layer_rope[i]].dim if self.layer_rope[i] >= 0
                                                     else 0) for i in self.attention_layers}
        return dims.pop() if len(dims) == 1 and -1 not in dims else None

    @property
    def scale(self) -> float:
        return self.attention_scale if self.attention_scale is not None else self.head_dim**-0.5


@dataclass(frozen=True)
class LayerView:
    """What a method may see of one layer. Tensors are shared with the harness: do not modify them.

    Shapes: ``keys``/``values`` (H_kv, T, D), post-RoPE; ``positions`` (H_kv, T) original token positions,
    ascending per head. When heads hold different numbers of tokens (after a ragged eviction) the view is
    padded to the longest head and ``valid`` (H_kv, T) marks the real entries; None means all are real.
    ``queries`` (H_q, N_q, D) are the queries the method asked for (None when it asked for none, and on
    board B, where the question is not known at compression time). On board C, at decode, they are the
    sequence's newest ``query_window`` queries (at most 4,096; the prompt's, then the decoded tokens'), oldest
    first: the harness asks a method only when a layer reaches its cap, so a method that accumulates something
    per step (H2O) and asks for a window of at least the block finds every query since its previous call here,
    and keeps its sums in ``state``.
    """

    layer: int
    keys: torch.Tensor
    values: torch.Tensor
    positions: torch.Tensor
    queries: torch.Tensor | None
    budget: int  # tokens to keep per KV head on average: at most budget * H_kv in total (and per head, where the
    # board caps heads); board C at decode: the layer's cap minus the block it gives back
    board: Board
    phase: Phase
    model: ModelInfo
    valid: torch.Tensor | None = None
    query_positions: torch.Tensor | None = None  # (N_q,) positions of the queries
    state: dict = field(default_factory=dict)  # per-layer scratch space kept across calls (board C)

    @property
    def n_tokens(self) -> int:
        return int(self.keys.shape[1])

    @property
    def n_kv_heads(self) -> int:
        return int(self.keys.shape[0])

    def valid_mask(self) -> torch.Tensor:
        if self.valid is not None:
            return self.valid
        return torch.ones(self.keys.shape[:2], dtype=torch.bool, device=self.keys.device)

    def attention(self, queries: torch.Tensor | None = None,
                  reduce: Literal["sum", "mean", "max"] | None = None) -> torch.Tensor:
        """Softmax attention of ``queries`` (H_q, N, D) over this layer's keys: (H_q, N, T).

        Causal with respect to ``query_positions`` when the queries are the view's own (and limited to the
        window on a sliding layer); padding gets 0. With ``reduce`` the result is reduced over the queries as
        it is computed, (H_q, T): what accumulated-attention methods need, without ever holding N x T (all
        prompt queries of a 32K context would be 32K x 32K per head). Computed in query chunks, so a method
        never needs eager attention in the forward pass.
        """
        q = self.queries if queries is None else queries
        if q is None:
            raise ValueError("this view has no queries: ask for them with query_window, or pass some")
        qpos = self.query_positions if queries is None else None
        window = self.model.sliding_window if self.layer in self.model.sliding_layers else None
        return reference_attention(q, self.keys, self.positions, qpos, self.model.group_size, self.valid,
                                   scale=self.model.scale, window=window, reduce=reduce)

    def group(self, per_query_head: torch.Tensor, reduce: Literal["mean", "max", "sum"] = "mean") -> torch.Tensor:
        """Reduce a (H_q, ...) tensor to (H_kv, ...) over each KV head's group of query heads."""
        g = self.model.group_size
        shaped = per_query_head.reshape(per_query_head.shape[0] // g, g, *per_query_head.shape[1:])
        return shaped.max(dim=1).values if reduce == "max" else getattr(shaped, reduce)(dim=1)

    @property
    def rope(self) -> Rope | None:
        """This layer's rotary embedding (None: the layer has no positional rotation)."""
        return self.model.rope(self.layer)

    def rotate(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """Apply the model's RoPE of this layer to ``x`` (..., N, D) at ``positions`` (N,); negative positions
        undo it. Partial RoPE rotates only the first ``rotary_dim`` features, as the model does.

        Keys and queries are handed over post-RoPE; ``rotate(q, -q_pos)`` recovers the pre-RoPE query, which
        methods that model future queries (Expected Attention) need.
        """
        rope = self.rope
        return x.float() if rope is None else rope.apply(x, positions)

    def remember(self, name: str, per_token: torch.Tensor) -> None:
        """Keep a per-token (H_kv, T) statistic for the next call on this layer (e.g. accumulated attention)."""
        self.state[name] = (self.positions.clone(), per_token.detach().clone(), self.valid_mask().clone())

    def recall(self, name: str, fill: float = 0.0) -> torch.Tensor:
        """A remembered statistic realigned to the current tokens by position; new tokens get ``fill``."""
        out = torch.full(self.keys.shape[:2], fill, dtype=torch.float32, device=self.keys.device)
        saved = self.state.get(name)
        if saved is None:
            return out
        old_pos, old_val, old_valid = (x.to(self.keys.device) for x in saved)
        valid = self.valid_mask()
        for h in range(self.n_kv_heads):
            op, ov = old_pos[h][old_valid[h]], old_val[h][old_valid[h]]
            if op.numel() == 0:
                continue
            op, order = op.sort()
            ov = ov[order]
            cur = self.positions[h]
            idx = torch.searchsorted(op, cur).clamp(max=op.numel() - 1)
            hit = (op[idx] == cur) & valid[h]
            out[h][hit] = ov[idx[hit]].float()
        return out


@dataclass(frozen=True)
class Keep:
    """Indices (into the view's T axis) to keep, one 1-D LongTensor per KV head; lengths may differ."""

    indices: tuple[torch.Tensor, ...]

    @staticmethod
    def same_for_all_heads(idx: torch.Tensor, n_kv_heads: int) -> "Keep":
        return Keep(tuple(idx for _ in range(n_kv_heads)))

    @staticmethod
    def from_topk(scores: torch.Tensor, k: int | torch.Tensor, valid: torch.Tensor | None = None) -> "Keep":
        """Top-``k`` tokens per head from scores (H_kv, T), never choosing padding; ``k`` may be per head."""
        n_heads, n = scores.shape
        if valid is not None:
            scores = scores.masked_fill(~valid, float("-inf"))
        out = []
        for h in range(n_heads):
            kh = int(k[h]) if isinstance(k, torch.Tensor) else int(k)
            avail = int(valid[h].sum()) if valid is not None else n
            kh = max(0, min(kh, avail))
            out.append(scores[h].topk(kh).indices.sort().values)
        return Keep(tuple(out))


@dataclass(frozen=True)
class Rewrite:
    """Replacement cache entries per KV head (merging methods): keys/values (T', D), positions (T',)."""

    keys: tuple[torch.Tensor, ...]
    values: tuple[torch.Tensor, ...]
    positions: tuple[torch.Tensor, ...]


class EvictionMethod(ABC):
    """Base class of every method. Subclass it, set the class attributes you need, implement ``select``.

    ``query_window``: how many of the last prompt queries the method wants in ``view.queries`` (0 = none).
    ``question_queries``: on board A, also hand over the queries of the question span.
    ``reconstruction_queries``: on board B_offline, run a one-off pass where the model re-reads the context
    after a "repeat" instruction, and hand over that pass's queries (KVzip); its time is reported apart.
    """

    name: ClassVar[str] = "unnamed"
    query_window: ClassVar[int] = 0
    question_queries: ClassVar[bool] = False
    reconstruction_queries: ClassVar[bool] = False

    def setup(self, model: ModelInfo) -> None:  # noqa: B027 - optional hook, empty by design
        """Called once before any layer; keep what you need from ``model``."""

    def layer_budgets(self, mean_budget: int, n_tokens: int, model: ModelInfo) -> list[int] | None:
        """Optional per-layer allocation (e.g. a pyramid): one budget per layer of ``model.attention_layers``,
        in that order (on an all-attention model, every layer), summing to at most ``mean_budget`` times their
        number. None = the same budget for every layer. On board C the cap is per layer: ``mean_budget`` and
        ``n_tokens`` are both the cap, and a layer given more than the cap is refused."""
        return None

    @abstractmethod
    def select(self, view: LayerView) -> Keep | Rewrite:
        """Choose what this layer keeps: the one hook every method defines."""

    def on_decode(self, view: LayerView) -> Keep | Rewrite:
        """Board C: called when a layer's cache reaches its cap during generation, to give back a block (keep at
        most ``view.budget``, an eighth of the cap below it); every layer due at the same step comes in one
        round trip. Defaults to ``select``."""
        return self.select(view)


def rope_angles(positions: torch.Tensor, head_dim: int, theta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(cos, sin), each (N, D), of Llama-style RoPE (half-split pairs, as transformers' ``rotate_half``)."""
    return Rope.from_theta(theta, head_dim).angles(positions)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], dim=-1)


def apply_rope(x: torch.Tensor, positions: torch.Tensor, theta: float) -> torch.Tensor:
    """Plain full-width RoPE of base ``theta`` (``Rope.apply`` covers partial and scaled RoPE)."""
    return Rope.from_theta(theta, x.shape[-1]).apply(x, positions)


CHUNK_ELEMENTS = 1 << 24  # logits held at once by reference_attention (64 MiB of float32)


def reference_attention(
    queries: torch.Tensor,
    keys: torch.Tensor,
    key_positions: torch.Tensor,
    query_positions: torch.Tensor | None,
    group_size: int,
    valid: torch.Tensor | None = None,
    chunk: int = 256,
    *,
    scale: float | None = None,
    window: int | None = None,
    reduce: Literal["sum", "mean", "max"] | None = None,
) -> torch.Tensor:
    """Softmax(QK^T * scale) with GQA, causal when ``query_positions`` is given (and, with ``window``, limited
    to keys at positions > query position - window), in query chunks.

    ``key_positions`` and ``valid`` are (H_kv, T); padding entries get zero attention. Returns (H_q, N, T), or
    (H_q, T) reduced over the queries with ``reduce``, in which case at most one chunk of rows (never N x T) is
    held: the chunk shrinks with T so that a chunk's logits stay under ``CHUNK_ELEMENTS``. Each query's row is
    computed the same way whatever the chunking, so chunked and unchunked results agree.
    """
    h_q, n_q, d = queries.shape
    h_kv, t = keys.shape[0], keys.shape[1]
    g = group_size
    k = keys.float()  # (H_kv, T, D): the query heads of a group share their KV head, never repeated
    kpos = key_positions.view(h_kv, 1, 1, t)
    pad = None if valid is None else ~valid.view(h_kv, 1, 1, t)
    scale = d**-0.5 if scale is None else scale
    rows = max(1, min(chunk, CHUNK_ELEMENTS // max(1, h_q * t)))
    dev = queries.device
    out = (torch.empty(h_q, n_q, t, dtype=torch.float32, device=dev) if reduce is None else
           torch.full((h_q, t), float("-inf"), device=dev) if reduce == "max" else
           torch.zeros(h_q, t, dtype=torch.float32, device=dev))
    for start in range(0, n_q, rows):
        qc = queries[:, start: start + rows].float()  # (H_q, c, D)
        c = qc.shape[1]
        # in place where possible: a chunk holds its logits and its probabilities at once, never more copies
        logits = torch.matmul(qc.reshape(h_kv, g * c, d), k.transpose(1, 2)).view(h_kv, g, c, t).mul_(scale)
        if query_positions is not None:
            qp = query_positions[start: start + rows].to(kpos.device).view(1, 1, c, 1)
            hide = kpos > qp
            if window is not None:
                hide = hide | (kpos <= qp - window)
            logits.masked_fill_(hide, float("-inf"))
            del hide
        if pad is not None:
            logits.masked_fill_(pad, float("-inf"))
        probs = logits.softmax(dim=-1)
        del logits
        probs = probs.nan_to_num_(0.0).view(h_q, c, t)
        if reduce is None:
            out[:, start: start + c] = probs
        elif reduce == "max":
            out = torch.maximum(out, probs.amax(dim=1))
        else:
            out += probs.sum(dim=1)
    if reduce == "mean":
        out /= max(1, n_q)
    elif reduce == "max" and n_q == 0:
        out.zero_()
    return out
