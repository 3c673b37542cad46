"""Top-r reconstruction attention with segment floors (board B_offline).

KVzip scores each cached pair by the maximum attention it receives while the model repeats the context. A single
maximum is noisy for a small model, so here a token's score is the mean of its 4 largest attentions over the
repeat queries (per query head, then max over the KV group). In addition, the context is cut into 8 equal
segments and each keeps at least a quarter of its proportional share, so no region is emptied entirely.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class TopRRepeat(EvictionMethod):
    name = "top_r_repeat"
    reconstruction_queries = True
    top_r = 4
    segments = 8
    floor_share = 0.25
    sinks = 4
    rows = 128

    def _scores(self, view: LayerView) -> torch.Tensor:
        q = view.queries
        h_q, n, _ = q.shape
        r = min(self.top_r, n)
        best = torch.zeros(h_q, 0, view.n_tokens, device=q.device)
        for s in range(0, n, self.rows):
            a = view.attention(q[:, s: s + self.rows])  # not causal: the repeat follows the whole context
            best = torch.cat([best, a], dim=1).topk(min(r, best.shape[1] + a.shape[1]), dim=1).values
        return view.group(best.mean(dim=1), "max")

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = self._scores(view)
        score = score.masked_fill(view.positions < self.sinks, float("inf"))
        valid = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            idx = valid[h].nonzero().flatten()
            s = score[h, idx]
            n = idx.numel()
            budget = min(view.budget, n)
            seg = torch.div(torch.arange(n, device=s.device) * self.segments, n, rounding_mode="floor")
            floor = int(self.floor_share * budget / self.segments)
            take = torch.zeros(n, dtype=torch.bool, device=s.device)
            if floor > 0:
                for j in range(self.segments):
                    members = (seg == j).nonzero().flatten()
                    if members.numel():
                        take[members[s[members].topk(min(floor, members.numel())).indices]] = True
            rest = budget - int(take.sum())
            if rest > 0:
                take[s.masked_fill(take, float("-inf")).topk(rest).indices] = True
            out.append(idx[take])
        return Keep(tuple(out))
