"""ShadowKV (Sun et al., 2024, arXiv 2410.21465): the prompt's keys are cut into chunks of 8; each chunk's
landmark is the mean of its (post-RoPE) keys. Chunks whose keys stray from their landmark (lowest minimum
cosine similarity) are outliers, kept always (24 per 1,024 tokens of sparse budget: 48 for 2,048, as the
official config); the last 4 chunks (local window) are kept too. The current query against the landmarks
(softmax, summed over the GQA group) picks the top chunks for the rest of the budget. Prefill query = the last
prompt query. ShadowKV re-selects per decoding step from a low-rank key cache; here one selection is final.
Settings: pa_shadowkv; pa_shadowkv?outliers_per_1k=0; pa_shadowkv?chunk_size=16; pa_shadowkv?local_chunks=0"""

from typing import ClassVar

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView
from harness.methods.priorart._blocks import whole_blocks_first


class ShadowKV(EvictionMethod):
    name = "pa_shadowkv"
    paper: ClassVar[str] = "ShadowKV"
    query_window = 1
    chunk_size = 8
    local_chunks = 4
    outliers_per_1k = 24  # outlier chunks per 1,024 tokens of budget

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        h, t, cs = view.n_kv_heads, view.n_tokens, self.chunk_size
        nc = max(0, t - self.local_chunks * cs) // cs  # complete chunks before the local window
        if nc == 0:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        chunks = view.keys[:, : nc * cs].float().view(h, nc, cs, -1)
        landmarks = chunks.mean(dim=2)  # (H, nc, D)
        cos = F.cosine_similarity(landmarks[:, :, None], chunks, dim=-1).amin(dim=-1)  # (H, nc)
        n_out = min(nc, view.budget * self.outliers_per_1k // 1024)
        outlier = torch.zeros(h, nc, dtype=torch.bool, device=cos.device)
        if n_out:
            outlier.scatter_(1, cos.topk(n_out, dim=1, largest=False).indices, True)
        q = view.queries[:, -1].float()  # (H_q, D)
        logits = torch.einsum("hd,hcd->hc", q, landmarks.repeat_interleave(view.model.group_size, 0))
        logits = logits * view.model.scale
        probs = logits.masked_fill(outlier.repeat_interleave(view.model.group_size, 0), float("-inf")).softmax(-1)
        chunk_scores = view.group(probs.nan_to_num(0.0), "sum").masked_fill(outlier, float("inf"))
        n_blocks = -(-t // cs)
        chunk_scores = F.pad(chunk_scores, (0, n_blocks - nc), value=float("inf"))  # local window and tail
        ranked = whole_blocks_first(chunk_scores, view.positions.float(), cs)
        ranked[:, nc * cs:] = float("inf")
        return Keep.from_topk(ranked, view.budget, view.valid)
