import math

import torch
from torch.nn import functional as F

from harness.api import EvictionMethod, Keep, LayerView, rope_angles


class Anticipation(EvictionMethod):
    name = "anticipation"
    query_window = 1 << 20
    horizon = 512
    skip_first = 4
    second_moment = True
    scale_by_v = True
    eps = 0.0

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.model.rope_theta is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        assert view.n_tokens > self.skip_first
        keys = view.keys[:, self.skip_first :]
        values = view.values[:, self.skip_first :]
        mu, sigma = self._stats(view)
        h, n, d = keys.shape
        g = view.model.group_size
        kt = keys.repeat_interleave(g, dim=0).transpose(1, 2)
        logits = torch.matmul(mu.unsqueeze(1), kt).squeeze(1) / math.sqrt(d)
        if self.second_moment:
            logits += torch.einsum("hin,hij,hjn->hn", kt, sigma, kt) / d / 2
        p = F.softmax(logits, dim=-1)
        p = p.view(h, g, n).mean(dim=1)
        if self.scale_by_v:
            p = (p + self.eps) * values.norm(dim=-1)
        p = F.pad(p, (self.skip_first, 0), value=p.max().item() + 1)
        return Keep.from_topk(p, view.budget, view.valid)

    def _stats(self, view: LayerView) -> tuple[torch.Tensor, torch.Tensor]:
        rows = view.query_positions >= self.skip_first
        raw = view.rotate(view.queries[:, rows], -view.query_positions[rows])
        mu = raw.mean(dim=1, keepdim=True)
        centred = raw - mu
        sigma = torch.einsum("nsi,nsj->nij", centred, centred) / raw.shape[1]
        mu = mu.squeeze(1)
        return self._spin(view, mu, sigma)

    def _spin(self, view: LayerView, mu: torch.Tensor, sigma: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        q_len = int(view.positions.max()) + 1
        d = mu.shape[-1]
        cos, sin = rope_angles(torch.arange(q_len, q_len + self.horizon), d, view.model.rope_theta)
        eye = torch.eye(d)
        perm = torch.zeros((d, d))
        perm[d // 2 :, : d // 2], perm[: d // 2, d // 2 :] = torch.eye(d // 2), -torch.eye(d // 2)
        rot = cos.unsqueeze(1) * eye + sin.unsqueeze(1) * perm
        rot = rot.mean(dim=0).to(mu.dtype)
        mu = torch.matmul(mu, rot.T)
        sigma = torch.matmul(rot, torch.matmul(sigma, rot.T))
        return mu, sigma
