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


@dataclass(frozen=True)
class ModelInfo:
    """Static facts about the model, handed to :meth:`EvictionMethod.setup` once."""

    name: str
    n_layers: int
    n_heads: int  # query heads
    n_kv_heads: int
    head_dim: int
    rope_theta: float | None = None  # base of plain (Llama-style) RoPE; None when the model uses another scheme

    @property
    def group_size(self) -> int:
        """Query heads per KV head (GQA)."""
        return self.n_heads // self.n_kv_heads


@dataclass(frozen=True)
class LayerView:
    """What a method may see of one layer. Tensors are shared with the harness: do not modify them.

    Shapes: ``keys``/``values`` (H_kv, T, D), post-RoPE; ``positions`` (H_kv, T) original token positions,
    ascending per head. When heads hold different numbers of tokens (after a ragged eviction) the view is
    padded to the longest head and ``valid`` (H_kv, T) marks the real entries; None means all are real.
    ``queries`` (H_q, N_q, D) are the queries the method asked for (None when it asked for none, and on
    board B, where the question is not known at compression time).
    """

    layer: int
    keys: torch.Tensor
    values: torch.Tensor
    positions: torch.Tensor
    queries: torch.Tensor | None
    budget: int  # tokens to keep per KV head on average; the harness enforces budget * H_kv in total
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

    def attention(self, queries: torch.Tensor | None = None) -> torch.Tensor:
        """Softmax attention of ``queries`` (H_q, N, D) over this layer's keys: (H_q, N, T).

        Causal with respect to ``query_positions`` when the queries are the view's own; padding gets 0.
        Computed here in query chunks, so a method never needs eager attention in the forward pass.
        """
        q = self.queries if queries is None else queries
        if q is None:
            raise ValueError("this view has no queries: ask for them with query_window, or pass some")
        qpos = self.query_positions if queries is None else None
        return reference_attention(q, self.keys, self.positions, qpos, self.model.group_size, self.valid)

    def group(self, per_query_head: torch.Tensor, reduce: Literal["mean", "max", "sum"] = "mean") -> torch.Tensor:
        """Reduce a (H_q, ...) tensor to (H_kv, ...) over each KV head's group of query heads."""
        g = self.model.group_size
        shaped = per_query_head.reshape(per_query_head.shape[0] // g, g, *per_query_head.shape[1:])
        return shaped.max(dim=1).values if reduce == "max" else getattr(shaped, reduce)(dim=1)

    def rotate(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """Apply the model's RoPE to ``x`` (..., N, D) at ``positions`` (N,); negative positions undo it.

        Keys and queries are handed over post-RoPE; ``rotate(q, -q_pos)`` recovers the pre-RoPE query, which
        methods that model future queries (Expected Attention) need.
        """
        if self.model.rope_theta is None:
            raise ValueError("this model does not use plain RoPE (ModelInfo.rope_theta is None)")
        return apply_rope(x, positions, self.model.rope_theta)

    def remember(self, name: str, per_token: torch.Tensor) -> None:
        """Keep a per-token (H_kv, T) statistic for the next call on this layer (e.g. accumulated attention)."""
        self.state[name] = (self.positions.clone(), per_token.detach().clone(), self.valid_mask().clone())

    def recall(self, name: str, fill: float = 0.0) -> torch.Tensor:
        """A remembered statistic realigned to the current tokens by position; new tokens get ``fill``."""
        out = torch.full(self.keys.shape[:2], fill, dtype=torch.float32)
        saved = self.state.get(name)
        if saved is None:
            return out
        old_pos, old_val, old_valid = saved
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
        """Optional per-layer allocation (e.g. a pyramid). None = the same budget for every layer."""
        return None

    @abstractmethod
    def select(self, view: LayerView) -> Keep | Rewrite:
        """Choose what this layer keeps: the one hook every method defines."""

    def on_decode(self, view: LayerView) -> Keep | Rewrite:
        """Board C: called when a layer's cache exceeds its cap during generation. Defaults to ``select``."""
        return self.select(view)


def rope_angles(positions: torch.Tensor, head_dim: int, theta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(cos, sin), each (N, D), of Llama-style RoPE (half-split pairs, as transformers' ``rotate_half``)."""
    inv_freq = theta ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    ang = positions.to(torch.float64)[:, None] * inv_freq[None, :]
    ang = torch.cat([ang, ang], dim=-1)
    return ang.cos().float(), ang.sin().float()


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], dim=-1)


def apply_rope(x: torch.Tensor, positions: torch.Tensor, theta: float) -> torch.Tensor:
    cos, sin = rope_angles(positions, x.shape[-1], theta)
    return x.float() * cos + rotate_half(x.float()) * sin


def reference_attention(
    queries: torch.Tensor,
    keys: torch.Tensor,
    key_positions: torch.Tensor,
    query_positions: torch.Tensor | None,
    group_size: int,
    valid: torch.Tensor | None = None,
    chunk: int = 256,
) -> torch.Tensor:
    """Softmax(QK^T/sqrt(d)) with GQA, causal when ``query_positions`` is given, in query chunks.

    ``key_positions`` and ``valid`` are (H_kv, T); padding entries get zero attention.
    """
    h_q, n_q, d = queries.shape
    k = keys.repeat_interleave(group_size, dim=0).float()  # (H_q, T, D)
    kpos = key_positions.repeat_interleave(group_size, dim=0).view(h_q, 1, -1)
    pad = None if valid is None else ~valid.repeat_interleave(group_size, dim=0).view(h_q, 1, -1)
    out = torch.empty(h_q, n_q, keys.shape[1], dtype=torch.float32)
    scale = d**-0.5
    for start in range(0, n_q, chunk):
        logits = torch.einsum("hnd,htd->hnt", queries[:, start : start + chunk].float(), k) * scale
        if query_positions is not None:
            qp = query_positions[start : start + chunk].view(1, -1, 1)
            logits = logits.masked_fill(kpos > qp, float("-inf"))
        if pad is not None:
            logits = logits.masked_fill(pad, float("-inf"))
        out[:, start : start + chunk] = logits.softmax(dim=-1).nan_to_num(0.0)
    return out
