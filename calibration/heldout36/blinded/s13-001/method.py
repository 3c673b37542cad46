"""InfiniPot port (Kim et al., 2024, arXiv 2410.01518): the pot distilled with a catalyst prompt and a
novelty score, as one-shot query-agnostic compression on board B_offline.

InfiniPot streams a long input through a fixed-size pot: whenever the pot fills, it appends a catalyst
prompt (CaP) whose attention over the pot says what future questions will need, adds a novelty score
(NuC: how unlike the rest of the pot a token's key is), and keeps the best tokens. This port:

- stand-in for the catalyst prompt: the harness's one-off reconstruction pass ("repeat the previous
  context", board B_offline) hands over its queries; their attention (mean over queries, max over the
  group) is the CaP score (the harness offers no way to append a prompt of one's own);
- novelty: 1 - cosine of each key to the mean key of its head (NuC), ranked;
- one distillation of the whole context to the budget (the harness compresses once after prefill, so
  there is no streaming of successive pots); score = CaP rank + `novelty_share` x NuC rank.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class InfiniPotPort(EvictionMethod):
    name = "infinipot_port"
    query_window = 16
    reconstruction_queries = True
    novelty_share = 0.5
    sinks = 4

    @staticmethod
    def _rank(x: torch.Tensor) -> torch.Tensor:
        return x.argsort(dim=-1).argsort(dim=-1).float() / max(1, x.shape[-1] - 1)

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        cap = view.group(view.attention(reduce="mean"), "max")
        k = F.normalize(view.keys.float(), dim=-1)
        nuc = 1.0 - (k * F.normalize(k.mean(dim=1, keepdim=True), dim=-1)).sum(dim=-1)
        score = self._rank(cap) + self.novelty_share * self._rank(nuc)
        score = score.masked_fill(view.positions < self.sinks, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
