"""InfLLM's block memory, ported as a one-shot eviction rule (board A).

Source: Xiao et al., 2024, "InfLLM: Training-Free Long-Context Extrapolation for LLMs with an Efficient Context
Memory", arXiv 2402.04617. InfLLM keeps the initial tokens and a local window resident, stores the distant
context as fixed-size blocks, describes each block by a few representative tokens, and for the current query
loads the blocks whose representatives score highest (dot product of the query with the representative keys).

This port runs that lookup once, with the question's queries, and keeps the chosen blocks for good (the harness
evicts; InfLLM only offloads, so nothing here can be recalled later). Deviations:
* Representatives: InfLLM picks the tokens that receive the most attention from their own local window. The
  harness hands over only the question's queries on this board, so here a block's representatives are its keys
  closest (cosine) to the block's mean key.
* Block size follows the budget (budget / 3, between 4 and 32 tokens) instead of InfLLM's fixed 128, so that a
  2 % budget on a short context still holds whole blocks; 2 representatives per block.
* The question's queries are pooled per KV head (summed over its query heads and question positions).
Initial tokens (4) and the question span are always kept.
"""

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class InfLLMBlocks(EvictionMethod):
    name = "infllm_blocks"
    question_queries = True
    query_window = 8
    n_initial = 4
    n_repr = 2

    def block_size(self, budget: int) -> int:
        return max(4, min(32, budget // 3))

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        g = view.model.group_size
        fixed = (view.positions < self.n_initial) | (view.positions >= view.query_positions.min())
        pooled_q = view.queries.float().reshape(view.n_kv_heads, g * view.queries.shape[1], -1).sum(dim=1)
        b = self.block_size(view.budget)
        out = []
        for h in range(view.n_kv_heads):
            idx = torch.nonzero(valid[h] & ~fixed[h]).flatten()
            keep_fixed = torch.nonzero(valid[h] & fixed[h]).flatten()
            room = view.budget - int(keep_fixed.numel())
            if room <= 0 or idx.numel() == 0:
                out.append(keep_fixed[-view.budget:] if room < 0 else keep_fixed)
                continue
            n_blocks = (idx.numel() + b - 1) // b
            pad = n_blocks * b - idx.numel()
            keys = F.pad(view.keys[h, idx].float(), (0, 0, 0, pad))
            live = F.pad(torch.ones(idx.numel(), dtype=torch.bool, device=idx.device), (0, pad)).view(n_blocks, b)
            blocks = keys.view(n_blocks, b, -1)
            mean = (blocks * live[..., None]).sum(dim=1) / live.sum(dim=1, keepdim=True)
            cos = F.cosine_similarity(blocks, mean[:, None, :], dim=-1).masked_fill(~live, -2.0)
            r = min(self.n_repr, b)
            reps = torch.gather(blocks, 1, cos.topk(r, dim=1).indices[..., None].expand(-1, -1, blocks.shape[-1]))
            relevance = (reps @ pooled_q[h]).sum(dim=1)  # (n_blocks,)
            chosen = []
            for blk in relevance.argsort(descending=True).tolist():
                members = idx[blk * b: (blk + 1) * b]
                if sum(m.numel() for m in chosen) + members.numel() > room:
                    continue
                chosen.append(members)
            out.append(torch.cat([keep_fixed, *chosen]).sort().values)
        return Keep(tuple(out))
