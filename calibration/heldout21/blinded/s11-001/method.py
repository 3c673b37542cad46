"""Bucket echo sampling (board B_offline, one-off reconstruction pass allowed).

Keys and the reconstruction pass's queries are hashed with random hyperplanes: 20 tables of 6 sign bits each, drawn
once per head dimension from a fixed seed. A key is drawn for a query when the two share a bucket in at least one
table; a drawn key's weight is its exponentiated logit divided by the chance that a key at that angle is drawn at all
(so frequently drawn, well-aligned keys are not over-counted), normalised over the drawn keys of the query. A token's
score is the largest weight it receives from any repeat query of its group; the four opening tokens are pinned.
"""

import math

import torch

from harness import EvictionMethod, Keep, LayerView


class BucketEcho(EvictionMethod):
    name = "bucket_echo"
    reconstruction_queries = True
    tables = 20
    bits = 6
    pinned = 4
    rows = 128

    def _planes(self, d: int, device) -> torch.Tensor:
        gen = torch.Generator().manual_seed(1009 + d)
        return torch.randn(self.tables, self.bits, d, generator=gen).to(device)

    def _codes(self, x: torch.Tensor, planes: torch.Tensor) -> torch.Tensor:
        """x (n, d) -> (n, tables) integer bucket ids."""
        sign = (torch.einsum("nd,lbd->nlb", x, planes) > 0).long()
        return (sign * (2 ** torch.arange(self.bits, device=x.device))).sum(-1)

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        h_kv, t, d = view.keys.shape
        planes = self._planes(d, view.keys.device)
        mask = view.valid_mask()
        score = torch.zeros(h_kv, t, device=view.keys.device)
        for h in range(h_kv):
            n = int(mask[h].sum())
            k = view.keys[h, :n].float()
            kc = self._codes(k, planes)                                        # (n, L)
            kn = k.norm(dim=-1).clamp_min(1e-6)
            q_all = view.queries[h * g:(h + 1) * g].float().reshape(-1, d)
            for start in range(0, q_all.shape[0], self.rows):
                q = q_all[start:start + self.rows]
                qc = self._codes(q, planes)                                    # (r, L)
                hit = (qc[:, None, :] == kc[None, :, :]).any(-1)              # (r, n)
                cos = (q @ k.T) / (q.norm(dim=-1, keepdim=True).clamp_min(1e-6) * kn[None])
                theta = cos.clamp(-1, 1).acos()
                p_one = (1 - theta / math.pi) ** self.bits
                p_draw = 1 - (1 - p_one) ** self.tables
                logit = (q @ k.T) * view.model.scale
                logit = logit - logit.amax(-1, keepdim=True)
                w = torch.where(hit, logit.exp() / p_draw.clamp_min(1e-6), torch.zeros_like(logit))
                w = w / w.sum(-1, keepdim=True).clamp_min(1e-12)
                score[h, :n] = torch.maximum(score[h, :n], w.amax(0))
        score[:, : self.pinned] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
