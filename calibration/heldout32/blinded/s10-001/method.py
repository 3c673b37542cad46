"""Shadow Lens (board A): the question is read against a shadow of the keys, their projection on the few
directions along which the layer's keys vary most; the shadow's attention decides what stays. Reading the
shadow instead of the full keys removes the idiosyncratic dimensions that let irrelevant tokens score high."""

import torch

from harness import EvictionMethod, Keep, LayerView


class ShadowLens(EvictionMethod):
    name = "shadow_lens"
    query_window = 8
    question_queries = True
    rank = 8
    sinks = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        n_q = view.queries.shape[1]
        out = []
        for h in range(view.n_kv_heads):
            k = view.keys[h].float()
            centre = k.mean(0, keepdim=True)
            cov = (k - centre).T @ (k - centre) / max(1, k.shape[0] - 1)
            _, vecs = torch.linalg.eigh(cov)
            basis = vecs[:, -self.rank:]                              # (D, r): the leading directions
            ks = k @ basis
            qs = view.queries[h * g: (h + 1) * g].float().reshape(g * n_q, -1) @ basis
            logits = qs @ ks.T * view.model.scale
            if view.query_positions is not None:
                late = view.positions[h][None, :] > view.query_positions.repeat(g)[:, None]
                logits = logits.masked_fill(late, float("-inf"))
            out.append(logits.softmax(-1).nan_to_num(0.0).sum(0))
        score = torch.stack(out)
        score[:, : self.sinks] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
