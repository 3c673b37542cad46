"""Prototype-cascade retention (board B_offline): the context's keys are summarised by prototypes at two
granularities; the re-reading pass's queries are routed through the coarse prototypes first and then through the
fine ones, and the cache keeps whole fine groups in the order the routing ranks them."""

import torch

from harness import EvictionMethod, Keep, LayerView


def _lloyd(points: torch.Tensor, k: int, rounds: int = 6) -> tuple[torch.Tensor, torch.Tensor]:
    """Plain Lloyd iterations from evenly spaced seeds: (labels (n,), centres (k, d))."""
    n = points.shape[0]
    k = max(1, min(k, n))
    centres = points[torch.linspace(0, n - 1, k, device=points.device).long()].clone()
    for _ in range(rounds):
        dist = torch.cdist(points, centres)
        labels = dist.argmin(dim=1)
        sums = torch.zeros_like(centres).index_add_(0, labels, points)
        sizes = torch.bincount(labels, minlength=k).float()[:, None]
        centres = torch.where(sizes > 0, sums / sizes.clamp_min(1), centres)
    return torch.cdist(points, centres).argmin(dim=1), centres


class PrototypeCascade(EvictionMethod):
    name = "prototype_cascade"
    reconstruction_queries = True
    fine_every = 16        # one fine prototype per this many tokens
    coarse_every = 8       # one coarse prototype per this many fine ones
    coarse_keep = 0.5      # share of the coarse prototypes whose fine groups stay in the running
    n_sink = 4
    probe_cap = 512        # re-reading queries used for routing (evenly spaced)

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        g = view.model.group_size
        q_all = view.queries
        if q_all.shape[1] > self.probe_cap:
            q_all = q_all[:, torch.linspace(0, q_all.shape[1] - 1, self.probe_cap, device=q_all.device).long()]
        score = torch.full(view.keys.shape[:2], float("-inf"), device=view.keys.device)
        for h in range(view.n_kv_heads):
            idx = torch.nonzero(valid[h]).flatten()
            k = view.keys[h, idx].float()
            q = q_all[h * g:(h + 1) * g].float().reshape(-1, k.shape[-1])            # (g*N, D)
            fine_lab, fine_c = _lloyd(k, k.shape[0] // self.fine_every)
            sizes = torch.bincount(fine_lab, minlength=fine_c.shape[0]).float()
            coarse_lab, coarse_c = _lloyd(fine_c, fine_c.shape[0] // self.coarse_every)
            csizes = torch.zeros(coarse_c.shape[0], device=k.device).index_add_(0, coarse_lab, sizes)
            # coarse routing: size-weighted softmax over coarse prototypes, max over the queries
            cl = q @ coarse_c.t() * view.model.scale + csizes.clamp_min(1).log()[None]
            cw = cl.softmax(dim=-1).amax(dim=0)
            n_open = max(1, int(round(self.coarse_keep * coarse_c.shape[0])))
            open_coarse = torch.zeros(coarse_c.shape[0], dtype=torch.bool, device=k.device)
            open_coarse[cw.topk(n_open).indices] = True
            # fine routing inside the open coarse groups
            fl = q @ fine_c.t() * view.model.scale + sizes.clamp_min(1).log()[None]
            fw = fl.softmax(dim=-1).amax(dim=0)
            fw = torch.where(open_coarse[coarse_lab], fw + 1.0, fw)               # open groups rank first
            own = (q @ k.t()).amax(dim=0)
            own = (own - own.min()) / (own.max() - own.min()).clamp_min(1e-6)
            s = fw[fine_lab] + 1e-3 * own                                         # whole groups, best member first
            s[view.positions[h, idx] < self.n_sink] = float("inf")
            score[h, idx] = s
        return Keep.from_topk(score, view.budget, view.valid)
