import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    """Landmark paging: the context is cut into pages, each page is summarised by its own landmark tokens, and
    whole pages are kept by how well their landmarks answer the closing queries."""

    name = "landmark_pages"
    query_window = 1 << 20
    page = 32
    landmarks = 4
    n_head_tokens = 4
    closing = 16

    def setup(self, model) -> None:
        self._order = tuple(model.attention_layers)
        self._prev = None

    # -- bookkeeping -------------------------------------------------------------------------------------
    def _in_sequence(self, view: LayerView) -> bool:
        order = getattr(self, "_order", None) or tuple(view.model.attention_layers)
        prev = getattr(self, "_prev", None)
        self._prev = view.layer
        if view.layer not in order:
            return False
        if prev is None or prev not in order:
            return view.layer == order[0]
        return view.layer == order[(order.index(prev) + 1) % len(order)]

    def _regular(self, view: LayerView) -> bool:
        steady = self._in_sequence(view)
        frac = view.budget / max(1, view.n_tokens)
        return steady and view.phase == "prefill" and frac <= 0.15

    # -- a plain window score, used when the layer stream is irregular ----------------------------------
    def _plain(self, view: LayerView) -> Keep:
        qp = view.query_positions
        w = min(32, qp.numel())
        a = view.attention(view.queries[:, -w:])
        keep_pos = qp[-w:]
        a = a * (view.positions[:, None, :] <= keep_pos[None, :, None]).repeat_interleave(
            view.model.group_size, dim=0)
        s = view.group(a.sum(dim=1), "mean")
        s = F.max_pool1d(s[:, None], 7, stride=1, padding=3)[:, 0]
        s = s.masked_fill(view.positions >= keep_pos.min(), float("inf"))
        return Keep.from_topk(s, view.budget, view.valid)

    # -- the page method ---------------------------------------------------------------------------------
    def _page_scores(self, view: LayerView, h: int, q_at: torch.Tensor) -> torch.Tensor:
        g = view.model.group_size
        t = view.n_tokens
        keys = view.keys[h].float()
        qh = q_at[h * g:(h + 1) * g]                               # (g, T, D) queries aligned with the keys
        lo, hi = self.n_head_tokens, t
        L = self.page
        mid = hi - lo
        n_pages = max(1, (mid + L - 1) // L)
        pad = n_pages * L - mid
        kb = F.pad(keys[lo:hi], (0, 0, 0, pad)).view(n_pages, L, -1)
        qb = F.pad(qh[:, lo:hi], (0, 0, 0, pad)).view(g, n_pages, L, -1)
        z = torch.einsum("gpid,pjd->gpij", qb, kb) * view.model.scale
        inside = torch.ones(L, L, dtype=torch.bool, device=z.device).tril()
        z = z.masked_fill(~inside, float("-inf"))
        own = torch.softmax(z, dim=-1).nan_to_num(0.0).sum(dim=(0, 2))   # (pages, L): mass from the page itself
        if pad:
            own.view(-1)[mid:] = -1.0
        r = min(self.landmarks, L)
        marks = own.topk(r, dim=-1).indices                              # (pages, r)
        mark_keys = kb.gather(1, marks[..., None].expand(-1, -1, kb.shape[-1]))
        closing = qh[:, -self.closing:]                                   # (g, c, D)
        rel = torch.einsum("gcd,prd->pr", closing, mark_keys).mean(dim=-1) / (g * closing.shape[1])
        tok = rel.repeat_interleave(L)[:mid] * 1e3 + own.reshape(-1)[:mid] * 1e-3
        out = torch.full((t,), float("inf"), device=keys.device)
        out[lo:hi] = tok
        return out

    def select(self, view: LayerView) -> Keep:
        t, b = view.n_tokens, view.budget
        if view.queries is None or b >= t:
            return Keep.from_topk(view.positions.float(), b, view.valid)
        if not self._regular(view):
            return self._plain(view)
        qp = view.query_positions
        q = view.queries.float()
        idx = torch.searchsorted(qp, view.positions[0]).clamp(max=qp.numel() - 1)
        if not bool((qp[idx] == view.positions[0]).all()) or view.valid is not None:
            return self._plain(view)
        q_at = q[:, idx]                                                  # (H_q, T, D)
        local = max(1, min(64, b // 4))
        rows = []
        for h in range(view.n_kv_heads):
            s = self._page_scores(view, h, q_at)
            s[max(0, t - local):] = float("inf")
            s[: self.n_head_tokens] = float("inf")
            rows.append(s)
        return Keep.from_topk(torch.stack(rows), b, view.valid)
