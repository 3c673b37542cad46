"""Jittered-tally retention (board C, decode-time eviction).

While decoding, each query that arrives adds to every visible token's tally; the tally is what keeps a token in the
cache once it has left the recent window. Plain softmax tallies are brittle after evictions (the surviving tokens
soak up the mass of the evicted ones), so each query's logits are jittered with Gumbel noise and softened with a
temperature that rises as the generation goes on before they are tallied.
"""

import math

import torch

from harness import EvictionMethod, Keep, LayerView


def _gumbel(shape, gen: torch.Generator, device) -> torch.Tensor:
    u = torch.rand(shape, generator=gen).clamp_(1e-9, 1 - 1e-9)
    return (-torch.log(-torch.log(u))).to(device)


class JitteredTally(EvictionMethod):
    name = "jittered_tally"
    query_window = 4096
    recent_share = 0.25
    tau_start = 1.0
    tau_end = 2.0
    tau_horizon = 16384

    def _tau(self, step: int) -> float:
        frac = min(1.0, step / self.tau_horizon)
        return self.tau_start + (self.tau_end - self.tau_start) * frac

    def select(self, view: LayerView) -> Keep:
        tally = view.recall("tally")
        if view.queries is not None:
            seen = view.state.get("seen", -1)
            fresh = view.query_positions > seen
            if bool(fresh.any()):
                q = view.queries[:, fresh].float()
                qpos = view.query_positions[fresh]
                g = view.model.group_size
                h_kv, t, d = view.keys.shape
                gen = view.state.setdefault("gen", torch.Generator().manual_seed(1000 + view.layer))
                tau = self._tau(int(qpos.max()))
                for chunk in torch.split(torch.arange(q.shape[1], device=q.device), 256):
                    logits = torch.einsum("hgnd,htd->hgnt", q[:, chunk].view(h_kv, g, -1, d), view.keys.float())
                    logits = logits * view.model.scale
                    hide = (view.positions[:, None, None, :] > qpos[chunk][None, None, :, None]) | \
                        ~view.valid_mask()[:, None, None, :]
                    logits = logits + _gumbel(logits.shape, gen, logits.device)
                    probs = ((logits / tau).masked_fill(hide, -math.inf)).softmax(dim=-1).nan_to_num(0.0)
                    tally = tally + probs.sum(dim=(1, 2))
                view.state["seen"] = int(qpos.max())
        view.remember("tally", tally)
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        recent = int(view.budget * self.recent_share)
        newest = view.positions.masked_fill(~view.valid_mask(), -1).amax(dim=-1, keepdim=True)
        score = tally.masked_fill(view.positions > newest - recent, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
