"""Two Ledgers: what the model was given and what it has written so far age differently. The given part is
settled once, when the cap is first reached, and then left alone; the written part keeps moving, so it is
managed on its own account: the newest steps stay, and older steps stay only while they keep being read."""

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class TwoLedgers(EvictionMethod):
    name = "two_ledgers"
    query_window = 32
    given_share = 0.5
    kernel = 5

    def _window_scores(self, view: LayerView) -> torch.Tensor:
        s = view.group(view.attention(reduce="sum"), "mean")
        return F.max_pool1d(s[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        pos = view.positions
        st = view.state
        if view.queries is None:
            return Keep.from_topk(pos.float(), view.budget, view.valid)
        if "boundary" not in st:
            # first time at the cap: everything so far is the given ledger; settle it once
            st["boundary"] = int(pos.max()) + 1
            allot = max(1, int(view.budget * self.given_share))
            keep = Keep.from_topk(self._window_scores(view), allot, view.valid)
            st["given"] = [pos[h][i].clone() for h, i in enumerate(keep.indices)]
        boundary = st["boundary"]
        # reads of the written ledger, summed across calls by position
        reads = view.recall("reads")
        seen = st.get("seen", -1)
        fresh = view.query_positions > seen
        if bool(fresh.any()):
            reads = reads + view.group(view.attention(view.queries[:, fresh], reduce="sum"), "sum")
            st["seen"] = int(view.query_positions.max())
        view.remember("reads", reads)
        out = []
        for h in range(view.n_kv_heads):
            real = valid[h]
            given = torch.isin(pos[h], st["given"][h].to(pos.device)) & real & (pos[h] < boundary)
            written = real & (pos[h] >= boundary)
            room = max(0, view.budget - int(given.sum()))
            w_idx = written.nonzero().flatten()
            if w_idx.numel() > room:
                newest = room // 2
                score = reads[h, w_idx].clone()
                score[w_idx.numel() - newest:] = float("inf")
                w_idx = w_idx[score.topk(room).indices] if room > 0 else w_idx[:0]
            g_idx = given.nonzero().flatten()[: view.budget]
            out.append(torch.cat([g_idx, w_idx]).sort().values)
        return Keep(tuple(out))
