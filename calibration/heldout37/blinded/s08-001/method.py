"""Far Sight: query-agnostic prefill eviction that counts only the attention a token receives from queries at
least `reach` tokens after it."""

import torch

from harness import EvictionMethod, Keep, LayerView


class FarSight(EvictionMethod):
    name = "far_sight"
    query_window = 1 << 20     # every context query (the harness's maximum)
    reach = 64                 # a query closer than this does not count
    sinks = 4
    recent = 64                # nothing far looks at these yet: they stay
    rows = 128                 # queries per chunk

    def far_attention(self, view: LayerView) -> torch.Tensor:
        q, k = view.queries.float(), view.keys.float()
        qpos = view.query_positions.to(view.positions.device)
        h_kv, t, d = k.shape
        g = view.model.group_size
        kpos = view.positions[:, None, None, :]                       # (H_kv, 1, 1, T)
        total = torch.zeros(h_kv, t)
        heard = torch.zeros(h_kv, t)
        for s in range(0, q.shape[1], self.rows):
            qc = q[:, s: s + self.rows]
            c = qc.shape[1]
            logits = (qc.reshape(h_kv, g * c, d) @ k.transpose(1, 2)).view(h_kv, g, c, t) * view.model.scale
            p = qpos[s: s + c].view(1, 1, c, 1)
            hide = kpos > p
            if view.valid is not None:
                hide = hide | ~view.valid[:, None, None, :]
            probs = logits.masked_fill(hide, float("-inf")).softmax(-1).nan_to_num(0.0)
            far = (kpos <= p - self.reach)                              # (H_kv, 1, c, T)
            total += (probs * far).sum(dim=(1, 2))
            heard += far.sum(dim=(1, 2)).float() * g
        return total / heard.clamp_min(1.0)                            # mean far attention per query head

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = self.far_attention(view)
        valid = view.valid_mask()
        for h in range(view.n_kv_heads):
            c = int(valid[h].sum())
            score[h, : self.sinks] = float("inf")
            score[h, max(0, c - self.recent): c] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
