"""InfiniGen (Lee et al., OSDI 2024, arXiv 2406.19707): the attention of the coming query is rehearsed with a few
channels only, and the tokens it ranks highest are the ones fetched (kept). Offline, the query and key weights are
"skewed" by the right singular vectors of a sample query matrix (Q = U S V^T; q V and k V keep every q k^T, but
concentrate the energy in a few channels); at run time the partial channels are those with the largest summed
magnitude of the skewed query, ``partial_ratio`` of the head dimension (the paper's 0.3). On one view the skewing
matrix comes from the view's own window queries (the group's, post-RoPE, per KV head); the newest query's partial
logits (1/sqrt(d)) are softmaxed and summed over the group; the paper keeps the tokens within ``alpha`` of the top
logit, a fixed budget keeps the top-k instead. Without queries: recency.
Settings: pa_infinigen; pa_infinigen?partial_ratio=0.2; pa_infinigen?query_window=128
"""

from typing import ClassVar

import torch

from harness.api import EvictionMethod, Keep, LayerView


class InfiniGen(EvictionMethod):
    name = "pa_infinigen"
    paper: ClassVar[str] = "InfiniGen"
    query_window = 32  # the sample queries whose SVD skews the channels (the last one scores)
    partial_ratio = 0.3

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        h_kv, g = view.n_kv_heads, view.model.group_size
        d = view.keys.shape[-1]
        q = view.queries.float().reshape(h_kv, g * view.queries.shape[1], d)
        vh = torch.linalg.svd(q.double(), full_matrices=True).Vh.float()  # (H_kv, D, D): rows = right sing. vectors
        skew = vh.transpose(1, 2)  # q @ skew: the skewed basis
        q_s, k_s = torch.matmul(q, skew), torch.matmul(view.keys.float(), skew)
        r = max(1, round(d * self.partial_ratio))
        chans = q_s.abs().sum(dim=1).topk(r, dim=-1).indices  # (H_kv, r)
        last = torch.matmul(view.queries[:, -1].float().reshape(h_kv, g, d), skew)
        q_r = last.gather(2, chans[:, None, :].expand(h_kv, g, r))
        k_r = k_s.gather(2, chans[:, None, :].expand(h_kv, view.n_tokens, r))
        logits = torch.matmul(q_r, k_r.transpose(1, 2)) * view.model.scale  # (H_kv, g, T)
        if view.query_positions is not None:
            logits = logits.masked_fill((view.positions > view.query_positions[-1])[:, None, :], float("-inf"))
        logits = logits.masked_fill(~view.valid_mask()[:, None, :], float("-inf"))
        scores = logits.softmax(dim=-1).nan_to_num(0.0).sum(dim=1)
        return Keep.from_topk(scores, view.budget, view.valid)
