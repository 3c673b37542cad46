"""Proxy-token eviction with random retention: a port of NACL (Chen et al., ACL 2024, arXiv 2408.03675).

This is a port. NACL evicts once, at encoding time, using the attention of *proxy tokens* (on this board: the
question span, which is part of the prefill) to score every cached token, and mixes that greedy selection with a
random part sampled in proportion to the same scores, which the paper shows makes eviction more robust than a purely
greedy top-k.

Deviations from the paper (the porter's choices, training-free):
- proxy tokens: the question span's queries plus the last 8 prompt rows (the harness hands both over);
- per KV head (group sum over query heads), one shot per layer, same budget in every layer;
- 75 % of the budget greedy by proxy attention, 25 % sampled without replacement with probability proportional to the
  proxy attention of the tokens not yet kept (a fixed seed per layer, so runs are repeatable);
- no special handling of the first tokens beyond what the scores give.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class NACLPort(EvictionMethod):
    name = "nacl_port"
    query_window = 8
    question_queries = True
    greedy_share = 0.75
    seed = 1234

    def select(self, view: LayerView) -> Keep:
        scores = view.group(view.attention(reduce="sum"), "sum")     # (H_kv, T)
        live = view.valid_mask()
        gen = torch.Generator(device="cpu").manual_seed(self.seed + view.layer)
        out = []
        for h in range(view.n_kv_heads):
            s = scores[h].masked_fill(~live[h], float("-inf")).cpu()
            n_live = int(live[h].sum())
            k = min(view.budget, n_live)
            n_greedy = min(k, int(round(self.greedy_share * k)))
            greedy = s.topk(n_greedy).indices
            rest = torch.ones_like(s, dtype=torch.bool)
            rest[greedy] = False
            rest &= live[h].cpu()
            n_rand = min(k - n_greedy, int(rest.sum()))
            if n_rand > 0:
                w = s.clamp_min(0).masked_fill(~rest, 0.0) + rest.float() * 1e-12
                sampled = torch.multinomial(w, n_rand, replacement=False, generator=gen)
                chosen = torch.cat([greedy, sampled])
            else:
                chosen = greedy
            out.append(chosen.sort().values.to(view.keys.device))
        return Keep(tuple(out))
