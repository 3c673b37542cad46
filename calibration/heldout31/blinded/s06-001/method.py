"""InfLLM's block memory (Xiao et al., 2024, arXiv 2402.04617), ported to board C's hard per-layer cap.

InfLLM keeps the initial tokens and a local window in attention and stores the distant context in fixed-size memory
blocks; each block is represented by a few representative tokens (those that received the most attention from their
local context when they were processed), and for each step the blocks whose representatives score highest against
the current queries are brought back into attention.

What is ported: blocks of 16 consecutive cached tokens outside the first 4 tokens and the newest 32; per token, a
representative score, the attention it received from rows at most 32 positions after it (accumulated across calls);
per block its 4 highest-scoring members as representatives; block relevance = the mean dot product of the newest
queries (group pooled) with those representatives; whole blocks kept in order of relevance.

Deviations: the harness has no offload, so a block that is not kept is evicted for good rather than parked on the
CPU and recalled later (the selection is made when the cap is reached, once per block of decoding steps, not every
step); blocks are formed over whatever the cache holds at that moment, not fixed at prefill; the local-context
score uses the queries the harness hands over (the newest 64), not the chunked-prefill attention of the paper.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class InfLLMBlocks(EvictionMethod):
    name = "infllm_blocks"
    query_window = 64
    initial = 4
    local = 32
    block = 16
    reps = 4
    reach = 32

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        rep = view.recall("rep")
        if view.queries is not None:
            seen = view.state.get("seen", -1)
            fresh = view.query_positions > seen
            if bool(fresh.any()):
                qpos = view.query_positions[fresh]
                attn = view.group(view.attention(view.queries[:, fresh]), "mean")   # (H_kv, n, T)
                near = (qpos[None, :, None] - view.positions[:, None, :])
                near = (near >= 0) & (near <= self.reach)
                rep = rep + (attn * near).sum(dim=1)
                view.state["seen"] = int(view.query_positions.max())
        view.remember("rep", rep)
        g = view.model.group_size
        out = []
        for h in range(view.n_kv_heads):
            idx = valid[h].nonzero().squeeze(1)
            n = idx.numel()
            keep_fixed = torch.cat([idx[: self.initial], idx[max(self.initial, n - self.local):]])
            middle = idx[self.initial: max(self.initial, n - self.local)]
            room = view.budget - keep_fixed.numel()
            if room <= 0 or middle.numel() == 0 or view.queries is None:
                out.append(idx[max(0, n - view.budget):])
                continue
            q = view.queries[h * g:(h + 1) * g, -8:].float().reshape(-1, view.keys.shape[-1])
            chosen = []
            blocks = [middle[s:s + self.block] for s in range(0, middle.numel(), self.block)]
            relevance = []
            for members in blocks:
                top = rep[h, members].topk(min(self.reps, members.numel())).indices
                relevance.append((q @ view.keys[h, members[top]].float().T).mean())
            for b in torch.stack(relevance).argsort(descending=True).tolist():
                if room <= 0:
                    break
                take = blocks[b][: room]
                chosen.append(take)
                room -= take.numel()
            out.append(torch.cat([keep_fixed, *chosen]).sort().values)
        return Keep(tuple(out))
