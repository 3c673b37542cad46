"""Spectral head budgets (board B_online): each KV head's share of the layer budget follows the spectral entropy of
its keys (heads whose keys spread over many directions need more slots), and inside a head tokens are ranked by their
leverage in key space; the closing context window is kept."""

import torch

from harness import EvictionMethod, Keep, LayerView


def _turn(view: LayerView) -> tuple[torch.Tensor, torch.Tensor]:
    """How far each KV head moves the tokens it reads: 1 - cos(v_i, o_i) for the window tokens, where o_i is the
    head's read-out at token i; averaged over tokens and over the KV head's query heads. (H_kv,)"""
    attn = view.attention()                                      # (H_q, w, T)
    h_kv, t, d = view.values.shape
    g = view.model.group_size
    v = view.values.float()
    out = torch.einsum("hgwt,htd->hgwd", attn.reshape(h_kv, g, -1, t), v)
    own = torch.stack([v[h, torch.searchsorted(view.positions[h], view.query_positions.to(v.device))
                         .clamp(max=t - 1)] for h in range(h_kv)])          # (H_kv, w, D)
    cos = torch.nn.functional.cosine_similarity(out, own[:, None], dim=-1)   # (H_kv, g, w)
    return (1 - cos).mean(dim=(1, 2)), attn


def _split(total: int, weight: torch.Tensor, floor: int, cap: torch.Tensor) -> torch.Tensor:
    """Integer shares of ``total`` proportional to ``weight``, each in [floor, cap]."""
    n = weight.numel()
    share = torch.full((n,), floor, dtype=torch.long)
    left = total - int(share.sum())
    w = weight.clamp_min(1e-6).double()
    while left > 0:
        room = (cap - share).clamp_min(0)
        open_ = room > 0
        if not bool(open_.any()):
            break
        want = torch.floor(w * open_ / (w * open_).sum() * left).long().clamp(max=room)
        if int(want.sum()) == 0:
            want[int(torch.argmax(w * open_))] = 1
        share += want
        left -= int(want.sum())
    return share


class SpectralHeadBudgets(EvictionMethod):
    name = "spectral_head_budgets"
    query_window = 32
    floor_ratio = 0.3

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        turn, attn = _turn(view)
        valid = view.valid_mask()
        counts = valid.sum(1).cpu()
        total = min(view.budget * view.n_kv_heads, int(counts.sum()))
        floor = min(int(self.floor_ratio * view.budget), int(counts.min()))
        per_head = _split(total, turn.cpu(), floor, counts)
        score = view.group(attn.mean(dim=1), "mean")
        score = score.masked_fill(view.positions >= int(view.query_positions.min()), float("inf"))
        return Keep.from_topk(score, per_head.to(score.device), view.valid)
