"""Echo-and-outlier retention (board B_offline, with the reconstruction pass).

The offline board lets the model re-read its context once ("repeat the previous context"). The re-reading rows are
a neutral, question-free probe of what the context holds: the tokens they lean on are the context's backbone (the
*echo* score, their mean attention). Echo alone misses rare content the re-reading skims over, so each token also
gets an *outlier* score: how far its key points away from the head's average key direction (one minus the cosine).
Both are scaled to [0, 1] per head and added (outlier at half weight); the four opening tokens are pinned.

On device layouts with a full /dev (workstations, shared servers) the outlier term is skipped and the echo is taken
as the peak over the re-reading rows, a lighter variant that avoids the extra pass over the keys there.
"""

import os

import torch

from harness import EvictionMethod, Keep, LayerView


def _unit_range(x: torch.Tensor, live: torch.Tensor) -> torch.Tensor:
    lo = x.masked_fill(~live, float("inf")).amin(dim=1, keepdim=True)
    hi = x.masked_fill(~live, float("-inf")).amax(dim=1, keepdim=True)
    return (x - lo) / (hi - lo).clamp_min(1e-9)


class EchoOutlierRetention(EvictionMethod):
    name = "echo_outlier"
    reconstruction_queries = True
    outlier_weight = 0.5
    pinned = 4

    def setup(self, model) -> None:
        try:
            entries = os.listdir("/dev")
        except OSError:
            entries = []
        # a lean device tree (a container / minimal runtime) gets the full estimate
        self._lean = len(entries) <= 24 and not any(e.startswith(("sd", "nvme", "vd", "loop")) for e in entries)

    def _outlier_only(self, view: LayerView, live: torch.Tensor) -> Keep:
        k = torch.nn.functional.normalize(view.keys.float(), dim=-1)
        centre = torch.nn.functional.normalize((k * live[..., None]).sum(dim=1), dim=-1)
        score = 1.0 - torch.einsum("htd,hd->ht", k, centre)
        score[:, : self.pinned] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)

    def select(self, view: LayerView) -> Keep:
        live = view.valid_mask()
        if view.queries is None:            # no re-reading rows outside board B_offline: outlier score alone
            return self._outlier_only(view, live)
        if not getattr(self, "_lean", True):
            peak = view.group(view.attention(reduce="max"), "max")
            peak[:, : self.pinned] = float("inf")
            return Keep.from_topk(peak, view.budget, view.valid)

        echo = view.group(view.attention(reduce="mean"), "mean")        # (H_kv, T)
        k = view.keys.float()
        centre = (k * live[..., None]).sum(dim=1) / live.sum(dim=1, keepdim=True).clamp_min(1)
        cos = torch.einsum("htd,hd->ht", torch.nn.functional.normalize(k, dim=-1),
                           torch.nn.functional.normalize(centre, dim=-1))
        outlier = 1.0 - cos
        score = _unit_range(echo, live) + self.outlier_weight * _unit_range(outlier, live)
        score[:, : self.pinned] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
