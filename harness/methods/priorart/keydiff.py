"""KeyDiff (Park et al., 2025, arXiv 2504.15364): attention-free; the anchor is the mean of the L2-normalised keys
of the cache, and each key scores minus its cosine similarity to that anchor: the most distinctive keys are kept,
per KV head. No sinks or recent window are protected. ``block_size`` 0 scores the whole prompt at once (the rule;
kvpress's KeyDiffPress); the paper's own pipeline is block-wise prompt processing (kvpress BlockPress, block 128):
keep ``budget`` tokens, append the next block, rescore the union with a fresh anchor, keep the top ``budget`` again.
Settings: pa_keydiff; pa_keydiff?block_size=128; pa_keydiff?block_size=512
"""

from typing import ClassVar

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


def _keydiff(keys: torch.Tensor) -> torch.Tensor:
    anchor = F.normalize(keys.float(), dim=-1).mean(dim=-2, keepdim=True)
    return -F.cosine_similarity(keys.float(), anchor, dim=-1)


class KeyDiff(EvictionMethod):
    name = "pa_keydiff"
    paper: ClassVar[str] = "KeyDiff"
    block_size = 0  # 0: one shot over the prompt; > 0: the paper's block-wise prompt processing

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if self.block_size <= 0:
            return Keep.from_topk(_keydiff(view.keys), view.budget, view.valid)
        valid = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            idx = valid[h].nonzero()[:, 0]
            kept = idx[: view.budget]
            for s in range(view.budget, idx.numel(), self.block_size):
                cand = torch.cat([kept, idx[s: s + self.block_size]])
                top = _keydiff(view.keys[h, cand]).topk(min(view.budget, cand.numel())).indices
                kept = cand[top.sort().values]
            out.append(kept.sort().values)
        return Keep(tuple(out))
