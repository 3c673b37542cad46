"""Delegate shelves (board A, question-aware prefill).

The context is shelved in fixed-size stretches. Each stretch elects a few delegates: the tokens its own near
future leans on most (the raw query-key affinity from the following rows of the prompt). When the question
arrives, every stretch is judged only through its delegates, and the stretches whose delegates the question's
rows favour are kept whole. Opening tokens and the most recent rows of the prompt stay as they are.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def _lookahead_affinity(q: torch.Tensor, k: torch.Tensor, reach: int) -> torch.Tensor:
    """q (G, T, D) aligned with k (T, D) by position -> (T,) summed logits of the next ``reach`` rows."""
    t = k.shape[0]
    acc = torch.zeros(t, device=k.device)
    for step in range(1, min(reach, t - 1) + 1):
        acc[: t - step] += (q[:, step:, :] * k[None, : t - step, :]).sum(-1).sum(0)
    return acc


class DelegateShelves(EvictionMethod):
    name = "delegate_shelves"
    query_window = 1 << 20          # every prompt row: delegates are elected from what follows them
    question_queries = True
    shelf = 16
    delegates = 4
    reach = 32
    head_rows = 4
    tail_rows = 32
    ask_rows = 32

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        ok = view.valid_mask()
        qpos = view.query_positions
        rows = []
        for h in range(view.n_kv_heads):
            n = int(ok[h].sum())
            pos = view.positions[h, :n]
            k = view.keys[h, :n].float()
            q_all = view.queries[h * g:(h + 1) * g].float()
            # align the prompt rows with the cached tokens by position
            lookup = torch.searchsorted(qpos, pos).clamp(max=qpos.numel() - 1)
            aligned = q_all[:, lookup]
            elect = _lookahead_affinity(aligned, k, self.reach)
            asks = q_all[:, -self.ask_rows:].reshape(-1, k.shape[-1])
            pad = (-n) % self.shelf
            e = torch.cat([elect, elect.new_full((pad,), float("-inf"))]).view(-1, self.shelf)
            top = e.topk(min(self.delegates, self.shelf), dim=1).indices + \
                torch.arange(e.shape[0], device=e.device)[:, None] * self.shelf
            top = top.clamp(max=n - 1)
            rel = (asks @ k[top.flatten()].T).view(asks.shape[0], e.shape[0], -1).sum(-1).mean(0)  # (shelves,)
            shelf_of = torch.arange(n, device=k.device) // self.shelf
            s = torch.full((view.n_tokens,), float("-inf"), device=k.device)
            s[:n] = rel[shelf_of] - 1e-4 * shelf_of.float() / max(1, e.shape[0])
            s[: self.head_rows] = float("inf")
            s[max(0, n - self.tail_rows): n] = float("inf")
            rows.append(s)
        return Keep.from_topk(torch.stack(rows), view.budget, view.valid)
