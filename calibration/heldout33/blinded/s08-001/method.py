"""Twin-Mode Heads: some heads are anchored readers, the others choose whole pages of the context."""

import torch

from harness import EvictionMethod, Keep, LayerView


class TwinModeHeads(EvictionMethod):
    name = "twin_mode_heads"
    reconstruction_queries = True
    page = 16
    anchored_share = 1 / 3
    sink = 4

    def select(self, view: LayerView) -> Keep:
        H, T, D = view.keys.shape
        if view.queries is None or view.budget >= T:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        mean_att = view.group(view.attention(reduce="mean"), "mean")       # (H_kv, T)
        sinkiness = mean_att[:, : self.sink].sum(-1)
        n_anchored = int(round(H * self.anchored_share))
        anchored = set(sinkiness.topk(n_anchored).indices.tolist()) if n_anchored else set()
        n_pages = -(-T // self.page)
        pad = n_pages * self.page - T
        k = view.keys.float()
        kmin = torch.nn.functional.pad(k, (0, 0, 0, pad), value=float("inf")).reshape(H, n_pages, self.page, D).amin(2)
        kmax = torch.nn.functional.pad(k, (0, 0, 0, pad), value=float("-inf")).reshape(H, n_pages, self.page, D).amax(2)
        g = view.model.group_size
        q = view.queries.float()
        # at most 256 queries for the bound, evenly spread over the re-read
        q = q[:, torch.linspace(0, q.shape[1] - 1, min(256, q.shape[1])).long()]
        q = q.reshape(H, g * q.shape[1], D)
        ub = torch.maximum(torch.einsum("hnd,hpd->hnpd", q, kmin), torch.einsum("hnd,hpd->hnpd", q, kmax)).sum(-1)
        page_rank = ub.amax(1)
        pos = view.positions.float()
        score = torch.empty(H, T)
        for h in range(H):
            if h in anchored:
                score[h] = pos[h] + (pos[h] < self.sink).float() * 1e9
            else:
                score[h] = page_rank[h].repeat_interleave(self.page)[:T] * 1e3 + pos[h] * 1e-6
        return Keep.from_topk(score, view.budget, view.valid)
