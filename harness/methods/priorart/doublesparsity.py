"""Double Sparsity (Yang et al., 2024, arXiv 2408.07092, "Post-Training Sparse Attention with Double Sparsity"):
token sparsity found through channel sparsity: a few "outlier" channels, those with the largest |q_c| |k_c|
contributions (found once, offline, in the paper: the label cache), estimate q k^T cheaply, and the tokens with the
largest estimated scores are the ones attended (kept). Offline calibration is not possible on one view, so the
channels are calibrated on the view's own window queries: per KV head, channel c scores sum over the group's
window queries and the keys of |q_c| |k_c|; the top ``channel_share`` of the head dimension (the paper's 16 of 128)
form the label. The newest query's estimated logits on those channels, softmaxed (scaled by 1/sqrt(d)) and summed
over the group, rank the tokens; top-k per KV head, nothing else protected. Without queries: recency.
Settings: pa_doublesparsity; pa_doublesparsity?channel_share=0.25; pa_doublesparsity?query_window=1; pa_doublesparsity?channel_share=0.0625
"""

from typing import ClassVar

import torch

from harness.api import EvictionMethod, Keep, LayerView


class DoubleSparsity(EvictionMethod):
    name = "pa_doublesparsity"
    paper: ClassVar[str] = "Double Sparsity"
    query_window = 32  # the calibration queries (the last one scores)
    channel_share = 0.125  # 16 of 128 channels

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        h_kv, g = view.n_kv_heads, view.model.group_size
        q = view.queries.float().reshape(h_kv, g * view.queries.shape[1], -1)  # (H_kv, g*w, D)
        k = view.keys.float() * view.valid_mask()[..., None]
        d = k.shape[-1]
        r = max(1, round(d * self.channel_share))
        outlier = (q.abs().sum(dim=1) * k.abs().sum(dim=1))  # (H_kv, D): sum_i sum_j |q_ic| |k_jc|
        chans = outlier.topk(r, dim=-1).indices  # (H_kv, r)
        last = view.queries[:, -1].float().reshape(h_kv, g, d)
        q_r = last.gather(2, chans[:, None, :].expand(h_kv, g, r))
        k_r = view.keys.float().gather(2, chans[:, None, :].expand(h_kv, view.n_tokens, r))
        logits = torch.matmul(q_r, k_r.transpose(1, 2)) * view.model.scale  # (H_kv, g, T)
        if view.query_positions is not None:
            logits = logits.masked_fill((view.positions > view.query_positions[-1])[:, None, :], float("-inf"))
        logits = logits.masked_fill(~view.valid_mask()[:, None, :], float("-inf"))
        scores = logits.softmax(dim=-1).nan_to_num(0.0).sum(dim=1)
        return Keep.from_topk(scores, view.budget, view.valid)
