"""Jittered-salience retention (board C, decode-time eviction).

At each eviction round the newest 32 queries score the cache with their raw logits, a small Gumbel jitter added and
a softened softmax (temperature 1.5) on top; summed over those queries, the jittered probabilities rank which tokens
to keep beyond the newest 32. The jitter keeps the ranking from locking onto whatever the current step happens to
favour, so tokens just below the cut get a fair chance.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def _jitter(shape, gen: torch.Generator, device) -> torch.Tensor:
    u = torch.rand(shape, generator=gen).clamp_(1e-6, 1 - 1e-6)
    return (-torch.log(-torch.log(u))).to(device)


class JitteredSalience(EvictionMethod):
    name = "jittered_salience"
    query_window = 32
    temperature = 1.5
    newest = 32

    def setup(self, model) -> None:
        self._gen = torch.Generator().manual_seed(7)

    def select(self, view: LayerView) -> Keep:
        gen = getattr(self, "_gen", None) or torch.Generator().manual_seed(7)
        q = view.queries.float()                                   # (H_q, N, D)
        g = view.model.group_size
        k = view.keys.float().repeat_interleave(g, dim=0)          # (H_q, T, D)
        logits = torch.einsum("hnd,htd->hnt", q, k) * view.model.scale
        kpos = view.positions.repeat_interleave(g, dim=0)[:, None, :]
        hidden = kpos > view.query_positions.view(1, -1, 1)
        if view.valid is not None:
            hidden = hidden | ~view.valid.repeat_interleave(g, dim=0)[:, None, :]
        noisy = (logits + _jitter(logits.shape, gen, logits.device)) / self.temperature
        probs = noisy.masked_fill(hidden, float("-inf")).softmax(dim=-1).nan_to_num(0.0)
        salience = view.group(probs.sum(dim=1), "sum")             # (H_kv, T)

        live = view.valid_mask()
        pos = view.positions.masked_fill(~live, -1)
        top = pos.max(dim=1, keepdim=True).values
        salience = salience.masked_fill(pos > top - self.newest, 1e9)
        return Keep.from_topk(salience, view.budget, view.valid)
