"""Port of InfLLM (Xiao et al., 2024, "InfLLM: Training-Free Long-Context Extrapolation for LLMs with an
Efficient Context Memory", arXiv 2402.04617) as one-shot eviction on board A.

InfLLM keeps initial tokens and a local window in attention and stores the distant context in fixed-size memory
blocks; each block is represented by a few representative tokens (the ones that received the most attention
inside the block), and for the current queries the blocks whose representatives score highest are retrieved.
Deviations, stated: nothing is offloaded or retrieved per step here; the harness asks for one eviction after
prefill, so the port scores every block once with the question's queries (relevance = question-query dot
products with the block's representatives, mean over queries, max over representatives and the group's heads)
and keeps whole blocks by relevance, after the initial tokens, the local window and the question itself.
Block size, representatives per block and window sizes are the porter's choice.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class InfLLMPort(EvictionMethod):
    name = "infllm_port"
    question_queries = True
    block = 16
    reps = 4
    initial = 4
    local = 32

    def select(self, view: LayerView) -> Keep:
        n = view.n_tokens
        if view.budget >= n or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        start = int(view.query_positions.min())
        H, _, D = view.keys.shape
        g = view.model.group_size
        ctx_end = int((view.positions[0] < start).sum())
        lo, hi = self.initial, max(self.initial, ctx_end - self.local)
        out = []
        for h in range(H):
            keep = torch.zeros(n, dtype=torch.bool)
            keep[: self.initial] = True
            keep[hi:] = True
            left = view.budget - int(keep.sum())
            nb = (hi - lo) // self.block
            if left > 0 and nb > 0:
                blk = view.keys[h, lo: lo + nb * self.block].float().reshape(nb, self.block, D)
                inner = torch.softmax(blk @ blk.transpose(1, 2) * view.model.scale, dim=-1).sum(dim=1)
                rep_idx = inner.topk(min(self.reps, self.block), dim=-1).indices               # (nb, r)
                reps = torch.gather(blk, 1, rep_idx[..., None].expand(-1, -1, D))              # (nb, r, D)
                q = view.queries[h * g:(h + 1) * g].float().reshape(-1, D)                     # (g*N, D)
                rel = (torch.einsum("qd,brd->qbr", q, reps) * view.model.scale).amax(-1).mean(0)
                take = rel.topk(min(nb, left // self.block)).indices
                for b in take.tolist():
                    keep[lo + b * self.block: lo + (b + 1) * self.block] = True
                left = view.budget - int(keep.sum())
                if left > 0:    # what a whole block cannot fill: the tokens just before the window
                    free = (~keep).nonzero().flatten()
                    keep[free[-left:]] = True
            idx = keep.nonzero().flatten()
            if idx.numel() > view.budget:     # a tiny budget: the initial tokens, then the newest
                lead = min(self.initial, view.budget // 2)
                rest = idx[lead:]
                idx = torch.cat([idx[:lead], rest[rest.numel() - (view.budget - lead):]])
            out.append(idx)
        return Keep(tuple(out))
