"""Relevant-but-different selection (board A): question attention with a diversity penalty, picked greedily.

SnapKV-style scoring keeps what the question attends to, but on repetitive contexts many of the kept keys are
near-copies of one another (the same template sentence repeated), and the budget is spent on one idea many
times. Here the question's attention is the relevance, and the kept set is built greedily by maximal marginal
relevance: each round takes the tokens whose relevance minus ``penalty`` x (their highest key cosine to anything
already kept) is largest. Rounds take ``1/rounds`` of the budget at once to stay cheap. The question's own
tokens and the first ``n_sink`` tokens are kept from the start.

Builds on SnapKV (Li et al., 2024, arXiv 2404.14469: attention from the prompt's closing rows as the relevance;
here the question rows on board A), on R-KV (Cai et al., 2025, arXiv 2505.24133), which subtracts a key-cosine
redundancy term inside a single score, and on maximal marginal relevance (Carbonell & Goldstein, SIGIR 1998),
the greedy relevance-minus-similarity rule from retrieval. What is new here, as far as we know, is the greedy
MMR construction of the kept set itself (similarity to what is already kept, not to the whole cache).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class RelevantButDifferent(EvictionMethod):
    name = "relevant_but_different"
    question_queries = True
    penalty = 0.3
    rounds = 16
    n_sink = 4

    def select(self, view: LayerView) -> Keep:
        t, h = view.n_tokens, view.n_kv_heads
        if view.budget >= t or view.queries is None or view.query_positions is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        rel = view.group(view.attention(reduce="sum"), "mean")  # (H_kv, T)
        rel = rel / rel.amax(dim=1, keepdim=True).clamp_min(1e-12)
        unit = F.normalize(view.keys.float(), dim=-1)
        valid = view.valid_mask()
        seed = ((view.positions >= view.query_positions.min()) | (view.positions < self.n_sink)) & valid
        out = []
        for i in range(h):
            budget = min(view.budget, int(valid[i].sum()))
            kept = torch.nonzero(seed[i]).flatten()
            if kept.numel() > budget:  # the question alone overflows: its newest tokens
                kept = kept[-budget:]
            taken = torch.zeros(t, dtype=torch.bool, device=rel.device)
            taken[kept] = True
            taken |= ~valid[i]
            closest = (unit[i] @ unit[i][kept].T).amax(dim=1) if kept.numel() else torch.zeros(t, device=rel.device)
            step = max(1, -(-budget // self.rounds))
            room = budget - kept.numel()
            chosen = [kept]
            while room > 0:
                gain = (rel[i] - self.penalty * closest).masked_fill(taken, float("-inf"))
                pick = gain.topk(min(step, room, int((~taken).sum()))).indices
                if pick.numel() == 0:
                    break
                chosen.append(pick)
                taken[pick] = True
                closest = torch.maximum(closest, (unit[i] @ unit[i][pick].T).amax(dim=1))
                room -= pick.numel()
            out.append(torch.cat(chosen).sort().values)
        return Keep(tuple(out))
