import torch

from harness.api import EvictionMethod, Keep, LayerView


def _fold(rows: torch.Tensor, kv_heads: int) -> torch.Tensor:
    per = rows.shape[0] // kv_heads
    return rows.view(kv_heads, per, -1).mean(1)


class Method(EvictionMethod):
    query_window = 1
    guard = 8

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        probe = view.queries[:, -1, :].float()
        per = probe.shape[0] // view.n_kv_heads
        ks = view.keys.float().repeat_interleave(per, dim=0)
        heat = torch.einsum("hd,htd->ht", probe, ks).mul(view.model.scale).softmax(dim=-1)
        heat = _fold(heat, view.n_kv_heads)
        heat[:, -self.guard:] = float("inf")
        rows, width = heat.shape
        winners = heat.reshape(-1).topk(view.budget * rows).indices
        picked = []
        for r in range(rows):
            mine = winners[torch.div(winners, width, rounding_mode="floor") == r] - r * width
            picked.append(mine.sort().values)
        return Keep(tuple(picked))
