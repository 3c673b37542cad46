"""Key-Feature Regression: fit, at compression time, a per-layer ridge regression from key features to the
observation window's log-attention, and keep the tokens with the best blend of observed and predicted scores."""

import torch

from harness import EvictionMethod, Keep, LayerView


class KeyFeatureRegression(EvictionMethod):
    name = "key_feature_regression"
    query_window = 32
    ridge = 1.0
    blend = 0.5

    @staticmethod
    def _features(view: LayerView) -> torch.Tensor:
        k = view.keys.float()                                              # (H, T, D)
        rel = view.positions.float() / (view.positions.max().float() + 1)  # relative position in [0, 1)
        ones = torch.ones_like(rel)
        return torch.cat([ones[..., None], rel[..., None], k.norm(dim=-1, keepdim=True), k], dim=-1)

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        obs = view.group(view.attention(reduce="sum"), "mean").clamp_min(1e-8).log()   # (H, T)
        x = self._features(view)                                                        # (H, T, F)
        ctx = valid & (view.positions < view.query_positions.min())                     # fit on the context only
        w = ctx.float()[..., None]
        xtx = torch.einsum("htf,htg->hfg", x * w, x) + self.ridge * torch.eye(x.shape[-1], device=x.device)
        xty = torch.einsum("htf,ht->hf", x * w, obs)
        beta = torch.linalg.solve(xtx, xty[..., None])[..., 0]                          # (H, F)
        pred = torch.einsum("htf,hf->ht", x, beta)

        def z(s: torch.Tensor) -> torch.Tensor:
            m = s.masked_fill(~ctx, 0.0).sum(1, keepdim=True) / ctx.sum(1, keepdim=True).clamp_min(1)
            sd = ((s - m) ** 2).masked_fill(~ctx, 0.0).sum(1, keepdim=True) / ctx.sum(1, keepdim=True).clamp_min(1)
            return (s - m) / sd.sqrt().clamp_min(1e-6)

        score = self.blend * z(obs) + (1 - self.blend) * z(pred)
        score = score.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
