"""Phase-aware trace eviction (board C, decode-time cap).

A reasoning trace alternates between phases: focused steps (the model copies or computes from a few earlier tokens),
deliberation (it looks at a moderate spread of earlier steps) and hand-overs (its attention is diffuse while it moves
on). Each generated token's phase is read off its own query: the share of that query's attention (group mean) held by
its 8 strongest keys. Tokens are labelled in runs of 16 positions by the runs' median share and the labels are carried
with the cache. At eviction, hand-over runs go first, focused runs next, deliberation runs last; inside a phase,
tokens go by the summed attention of the newest rows. The newest 16 tokens always stay.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class PhaseAwareEviction(EvictionMethod):
    name = "phase_aware"
    query_window = 64
    strongest = 8
    run = 16
    newest = 16
    focused_above = 0.75
    diffuse_below = 0.35
    rank = {"handover": 0.0, "focused": 1.0, "deliberation": 2.0, "unseen": 1.5}

    def _phase_of_queries(self, view: LayerView, att: torch.Tensor) -> torch.Tensor:
        """att (H_kv, N, T) -> (N,) phase rank of each query's own token."""
        share = att.topk(min(self.strongest, att.shape[-1]), dim=-1).values.sum(-1).mean(0)      # (N,)
        runs = torch.div(view.query_positions, self.run, rounding_mode="floor")
        med = share.clone()
        for r in runs.unique():
            m = runs == r
            med[m] = share[m].median()
        out = torch.full_like(med, self.rank["deliberation"])
        out[med >= self.focused_above] = self.rank["focused"]
        out[med < self.diffuse_below] = self.rank["handover"]
        return out

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens and view.valid is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        phase = view.recall("phase", fill=-1.0)
        if view.queries is None:
            imp = view.positions.float() / (view.positions.float().max() + 1)
        else:
            att = view.group(view.attention(), "mean")                                    # (H_kv, N, T)
            ranks = self._phase_of_queries(view, att)
            counts = view.valid_mask().sum(1)
            for h in range(view.n_kv_heads):
                pos_h = view.positions[h, : int(counts[h])].contiguous()
                if pos_h.numel() == 0:
                    continue
                where = torch.searchsorted(pos_h, view.query_positions.to(pos_h.dtype))
                where = where.clamp(max=pos_h.numel() - 1)
                hit = pos_h[where] == view.query_positions
                phase[h][where[hit]] = ranks[hit]
            imp = att.sum(1)
            imp = imp / imp.amax(-1, keepdim=True).clamp_min(1e-9)
        view.remember("phase", phase)
        label = torch.where(phase < 0, torch.full_like(phase, self.rank["unseen"]), phase)
        score = label * 4.0 + imp.clamp(max=0.999)
        n = view.valid_mask().sum(1)
        for h in range(view.n_kv_heads):
            c = int(n[h])
            score[h, max(0, c - self.newest):c] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
