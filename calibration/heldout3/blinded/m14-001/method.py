import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    """Slow-band logits: score keys by the part of q.k carried by RoPE's lowest-frequency pairs only."""

    name = "slow_band"
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        q = view.queries.float()                                   # (Hq, N, D)
        k = view.keys.float().repeat_interleave(view.model.group_size, dim=0)
        d = q.shape[-1]
        rot = view.model.rotary_dim or d
        half = rot // 2
        slow = torch.zeros(d, device=q.device)
        slow[half // 2: half] = 1.0                                # second half of each rotary half = slowest
        slow[half + half // 2: rot] = 1.0
        logits = torch.einsum("hnd,htd->hnt", q * slow, k) * view.model.scale
        n_tok = k.shape[1]
        kpos = view.positions[0].to(q.device)
        mask = kpos[None, :] > view.query_positions.to(q.device)[:, None]
        p = torch.softmax(logits.masked_fill(mask[None], float("-inf")), dim=-1).sum(dim=1)
        score = view.group(p, "mean")
        score[:, -q.shape[1]:] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
