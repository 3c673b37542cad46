import torch

from harness import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    """Output-curvature retention (see DESCRIPTION.md)."""

    name = "curvature_keep"
    query_window = 32
    n_dirs = 16

    def _probe_axes(self, view: LayerView) -> torch.Tensor:
        # (H_kv, r): the axes along which the layer's response is most sensitive
        hk, d = view.n_kv_heads, view.keys.shape[-1]
        q = view.queries.float().abs().reshape(hk, -1, d).mean(dim=1)     # (H_kv, D)
        k = view.keys.float().abs().mean(dim=1)                           # (H_kv, D)
        sens = q * k
        return sens.topk(min(self.n_dirs, d), dim=-1).indices

    def _response(self, view: LayerView, axes: torch.Tensor) -> torch.Tensor:
        hk, d = view.n_kv_heads, view.keys.shape[-1]
        g = view.model.group_size
        qs = view.queries.float().reshape(hk, g, -1, d)
        idx_q = axes[:, None, None, :].expand(hk, g, qs.shape[2], axes.shape[-1])
        idx_k = axes[:, None, :].expand(hk, view.n_tokens, axes.shape[-1])
        q_sub = qs.gather(-1, idx_q)
        k_sub = view.keys.float().gather(-1, idx_k)
        z = torch.einsum("hgnr,htr->hgnt", q_sub, k_sub) * view.model.scale
        qpos = view.query_positions
        blocked = view.positions[:, None, None, :] > qpos[None, None, :, None]
        if view.valid is not None:
            blocked = blocked | ~view.valid[:, None, None, :]
        z = z.masked_fill(blocked, float("-inf"))
        return torch.softmax(z, dim=-1).nan_to_num(0.0).sum(dim=2).mean(dim=1)   # (H_kv, T)

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        curv = self._response(view, self._probe_axes(view))
        curv = curv.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(curv, view.budget, view.valid)
