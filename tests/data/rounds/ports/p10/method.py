"""Jitter tally (board C, decode-time): every row's match scores are perturbed with extreme-value noise before
normalisation, and the normalised shares are summed over the generation; a warming temperature flattens the
shares as the output grows. A fixed stretch of the newest entries is always held."""

import math

import torch

from harness import EvictionMethod, Keep, LayerView


class JitterTally(EvictionMethod):
    name = "jitter_tally"
    query_window = 64
    fresh_share = 0.3
    t_start, t_end, warm_steps = 1.0, 2.0, 256
    seed = 99

    def _shares(self, view: LayerView, q: torch.Tensor, qp: torch.Tensor, tau: float, gen) -> torch.Tensor:
        h_kv, t, d = view.keys.shape
        g = view.model.group_size
        qg = q.float().reshape(h_kv, g, -1, d)
        logit = torch.einsum("hgnd,htd->hgnt", qg, view.keys.float()) * view.model.scale
        blocked = (view.positions[:, None, None, :] > qp.view(1, 1, -1, 1)) | ~view.valid_mask()[:, None, None, :]
        u = torch.rand(logit.shape, generator=gen).to(logit.device).clamp(1e-10, 1 - 1e-10)
        noisy = (logit - torch.log(-torch.log(u))) / tau
        noisy = noisy.masked_fill(blocked, float("-inf"))
        noisy = noisy - noisy.amax(dim=-1, keepdim=True).nan_to_num(0.0, neginf=0.0)
        e = noisy.exp()
        p = e / e.sum(dim=-1, keepdim=True).clamp_min(1e-30)
        return p.sum(dim=(1, 2))                                        # (H_kv, T)

    def select(self, view: LayerView) -> Keep:
        total = view.recall("tally")
        if view.queries is not None:
            qpos = view.query_positions
            last = view.state.get("upto", -1)
            new = qpos > last
            if bool(new.any()):
                origin = view.state.setdefault("origin", int(qpos.max()))
                step = max(0, int(qpos.max()) - origin)
                tau = self.t_start + (self.t_end - self.t_start) * min(1.0, step / self.warm_steps)
                gen = torch.Generator(device="cpu").manual_seed(self.seed + 1000 * view.layer + int(qpos.max()))
                total = total + self._shares(view, view.queries[:, new], qpos[new], tau, gen)
                view.state["upto"] = int(qpos.max())
        view.remember("tally", total)
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        fresh = int(math.floor(view.budget * self.fresh_share))
        score = total.clone()
        counts = view.valid_mask().sum(dim=1)
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            score[h, max(0, n - fresh): n] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
