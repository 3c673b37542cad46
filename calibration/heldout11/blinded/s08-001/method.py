"""Behaviour-code spread (board B_online).

Importance rankings keep what the context's closing rows read and throw away everything else wholesale, so whole
regions of the context vanish together. We spend a quarter of each head's budget on *spread*: every token gets a
behaviour code, one bit per query head (is the token read more than that head's median token?), the codes are
compared with the layer's consensus code, and the tokens the importance ranking dropped are laid out along their
distance to that consensus; we keep evenly spaced tokens along that ordering, so every kind of behaviour keeps a
representative.

The importance part is the pooled attention of the last 32 context rows (SnapKV-style window, credited), with the
window itself always kept. The spread quota is sized from the run's allocation plan (``layer_budgets``); a layer
handed over without a plan for its size gets the importance ranking alone.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView, ModelInfo


class BehaviourSpread(EvictionMethod):
    name = "behaviour_spread"
    query_window = 32
    spread_share = 0.25
    pool = 7

    def layer_budgets(self, mean_budget: int, n_tokens: int, model: ModelInfo):
        self._plan = (int(mean_budget), int(n_tokens))
        return None  # uniform allocation

    def _importance(self, view: LayerView) -> tuple[torch.Tensor, torch.Tensor]:
        per_head = view.attention(reduce="sum")  # (H_q, T)
        imp = view.group(per_head, "mean")
        imp = F.max_pool1d(imp[:, None], self.pool, stride=1, padding=self.pool // 2)[:, 0]
        imp = imp.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return imp, per_head

    def select(self, view: LayerView) -> Keep:
        t, b = view.n_tokens, view.budget
        if b >= t or view.queries is None or view.valid is not None:
            return Keep.from_topk(view.positions.float(), b, view.valid)
        imp, per_head = self._importance(view)
        if getattr(self, "_plan", None) != (b, t):
            return Keep.from_topk(imp, b, view.valid)
        quota = int(b * self.spread_share)
        bits = per_head > per_head.median(dim=1, keepdim=True).values  # (H_q, T) behaviour code per token
        consensus = bits.float().mean(1, keepdim=True) > 0.5
        distance = (bits != consensus).sum(0)  # Hamming distance of each token's code to the consensus
        order = torch.argsort(distance * t + torch.arange(t, device=distance.device))
        out = []
        for h in range(view.n_kv_heads):
            core = imp[h].topk(b - quota).indices
            mask = torch.ones(t, dtype=torch.bool, device=imp.device)
            mask[core] = False
            rest = order[mask[order]]
            take = min(quota, rest.numel())
            step = rest.numel() / max(take, 1)
            picks = rest[(torch.arange(take, device=imp.device) * step).long()]
            out.append(torch.cat([core, picks]).sort().values)
        return Keep(tuple(out))
