"""Most-needed memory: the context arrives in slices; for every token still remembered we record the strongest pull
any query of the arriving slice exerts on it (never forgetting an earlier, stronger one), and after each slice only
the most-needed tokens are remembered."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


def pull(q: torch.Tensor, k: torch.Tensor, scale: float) -> torch.Tensor:
    logits = torch.einsum("hqd,htd->hqt", q, k) * scale
    return logits.softmax(-1)


class MostNeeded(EvictionMethod):
    name = "most_needed"
    query_window = 1 << 15
    slice_size = 128

    def select(self, view: LayerView) -> Keep:
        total = view.n_tokens
        h, g = view.n_kv_heads, view.model.group_size
        memory = torch.tensor([], dtype=torch.long)
        strength = torch.tensor([])
        start = 0
        while start < total:
            stop = min(start + self.slice_size, total)
            arriving = torch.arange(start, stop)
            memory = torch.cat((memory, arriving))
            strength = torch.cat((strength, torch.full((stop - start,), -1.0)))
            qs = view.queries[:, start:stop].float().reshape(h, -1, view.keys.shape[-1])
            p = pull(qs, view.keys[:, memory].float(), view.model.scale)
            strongest = p.max(dim=1).values.sum(0)
            strength = torch.where(strongest > strength, strongest, strength)
            if memory.numel() > view.budget:
                order = torch.argsort(strength, descending=True)[:view.budget]
                order = order.sort().values
                memory = memory[order]
                strength = strength[order]
            start = stop
        return Keep.same_for_all_heads(memory, h)
