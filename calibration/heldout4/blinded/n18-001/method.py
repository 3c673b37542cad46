import torch

from harness import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    """Top-4 reconstruction attention: in the harness's repeat-the-context pass, a token's score is the mean of the
    four largest attention weights it receives (between KVzip's single maximum and a full sum)."""

    name = "recon_top4"
    reconstruction_queries = True
    top = 4
    chunk = 256

    def select(self, view: LayerView) -> Keep:
        t, b = view.n_tokens, view.budget
        if view.queries is None or b >= t:
            return Keep.from_topk(view.positions.float(), b, view.valid)
        q = view.queries
        best = None
        for s in range(0, q.shape[1], self.chunk):
            a = view.attention(q[:, s:s + self.chunk])                 # (H_q, c, T): the pass reads after the context
            cand = a if best is None else torch.cat([best, a], dim=1)
            k = min(self.top, cand.shape[1])
            best = cand.topk(k, dim=1).values
        score = view.group(best.mean(dim=1), "max")
        return Keep.from_topk(score, b, view.valid)
