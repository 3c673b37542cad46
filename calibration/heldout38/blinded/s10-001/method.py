"""InfLLM's block memory (Xiao et al., 2024, "InfLLM: Training-Free Long-Context Extrapolation for LLMs with an
Efficient Context Memory", arXiv 2402.04617), ported to one-shot eviction on board A.

What InfLLM does: the distant context is cut into fixed-size blocks; each block is summarised by a few
representative tokens; at every step the current queries score each block by their dot products with its
representatives, and attention runs over the initial tokens, the local window and the best-scoring blocks,
with the rest of the memory offloaded to CPU and fetched back when wanted.

What this port changes: the harness evicts once after prefill and has no offload, so the blocks are chosen
once, by the question's queries (the nearest thing to InfLLM's lookup at the first decoding step), and the
unchosen blocks are dropped, not offloaded. InfLLM picks representatives by the attention a token receives
inside its local window during prefill; the harness does not hand a method those per-block queries, so here a
block's representatives are its tokens whose keys lie closest to the block's mean key (a stand-in). Block
size, representatives per block, initial tokens and local window are this port's choices.
"""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class InfLLMBlocks(EvictionMethod):
    name = "infllm_blocks"
    question_queries = True
    block = 32
    reps = 4
    initial = 4
    local = 48

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        g = view.model.group_size
        out = []
        for h in range(view.n_kv_heads):
            idx = valid[h].nonzero().flatten()
            m = idx.numel()
            budget = min(view.budget, m)
            k = view.keys[h, idx].float()
            q = view.queries[h * g:(h + 1) * g].float().reshape(-1, k.shape[-1])
            order = torch.arange(m, device=k.device)
            fixed = (order < self.initial) | (order >= m - self.local)
            if int(fixed.sum()) >= budget:
                # initial tokens, then as much of the local window as fits
                keep = torch.cat([order[: min(self.initial, budget)],
                                  order[m - max(0, budget - self.initial):]]).unique()
                out.append(idx[keep])
                continue
            mid = order[self.initial: m - self.local]
            n_blocks = (mid.numel() + self.block - 1) // self.block
            pad = n_blocks * self.block - mid.numel()
            kb = torch.cat([k[mid], k[mid[-1:]].expand(pad, -1)]).view(n_blocks, self.block, -1)
            real = torch.cat([torch.ones(mid.numel(), dtype=torch.bool, device=k.device),
                              torch.zeros(pad, dtype=torch.bool, device=k.device)]).view(n_blocks, self.block)
            centre = (kb * real[..., None]).sum(1) / real.sum(1, keepdim=True)
            near = -(kb - centre[:, None]).pow(2).sum(-1)
            near = near.masked_fill(~real, -float("inf"))
            r = min(self.reps, self.block)
            rep_idx = near.topk(r, dim=1).indices                          # (B, r)
            rep_ok = real.gather(1, rep_idx)
            reps = kb.gather(1, rep_idx[..., None].expand(-1, -1, kb.shape[-1]))   # (B, r, D)
            rel = torch.einsum("nd,brd->br", q, reps).masked_fill(~rep_ok, 0).sum(1) / rep_ok.sum(1)
            room = budget - int(fixed.sum())
            chosen = []
            for b in rel.argsort(descending=True).tolist():
                if room <= 0:
                    break
                members = mid[b * self.block:(b + 1) * self.block][:room]
                chosen.append(members)
                room -= members.numel()
            keep = torch.cat([order[fixed]] + chosen).sort().values
            out.append(idx[keep])
        return Keep(tuple(out))
