"""Ballot Merge: drop nothing outright; let the dropped tokens vote themselves into the survivors.

The context's last 32 positions read it and the best-read tokens survive (the reading window included). Each
other token casts its ballot for the survivor whose key it resembles most, if the resemblance is high enough, and
the survivor then stands for all of its voters: its value becomes the readers' attention-weighted blend of the
voters' values, and its key is moved so that the mean reader pays the blended entry exactly the attention it
paid the voters together (the blend's key plus a shift along the mean reader's direction). The survivors' vote
counts are what the shift restores; nothing is added to the cache.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView, Rewrite


class BallotMerge(EvictionMethod):
    name = "ballot_merge"
    query_window = 32
    kernel = 7
    resemblance = 0.6

    def select(self, view: LayerView):
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        assert view.query_positions is not None
        valid = view.valid_mask()
        read = view.group(view.attention(reduce="sum"), "mean")
        read = F.max_pool1d(read[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        read = read.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        read = read.masked_fill(~valid, float("-inf"))
        mean_reader = view.queries.float().reshape(view.n_kv_heads, -1, view.keys.shape[-1]).mean(dim=1)
        scale = view.model.scale
        ks, vs, ps = [], [], []
        for h in range(view.n_kv_heads):
            n = int(valid[h].sum())
            budget = min(view.budget, n)
            k, v, pos = view.keys[h, :n].float(), view.values[h, :n].float(), view.positions[h, :n]
            survivors = read[h, :n].topk(budget).indices.sort().values
            out = torch.ones(n, dtype=torch.bool, device=k.device)
            out[survivors] = False
            voters = torch.nonzero(out).flatten()
            ks_h, vs_h = k[survivors].clone(), v[survivors].clone()
            if voters.numel() and survivors.numel():
                sim = F.normalize(k[voters], dim=-1) @ F.normalize(k[survivors], dim=-1).T
                best, choice = sim.max(dim=1)
                cast = best >= self.resemblance
                voters, choice = voters[cast], choice[cast]
                if voters.numel():
                    q = mean_reader[h]
                    logit = (k @ q) * scale                                     # the mean reader's logits
                    members = torch.cat([torch.arange(survivors.numel(), device=k.device), choice])
                    rows = torch.cat([survivors, voters])
                    m = logit[rows].max()
                    w = (logit[rows] - m).exp()
                    total = torch.zeros(survivors.numel(), device=k.device).index_add_(0, members, w)
                    votes = torch.zeros(survivors.numel(), device=k.device).index_add_(
                        0, members, torch.ones_like(w))
                    blend_k = torch.zeros_like(ks_h).index_add_(0, members, k[rows] * w[:, None]) / total[:, None]
                    blend_v = torch.zeros_like(vs_h).index_add_(0, members, v[rows] * w[:, None]) / total[:, None]
                    target = total.log() + m                                    # log of the voters' summed mass
                    shift = (target - (blend_k @ q) * scale) / (scale * (q @ q).clamp_min(1e-6))
                    merged = votes > 1
                    ks_h = torch.where(merged[:, None], blend_k + shift[:, None] * q[None, :], ks_h)
                    vs_h = torch.where(merged[:, None], blend_v, vs_h)
            ks.append(ks_h.to(view.keys.dtype))
            vs.append(vs_h.to(view.values.dtype))
            ps.append(pos[survivors])
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))
