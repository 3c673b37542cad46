"""Key-derived lifetimes (board C).

Every cached token is given a lifetime the moment it is judged, from its own key and value: a token whose key is
long relative to its head (keys that stand out in length tend to be generic, position-like) fades quickly; a token
whose value is long relative to its head (it writes much into the residual stream) lasts. Concretely, with z_k and
z_v the head-standardised key and value norms, a token fades at rate r = r0 exp(z_k - z_v), r0 = 1 / budget, and its
survival after age a (positions since it was written) is exp(-r a). When a layer is full the tokens with the lowest
survival leave. No attention is computed: the rule needs neither queries nor a window.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def _standardise(x: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    n = valid.sum(dim=1, keepdim=True).clamp_min(1)
    mean = (x * valid).sum(dim=1, keepdim=True) / n
    var = (((x - mean) * valid) ** 2).sum(dim=1, keepdim=True) / n
    return (x - mean) / var.sqrt().clamp_min(1e-6)


class KeyDerivedLifetimes(EvictionMethod):
    name = "key_derived_lifetimes"

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        zk = _standardise(view.keys.float().norm(dim=-1), valid)
        zv = _standardise(view.values.float().norm(dim=-1), valid)
        rate = torch.exp(zk - zv) / max(1, view.budget)
        now = int(view.positions.masked_fill(~valid, -1).max()) + 1
        age = (now - view.positions).float()
        survival = -rate * age                                              # log of exp(-r a)
        return Keep.from_topk(survival, view.budget, view.valid)
