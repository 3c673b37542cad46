"""Contrast-paired layer reuse (board B_online).

Layers that look least alike turn out to agree surprisingly often on *which* tokens the context's end needs. We use
that to make selections cheaper and steadier: as the layers of a compression go by, each layer's cache fingerprint
(the mean key and mean value of every KV head, side by side) is stored with the token set it chose. A new layer
first tries to reuse the set of an earlier layer, starting with the one whose fingerprint is farthest away
(Euclidean), and accepts it if that set captures at least 85 % of the attention mass its own best set would
capture; otherwise it tries the next farthest, and falls back to its own choice. At most a quarter of the layers
reuse, and a layer that reused never lends. A layer's own choice: the last 32 context queries' causal attention,
summed over the window, averaged over the KV head's query heads, average-pooled over 5, with the window kept (the
observation window of SnapKV, Li et al., 2024, arXiv 2404.14469).
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView, ModelInfo


class ContrastPairedReuse(EvictionMethod):
    name = "contrast_paired_reuse"
    query_window = 32
    kernel = 5
    accept = 0.85
    reuse_share = 0.25

    def setup(self, model: ModelInfo) -> None:
        self._n_layers = len(model.attention_layers)
        self._book = None

    def _own(self, view: LayerView) -> torch.Tensor:
        s = view.group(view.attention(reduce="sum"), "mean")
        s = F.avg_pool1d(s[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        return s.masked_fill(~view.valid_mask(), 0.0)

    @staticmethod
    def _fingerprint(view: LayerView) -> torch.Tensor:
        valid = view.valid_mask().float()[..., None]
        n = valid.sum(dim=1).clamp_min(1.0)
        mk = (view.keys.float() * valid).sum(dim=1) / n
        mv = (view.values.float() * valid).sum(dim=1) / n
        return torch.cat([mk, mv], dim=-1).flatten()

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        sig = (view.board, view.n_tokens, int(view.positions.max()))
        book = getattr(self, "_book", None)
        if book is None or book["sig"] != sig or view.layer <= book["last"]:
            book = {"sig": sig, "last": -1, "entries": [], "reused": 0}
        own = self._own(view)
        window = view.positions >= int(view.query_positions.min())
        ranked = own.masked_fill(window, float("inf"))
        mine = Keep.from_topk(ranked, view.budget, view.valid)
        best_mass = sum(float(own[h, mine.indices[h]].sum()) for h in range(view.n_kv_heads))
        fp = self._fingerprint(view)
        chosen, lent = mine, False
        cap = max(1, int(self.reuse_share * getattr(self, "_n_layers", 1)))
        if book["reused"] < cap:
            donors = [e for e in book["entries"] if not e["reused"] and e["fp"].shape == fp.shape]
            donors.sort(key=lambda e: -float((e["fp"] - fp).norm()))
            for e in donors:
                sets = []
                for h in range(view.n_kv_heads):
                    idx = torch.nonzero(torch.isin(view.positions[h], e["pos"][h]) & view.valid_mask()[h]).flatten()
                    sets.append(idx[: view.budget])
                mass = sum(float(own[h, sets[h]].sum()) for h in range(view.n_kv_heads))
                if mass >= self.accept * best_mass:
                    chosen, lent = Keep(tuple(sets)), True
                    break
        if lent:
            book["reused"] += 1
        book["entries"].append({"fp": fp, "reused": lent,
                                "pos": [view.positions[h, chosen.indices[h]] for h in range(view.n_kv_heads)]})
        book["last"] = view.layer
        self._book = book
        return chosen
