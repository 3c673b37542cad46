"""Two-clock attention memory (board C).

Decode-time scores built from accumulated attention have to pick one memory length. H2O (Zhang et al., 2023, arXiv
2306.14048) never forgets, so a token that mattered early stays forever; decayed variants (A2SF, Jo et al., 2024,
arXiv 2407.20485) forget at one fixed rate, so a token that matters rarely but reliably (the problem's numbers in a
long derivation) fades between its uses. We keep two memories per token and let either one save it.

At every eviction the queries decoded since the previous one contribute their mean causal attention (summed over
the KV head's query heads). A fast memory decays by 0.5 per eviction, a slow one by 0.95; each is divided by its own
maximum in the head, and a token's score is the larger of the two. The first 4 tokens (StreamingLLM, Xiao et al.,
2023, arXiv 2309.17453) and the newest 8 are always kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView
from harness.api import reference_attention


class TwoClockMemory(EvictionMethod):
    name = "two_clock_memory"
    query_window = 512
    fast = 0.5
    slow = 0.95
    n_sink = 4
    newest = 8

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        pos = view.positions
        quick, steady = view.recall("quick"), view.recall("steady")
        if view.queries is not None:
            qpos = view.query_positions.to(pos.device)
            new = qpos > view.state.get("last_q", -1)
            if bool(new.any()):
                att = reference_attention(view.queries[:, new], view.keys, pos, qpos[new], view.model.group_size,
                                          view.valid, scale=view.model.scale, reduce="mean")
                fresh = view.group(att, "sum")
                quick = self.fast * quick + fresh
                steady = self.slow * steady + fresh
                view.state["last_q"] = int(qpos.max())
        view.remember("quick", quick)
        view.remember("steady", steady)
        norm = lambda x: x / x.masked_fill(~valid, 0.0).amax(dim=1, keepdim=True).clamp_min(1e-12)  # noqa: E731
        score = torch.maximum(norm(quick), norm(steady))
        score = score.masked_fill(pos < self.n_sink, float("inf"))
        counts = valid.sum(dim=1)
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            score[h, max(0, n - self.newest):n] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
