"""Relay selection (board C, decode-time cap).

Neighbouring layers of a decoder tend to want the same tokens. Relay selection lets a few leader layers choose and the
others follow: the first two attention layers and the layer a third of the way down rank their own cache by the
newest query's attention (summed over the group's query heads); each leader passes its chosen positions on, and every
later layer keeps, per KV head, the positions its latest leader chose for that head, topping up with its newest
tokens. The newest 8 tokens always stay. A follower that has no fresh choice from a leader in the same round ranks
itself like a leader.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class RelaySelection(EvictionMethod):
    name = "relay_selection"
    query_window = 8
    newest = 8

    def setup(self, model) -> None:
        layers = list(model.attention_layers)
        self._leaders = {layers[0], layers[min(1, len(layers) - 1)], layers[len(layers) // 3]}
        self._relay = None

    def _own(self, view: LayerView) -> torch.Tensor:
        att = view.attention()[:, -1]                       # the newest query's row, (H_q, T)
        return view.group(att, "sum")

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if not hasattr(self, "_leaders"):
            self.setup(view.model)
        stamp = int(view.query_positions.max()) if view.query_positions is not None else -1
        relay = self._relay
        lead = view.layer in self._leaders or relay is None or relay[0] != stamp
        mask = view.valid_mask()
        if lead:
            score = self._own(view)
        else:
            chosen = relay[1]
            rec = view.positions.float() / (view.positions.float().max() + 1.0)
            score = rec.clone()
            for h in range(view.n_kv_heads):
                if h < len(chosen):
                    score[h] = torch.where(torch.isin(view.positions[h], chosen[h]), rec[h] + 2.0, rec[h])
        counts = mask.sum(1)
        for h in range(view.n_kv_heads):
            c = int(counts[h])
            score[h, max(0, c - self.newest):c] = float("inf")
        keep = Keep.from_topk(score, view.budget, view.valid)
        if lead:
            self._relay = (stamp, [view.positions[h][idx].clone() for h, idx in enumerate(keep.indices)])
        return keep
