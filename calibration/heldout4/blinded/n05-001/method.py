import torch

from harness import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    """Rhythm-aware retention for long generations: keep the tokens that are due to be needed again."""

    name = "rhythm_keep"
    query_window = 64

    def _hits(self, view: LayerView):
        """(H_kv, n, T) bool: which fresh queries leaned on which tokens above a fair share; and their positions."""
        seen = view.state.get("upto", -1)
        qp = view.query_positions
        fresh = qp > seen
        if not bool(fresh.any()):
            return None, None
        q = view.queries[:, fresh]
        qpos = qp[fresh]
        probs = view.attention(q)                                  # (H_q, n, T), explicit queries: unmasked
        causal = view.positions[:, None, :] <= qpos[None, :, None]
        probs = view.group(probs, "max") * causal
        fair = 1.0 / causal.sum(dim=-1, keepdim=True).clamp_min(1)
        view.state["upto"] = int(qpos.max())
        return probs > fair, qpos

    def select(self, view: LayerView) -> Keep:
        now = int(view.positions.max())
        last = view.recall("last", fill=-1.0)
        gap = view.recall("gap", fill=0.0)
        if view.queries is not None:
            hit, qpos = self._hits(view)
            if hit is not None:
                for j in range(hit.shape[1]):                      # step through the fresh queries in order
                    h = hit[:, j, :]
                    p = float(qpos[j])
                    seen_before = h & (last >= 0)
                    gap = torch.where(seen_before, torch.maximum(gap, p - last), gap)
                    last = torch.where(h, torch.full_like(last, p), last)
                now = max(now, int(qpos.max()))
        born = view.positions.float()
        last = torch.where(last < 0, born, last)
        view.remember("last", last)
        view.remember("gap", gap)
        idle = now - last
        due = gap - idle                                           # > 0: its next return is still ahead
        score = torch.where(due >= 0, 1.0 + due / (gap + 1.0), -idle / (now + 1.0))
        recent = max(1, view.budget // 8)
        valid = view.valid_mask()
        cnt = valid.sum(dim=1)
        for h in range(view.n_kv_heads):
            n = int(cnt[h])
            score[h, max(0, n - recent):n] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
