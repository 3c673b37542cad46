"""CapKV (Yang et al., 2026, arXiv 2604.25975, "Rethinking KV Cache Eviction via a Unified Information-Theoretic
Objective"): keep the tokens that add most log-det "capacity": with w_i = exp(tau <k_i, mu_q>) (mu_q the mean
historical query) and u_i = v_i, s_i = w_i u_i^T (I + sum_j w_j u_j u_j^T)^-1 u_i, per query head, averaged over the
KV head's query heads; the first ``n_sink`` tokens are kept and left out. Defaults are the official kvpress CapPress's
(tau 5, 4 sinks, 512 future positions, epsilon 1e-6), which L2-normalises keys and anchor before the dot product
(the paper uses raw dot products: ``normalise`` False), shifts logits by their max, and moves the mean pre-RoPE
query (the sinks' queries left out) by the mean RoPE rotation of the next 512 positions. Without queries: recency.
Settings: pa_capkv; pa_capkv?tau=1.0; pa_capkv?tau=10.0; pa_capkv?normalise=False
"""

from typing import ClassVar

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView
from harness.methods.expected_attention import _mean_rotation, _rope_known


class CapKV(EvictionMethod):
    name = "pa_capkv"
    paper: ClassVar[str] = "CapKV"
    query_window = 1 << 20  # every context query: the historical-query anchor
    tau = 5.0
    n_sink = 4
    n_future = 512
    epsilon = 1e-6
    normalise = True

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens or not _rope_known(view):
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        assert view.query_positions is not None
        rows = view.query_positions >= self.n_sink
        pre = view.rotate(view.queries[:, rows], -view.query_positions[rows])  # (H_q, N, D) pre-RoPE
        d = pre.shape[-1]
        mu = pre.mean(dim=1) @ _mean_rotation(view, int(view.positions.max()) + 1, self.n_future, d).T  # (H_q, D)
        g = view.model.group_size
        keys = view.keys.float().repeat_interleave(g, dim=0)  # (H_q, T, D)
        vals = view.values.float().repeat_interleave(g, dim=0)
        if self.normalise:
            stat = torch.einsum("hd,htd->ht", F.normalize(mu, dim=-1), F.normalize(keys, dim=-1)).clamp(-1, 1)
        else:
            stat = torch.einsum("hd,htd->ht", mu, keys)
        body = (view.positions >= self.n_sink).repeat_interleave(g, dim=0) & view.valid_mask().repeat_interleave(g, 0)
        logits = (self.tau * stat).masked_fill(~body, float("-inf"))
        w = (logits - logits.amax(dim=-1, keepdim=True)).exp()  # 0 on sinks and padding
        scaled = vals * (w + self.epsilon * body).sqrt()[..., None]
        cap = torch.eye(d, device=vals.device) + torch.einsum("htd,hte->hde", scaled, scaled)
        lev = (vals * torch.linalg.solve(cap, vals.transpose(1, 2)).transpose(1, 2)).sum(dim=-1)  # (H_q, T)
        scores = view.group(w * lev, "mean")
        return Keep.from_topk(scores.masked_fill(view.positions < self.n_sink, float("inf")), view.budget, view.valid)
