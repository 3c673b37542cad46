import torch

from harness import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    """Key-density retention (see DESCRIPTION.md)."""

    name = "key_density"
    question_queries = True

    def _density(self, keys: torch.Tensor) -> torch.Tensor:
        k = torch.nn.functional.normalize(keys.float(), dim=-1)
        return (k @ k.mean(dim=1, keepdim=True).transpose(1, 2)).squeeze(-1)   # (H_kv, T)

    def select(self, view: LayerView) -> Keep:
        t = view.n_tokens
        if view.queries is None or view.budget >= t:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        dens = self._density(view.keys)
        q = view.queries.float()                                   # (H_q, N, D)
        hq = q.shape[0]
        g = view.model.group_size
        keys = view.keys.float().repeat_interleave(g, dim=0)       # (H_q, T, D)
        logits = torch.matmul(q, keys.transpose(1, 2)) * view.model.scale
        if view.valid is not None:
            logits = logits.masked_fill(~view.valid.repeat_interleave(g, dim=0)[:, None, :], float("-inf"))
        votes = torch.softmax(logits, dim=-1)                      # each head's soft vote per query
        ballot = votes.sum(dim=(0, 1))                             # pooled over every head: one tally
        ballot = ballot + 1e-9 * dens.mean(dim=0)
        s = ballot.expand(view.n_kv_heads, t).clone()
        if view.query_positions is not None:
            s[view.positions >= view.query_positions.min()] = float("inf")
        return Keep.from_topk(s, view.budget, view.valid)
