"""Read-out load retention (board B_offline, one-off compression pass).

On board B_offline the harness can replay the context once: the model re-reads it after a "repeat the previous
context" instruction, and those replay rows are what we score with (the replay itself is KVzip's protocol,
credited). A token's load on the replay is the attention the replay rows pay it, summed over the rows and averaged
over the KV head's query heads.

Attention alone says how often a token is read, not how much it moves the output when it is read. We therefore fill
the budget in two passes: the first half goes to the tokens with the largest load; the second half goes, among the
rest, to the largest load x ||v||_1, the size of what the token actually contributes to the read-out. The 4 opening
tokens are always kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class ReadoutLoad(EvictionMethod):
    name = "readout_load"
    reconstruction_queries = True
    query_window = 32  # used only when no replay is offered
    first_share = 0.5
    opening = 4

    def _load(self, view: LayerView) -> torch.Tensor:
        total = torch.zeros(view.n_kv_heads, view.n_tokens, device=view.keys.device)
        q = view.queries
        for a in range(0, q.shape[1], 256):
            total += view.group(view.attention(q[:, a:a + 256], reduce="sum").float(), "mean")
        return total

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        load = self._load(view)
        opening = view.positions < self.opening
        load = load.masked_fill(opening, float("inf"))
        first = int(round(view.budget * self.first_share))
        real = view.valid_mask()
        stage1 = load.masked_fill(~real, float("-inf")).topk(min(first, view.n_tokens), dim=-1).indices
        taken = torch.zeros_like(real)
        taken.scatter_(1, stage1, True)
        heavy = load.masked_fill(opening, 0.0) * view.values.float().abs().sum(dim=-1)
        # stage-1 tokens outrank everything; the rest compete on attention x value size
        final = torch.where(taken, torch.full_like(heavy, float("inf")), heavy)
        return Keep.from_topk(final, view.budget, view.valid)
