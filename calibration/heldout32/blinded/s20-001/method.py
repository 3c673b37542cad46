"""Even Keel (board C): attention summed over decoding favours old tokens, which more queries have seen, and it
flattens as the cache grows. Here each round's attention is computed at a temperature that shrinks with the log
of the cache length (so a row's sharpness does not depend on how many tokens it spreads over), the rounds are
summed, and the sum is weighed by the token's value norm, what it can actually add to a read-out."""

import math

import torch

from harness import EvictionMethod, Keep, LayerView


class EvenKeel(EvictionMethod):
    name = "even_keel"
    query_window = 64
    base_len = 64
    sinks = 4
    newest = 16

    def select(self, view: LayerView) -> Keep:
        total = view.recall("total")
        if view.queries is not None:
            fresh = view.query_positions > view.state.get("seen", -1)
            if bool(fresh.any()):
                q = view.queries[:, fresh].float()
                qpos = view.query_positions[fresh]
                h_kv, t, d = view.keys.shape
                g = view.model.group_size
                gain = max(1.0, math.log(max(2, t)) / math.log(self.base_len))
                logits = torch.matmul(q.reshape(h_kv, g * q.shape[1], d), view.keys.float().transpose(1, 2))
                logits = (logits * (view.model.scale * gain)).view(h_kv, g, q.shape[1], t)
                hidden = view.positions[:, None, None, :] > qpos[None, None, :, None]
                if view.valid is not None:
                    hidden = hidden | ~view.valid[:, None, None, :]
                p = logits.masked_fill(hidden, float("-inf")).softmax(-1).nan_to_num(0.0)
                total = total + p.sum(dim=(1, 2))
                view.state["seen"] = int(qpos.max())
        view.remember("total", total)
        score = total * view.values.float().norm(dim=-1)
        counts = view.valid_mask().sum(1)
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            score[h, : min(self.sinks, n)] = float("inf")
            score[h, max(0, n - self.newest): n] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
