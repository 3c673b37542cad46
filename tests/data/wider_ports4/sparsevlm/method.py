"""Rater-led thinning: the question's tokens act as raters of the context; deeper layers keep fewer entries, and
what a layer lets go is not lost but pressed into a few recycled entries, each the blend of the dropped entries
that look most like one of the best-rated dropped ones."""

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, LayerView, ModelInfo, Rewrite


class RaterThinning(EvictionMethod):
    name = "rater_thinning"
    question_queries = True
    recycled = 4

    def layer_budgets(self, mean_budget: int, n_tokens: int, model: ModelInfo) -> list[int] | None:
        n = len(model.attention_layers)
        raw = [1.5 - i / max(1, n - 1) for i in range(n)]
        scale = mean_budget * n / sum(raw)
        return [max(1, min(n_tokens, int(r * scale))) for r in raw]

    def select(self, view: LayerView) -> Rewrite:
        votes = view.group(view.attention(reduce="sum"), "mean")  # (H, T): the raters' attention
        room = max(1, view.budget - self.recycled)
        ks, vs, ps = [], [], []
        for h in range(view.n_kv_heads):
            order = votes[h].argsort(descending=True)
            kept, gone = order[:room], order[room:]
            k, v, p = view.keys[h, kept], view.values[h, kept], view.positions[h, kept]
            if gone.numel():
                c = min(self.recycled, gone.numel())
                unit = F.normalize(view.keys[h, gone].float(), dim=-1)
                owner = (unit @ unit[:c].T).argmax(dim=-1)  # each dropped entry joins its most alike centre
                w = votes[h, gone].softmax(0)
                mk = torch.zeros(c, k.shape[-1]).index_add_(0, owner, w[:, None] * view.keys[h, gone].float())
                mv = torch.zeros(c, v.shape[-1]).index_add_(0, owner, w[:, None] * view.values[h, gone].float())
                mass = torch.zeros(c).index_add_(0, owner, w).clamp_min(1e-9)[:, None]
                mp = torch.zeros(c, dtype=torch.long).index_reduce_(0, owner, view.positions[h, gone], "amax",
                                                                   include_self=False)
                k = torch.cat([k.float(), mk / mass]).to(view.keys.dtype)
                v = torch.cat([v.float(), mv / mass]).to(view.values.dtype)
                p = torch.cat([p, mp])
            o = p.argsort()
            ks.append(k[o])
            vs.append(v[o])
            ps.append(p[o])
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))
