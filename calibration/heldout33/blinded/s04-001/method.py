"""Recall Lanes: during the offline re-read, find the head that really copies from far back; give it the lion's
share of the memory and let the other heads live on anchors plus a recent lane."""

import torch

from harness import EvictionMethod, Keep, LayerView


class RecallLanes(EvictionMethod):
    name = "recall_lanes"
    reconstruction_queries = True
    anchors = 4
    lane_share = 0.5

    def select(self, view: LayerView) -> Keep:
        H, T, _ = view.keys.shape
        if view.queries is None or view.budget >= T:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        peak = view.group(view.attention(reduce="max"), "max")             # (H_kv, T)
        far = peak[:, self.anchors: max(self.anchors + 1, T - 64)]
        copying = far.mean(-1)                                              # heads that copy light up far back
        star = int(copying.argmax())
        lane = max(self.anchors + 1, int(view.budget * self.lane_share))
        out = []
        spent = 0
        for h in range(H):
            if h == star:
                continue
            idx = torch.cat([torch.arange(min(self.anchors, T)), torch.arange(max(self.anchors, T - (lane - self.anchors)), T)])
            out.append((h, idx.unique()))
            spent += out[-1][1].numel()
        room = min(T, view.budget * H - spent)
        out.append((star, peak[star].topk(room).indices.sort().values))
        out.sort(key=lambda t: t[0])
        return Keep(tuple(i for _, i in out))
