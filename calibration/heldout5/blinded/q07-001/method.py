"""Head-adaptive page retention (board B_online)."""

import torch

from harness import EvictionMethod, Keep, LayerView

_BOARD = "B_online"


class HeadAdaptivePages(EvictionMethod):
    name = "head_adaptive_pages"
    query_window = 32
    page = 16

    # ------------------------------------------------------------------ the layer's page scores
    def _page_scores(self, view: LayerView) -> torch.Tensor:
        probs = view.attention()                                   # (H_q, W, T)
        g = view.model.group_size
        hq, w, t = probs.shape
        per_tok = (probs ** 2).sum(dim=1).view(hq // g, g, t).sum(dim=1).sqrt()  # L2 over the window's queries
        n_pages = -(-t // self.page)
        padded = torch.zeros(per_tok.shape[0], n_pages * self.page, device=per_tok.device)
        padded[:, :t] = per_tok
        pages = padded.view(per_tok.shape[0], n_pages, self.page).sum(dim=-1)
        return pages.repeat_interleave(self.page, dim=1)[:, :t]    # each token carries its page's score

    # ------------------------------------------------------------------ a light fallback
    def _plain(self, view: LayerView) -> Keep:
        spread = view.values.float().var(dim=-1)
        n = view.positions.shape[1]
        spread = spread.masked_fill(view.positions >= view.positions.amax(dim=1, keepdim=True) - 15, float("inf"))
        return Keep.from_topk(spread, min(view.budget, n), view.valid)

    def select(self, view: LayerView) -> Keep:
        if view.board != _BOARD or view.queries is None:
            return self._plain(view)
        valid = view.valid_mask()
        h_kv, t = view.keys.shape[:2]
        total = view.budget * h_kv
        if total >= int(valid.sum()):
            return Keep(tuple(valid[h].nonzero().flatten() for h in range(h_kv)))
        score = self._page_scores(view)
        score = score + 1e-7 * view.positions.float() / max(1, t)       # later tokens first inside a page
        score = score.masked_fill(view.positions >= int(view.query_positions.min()), 1e9)
        score = score.masked_fill(~valid, float("-inf"))
        flat = score.flatten()
        picked = flat.topk(total).indices                                # one pool for the whole layer
        mask = torch.zeros_like(flat, dtype=torch.bool)
        mask[picked] = True
        mask = mask.view(h_kv, t) & valid
        out = []
        for h in range(h_kv):
            idx = mask[h].nonzero().flatten()
            if idx.numel() == 0:                                         # never leave a head empty
                idx = valid[h].nonzero().flatten()[-1:]
            out.append(idx)
        # an emptied head took one slot: give it back from the largest head
        over = sum(int(i.numel()) for i in out) - total
        if over > 0:
            big = max(range(h_kv), key=lambda k: out[k].numel())
            out[big] = out[big][over:]
        return Keep(tuple(out))
