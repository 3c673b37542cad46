"""Expected Attention (Devoto, Jeblick, Jégou, 2025, arXiv 2510.00636; NVIDIA kvpress's ExpectedAttentionPress).

Query-agnostic: future queries are modelled as a Gaussian fitted to the context's own pre-RoPE queries
(mean and covariance per query head, the first ``n_sink`` tokens left out), moved to the next
``n_future`` positions by the average RoPE rotation R̄ (mean' = R̄ mean, cov' = R̄ cov R̄ᵀ). A key's expected
attention logit is mean'·k/√d + kᵀ cov' k / 2d; the score is the softmax of that over the (non-sink) keys, averaged
over the KV head's query heads, then times the value norm (plus ``epsilon``). The sinks are always kept.

Defaults are the official press's (n_future 512, n_sink 4, covariance and value norm on, epsilon 0); the
arena leaderboard's configuration wraps it in Ada-KV with epsilon 1e-2; here the budget is uniform per head,
as in the bare press. Statistics come from the queries of the whole context (the press uses its hidden
states, which is the same thing), recovered pre-RoPE with ``view.rotate`` (partial RoPE: only the rotated
features move; no RoPE: R̄ is the identity). Where the layer's RoPE is unknown, or without queries, it keeps
the most recent tokens.
"""

import torch

from harness.api import EvictionMethod, Keep, LayerView, rotate_half


class ExpectedAttention(EvictionMethod):
    name = "expected_attention"
    query_window = 1 << 20  # every context query: statistics over the whole context
    n_future = 512
    n_sink = 4
    use_covariance = True
    use_vnorm = True
    epsilon = 0.0

    def scores(self, view: LayerView) -> torch.Tensor:
        q, qpos = view.queries, view.query_positions
        assert q is not None and qpos is not None  # select() falls back to recency without queries
        keep_rows = qpos >= self.n_sink
        q, qpos = q[:, keep_rows], qpos[keep_rows]
        pre = view.rotate(q, -qpos)  # (H_q, N, D) pre-RoPE queries
        mean = pre.mean(dim=1)  # (H_q, D)
        d = pre.shape[-1]
        start = int(view.positions.max()) + 1
        rbar = _mean_rotation(view, start, self.n_future, d)  # (D, D)
        mean_f = mean @ rbar.T  # R̄ mean
        keys = view.keys.float().repeat_interleave(view.model.group_size, dim=0)  # (H_q, T, D)
        logits = torch.einsum("hd,htd->ht", mean_f, keys) / d**0.5
        if self.use_covariance and pre.shape[1] > 1:
            centred = pre - mean[:, None]
            cov = torch.einsum("hni,hnj->hij", centred, centred) / pre.shape[1]  # biased, as the official code
            cov_f = rbar @ cov @ rbar.T
            logits = logits + torch.einsum("hti,hij,htj->ht", keys, cov_f, keys) / (2 * d)
        sink = view.positions < self.n_sink  # the sinks are kept apart and left out of the softmax
        out = ~view.valid_mask() | sink
        logits = logits.masked_fill(out.repeat_interleave(view.model.group_size, dim=0), float("-inf"))
        scores = view.group(logits.softmax(dim=-1), "mean")  # (H_kv, T)
        if self.use_vnorm:
            scores = (scores + self.epsilon) * view.values.float().norm(dim=-1)
        return scores.masked_fill(sink, float("inf"))

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or not _rope_known(view) or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        return Keep.from_topk(self.scores(view), view.budget, view.valid)


def _rope_known(view: LayerView) -> bool:
    try:
        view.rope
    except ValueError:
        return False
    return True


def _mean_rotation(view: LayerView, start: int, n: int, d: int) -> torch.Tensor:
    """R̄ = mean over the next ``n`` positions of the layer's rotation R(p), as a (D, D) matrix (identity on the
    features partial RoPE leaves alone, and everywhere on a layer without RoPE)."""
    rope = view.rope
    if rope is None:
        return torch.eye(d, device=view.keys.device)
    cos, sin = rope.angles(torch.arange(start, start + n, device=view.keys.device))
    return _rotation_matrix(cos.mean(dim=0), sin.mean(dim=0), d)


def _rotation_matrix(cos: torch.Tensor, sin: torch.Tensor, d: int) -> torch.Tensor:
    """R̄ as a (D, D) matrix: R̄ x = x * cos + rotate_half(x) * sin on the first len(cos) features."""
    eye = torch.eye(d, device=cos.device)
    r = cos.shape[0]
    rotated = eye[:, :r] * cos + rotate_half(eye[:, :r]) * sin
    return torch.cat([rotated, eye[:, r:]], dim=1).T
