import torch

from harness.api import EvictionMethod, Keep, LayerView


def _crowding(keys: torch.Tensor, mask: torch.Tensor, near: float) -> torch.Tensor:
    unit = keys.float() / keys.float().norm(dim=-1, keepdim=True).clamp_min(1e-8)
    heads, n, _ = unit.shape
    out = torch.empty(heads, n, device=keys.device)
    for h in range(heads):
        c = unit[h] @ unit[h].T
        c.fill_diagonal_(0.0)
        c[~mask[h]] = 0.0
        c[:, ~mask[h]] = 0.0
        hit = c > near
        last = torch.where(hit, torch.arange(n, device=keys.device), torch.full_like(c, -1, dtype=torch.long)).max(1).values
        for t in (last >= 0).nonzero().flatten().tolist():
            c[t, int(last[t])] = 0.0
        avg = c.sum(0) / mask[h].sum().clamp_min(1)
        out[h] = torch.softmax(avg.masked_fill(~mask[h], float("-inf")), dim=-1)
    return out


class Method(EvictionMethod):
    query_window = 8
    width = 7
    mix = 0.07
    near = 0.5

    def select(self, view: LayerView) -> Keep:
        if view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        mask = view.valid_mask()
        focus = view.group(view.attention().mean(dim=1), "mean")
        pad = self.width // 2
        padded = torch.nn.functional.pad(focus, (pad, pad), value=float("-inf"))
        focus = padded.unfold(-1, self.width, 1).amax(dim=-1)
        score = self.mix * focus - (1.0 - self.mix) * _crowding(view.keys, mask, self.near)
        lens = mask.sum(dim=1)
        for h in range(view.n_kv_heads):
            end = int(lens[h])
            score[h, max(0, end - self.query_window): end] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
