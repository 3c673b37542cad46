"""Age-quota heavy hitters (board C).

H2O ranks every cached token by the attention it has accumulated. In a long reasoning trace that sum favours old
tokens (they have been visible to more queries), and when the cache is full the newer half of the trace, the
steps the model is building on, competes at a disadvantage. We split the evictable tokens at their median
position into an older and a newer pool and give each pool a quota proportional to the attention mass the newest
queries (those since the previous call) pay it, with a floor of a quarter of the room for each; inside each pool
tokens are ranked by H2O's accumulated attention. Four opening tokens and the newest 32 are always kept.

Builds on H2O (Zhang et al., 2023, arXiv 2306.14048): accumulated attention carried across calls by position,
and StreamingLLM's opening tokens (Xiao et al., 2023, arXiv 2309.17453). The age pools and their mass-proportional
quotas are ours.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class AgeQuotaHitters(EvictionMethod):
    name = "age_quota_hitters"
    query_window = 512
    n_open = 4
    n_new = 32
    floor = 0.25

    def select(self, view: LayerView) -> Keep:
        acc = view.recall("acc")
        recent = torch.zeros_like(acc)
        if view.queries is not None:
            seen = view.state.get("seen", -1)
            fresh = view.query_positions > seen
            if bool(fresh.any()):
                from harness.api import reference_attention
                a = reference_attention(view.queries[:, fresh], view.keys, view.positions,
                                        view.query_positions[fresh], view.model.group_size, view.valid,
                                        scale=view.model.scale, reduce="sum")
                recent = view.group(a, "sum")
                acc = acc + recent
                view.state["seen"] = int(view.query_positions.max())
        view.remember("acc", acc)
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            idx = valid[h].nonzero().flatten()
            p = view.positions[h, idx]
            b = min(view.budget, idx.numel())
            fixed = (p < min(self.n_open, b // 8)) | (p > int(p.max()) - min(self.n_new, b // 4))
            span = (~fixed).nonzero().flatten()
            room = b - int(fixed.sum())
            cut = p[span].median()
            old, new = span[p[span] <= cut], span[p[span] > cut]
            m_old = float(recent[h, idx[old]].sum())
            m_new = float(recent[h, idx[new]].sum())
            share = m_old / (m_old + m_new) if m_old + m_new > 0 else 0.5
            share = min(max(share, self.floor), 1 - self.floor)
            q_old = min(old.numel(), int(round(share * room)))
            q_new = min(new.numel(), room - q_old)
            q_old = min(old.numel(), room - q_new)
            pick_old = old[acc[h, idx[old]].topk(q_old).indices]
            pick_new = new[acc[h, idx[new]].topk(q_new).indices]
            chosen = torch.cat([fixed.nonzero().flatten(), pick_old, pick_new])
            out.append(idx[chosen].sort().values)
        return Keep(tuple(out))
