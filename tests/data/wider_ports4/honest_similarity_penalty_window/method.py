"""Pull minus echo: the closing queries' attention, less a penalty for keys that resemble many others on average
(R-KV's redundancy, taken once over the whole prompt rather than re-estimated), with the window kept."""

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class PullMinusEcho(EvictionMethod):
    name = "pull_minus_echo"
    query_window = 32
    weight = 0.2

    def select(self, view: LayerView) -> Keep:
        pull = view.group(view.attention(reduce="mean"), "mean")
        unit = F.normalize(view.keys.float(), dim=-1)
        echo = (unit @ unit.transpose(1, 2)).clamp_min(0).mean(-1)
        score = pull / pull.amax(-1, keepdim=True).clamp_min(1e-9) - self.weight * echo
        score[:, -self.query_window:] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
