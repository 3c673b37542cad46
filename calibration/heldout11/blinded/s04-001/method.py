"""Block-gated retention for decode-time eviction (board C): a training-free port of MoBA's block gate.

MoBA (Mixture of Block Attention; Lu et al., 2025, arXiv 2502.13189) lets every query attend to a few blocks of
keys chosen by a parameter-free gate: the score of a block is the query's dot product with the block's mean key,
the query's own block is always included, and the top-k other blocks are added. MoBA uses the gate for sparse
attention and keeps the whole cache; here the same gate decides what a capped cache keeps. Each of the newest 32
rows and each query head votes for its own block plus its ``top_k`` best earlier blocks; blocks are retained whole
in order of votes (the newest block first) until the cap is reached; a block that no longer fits contributes its
newest tokens.

Deviations from MoBA: eviction instead of sparse attention, votes pooled over rows and over the query heads of a
KV head, blocks of 16 tokens instead of MoBA's 512 to 4096 (the embedded model's cap is 128 to 256 tokens).
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class BlockGate(EvictionMethod):
    name = "block_gate"
    query_window = 32
    block = 16
    top_k = 3

    def _head(self, view: LayerView, h: int, real: torch.Tensor, budget: int) -> torch.Tensor:
        n = real.numel()
        nb = -(-n // self.block)
        blk_of = torch.arange(n, device=real.device) // self.block
        keys = view.keys[h, real].float()
        means = torch.zeros(nb, keys.shape[1], device=keys.device).index_add_(0, blk_of, keys)
        means /= torch.bincount(blk_of, minlength=nb).clamp_min(1)[:, None].float()
        g = view.model.group_size
        q = view.queries[h * g: (h + 1) * g].float().reshape(-1, keys.shape[1])  # (g * N, D)
        qpos = view.query_positions.repeat(g)
        pos = view.positions[h, real]
        # block of each query: the last block starting at or before it
        starts = pos[torch.arange(nb, device=pos.device) * self.block]
        own = (torch.searchsorted(starts, qpos, right=True) - 1).clamp_min(0)
        gate = q @ means.T  # (g * N, nb)
        later = torch.arange(nb, device=gate.device)[None, :] >= own[:, None]
        gate = gate.masked_fill(later, float("-inf"))
        votes = torch.zeros(nb, device=gate.device)
        k = min(self.top_k, nb - 1)
        if k > 0:
            top = gate.topk(k, dim=1)
            ok = torch.isfinite(top.values)
            votes.index_add_(0, top.indices[ok], torch.ones(int(ok.sum()), device=gate.device))
        votes.index_add_(0, own, torch.ones_like(own, dtype=votes.dtype))
        votes[nb - 1] = float("inf")
        order = torch.argsort(votes + torch.arange(nb, device=votes.device) * 1e-6, descending=True)
        picked, room = [], budget
        for bi in order.tolist():
            members = torch.arange(bi * self.block, min(n, (bi + 1) * self.block), device=real.device)
            if members.numel() > room:
                members = members[members.numel() - room:]
            picked.append(members)
            room -= members.numel()
            if room == 0:
                break
        return real[torch.cat(picked)].sort().values

    def select(self, view: LayerView) -> Keep:
        b = view.budget
        if view.queries is None:
            return Keep.from_topk(view.positions.float(), b, view.valid)
        valid = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            real = valid[h].nonzero().flatten()
            out.append(real if real.numel() <= b else self._head(view, h, real, b))
        return Keep(tuple(out))
