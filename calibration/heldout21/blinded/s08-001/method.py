"""Tilted-lane rehearsal (board C, decode-time cap).

Before deciding what to drop, rehearse the newest rows' attention cheaply. Per KV head, the newest 32 queries of the
group are stacked and their right singular vectors give a tilt: in the tilted basis a few lanes carry most of the
query energy. The 12 tilted lanes with the largest combined |q| and |k| mass are kept; queries and keys are
projected onto the tilt and compared on those lanes only. Every rehearsed query nominates the keys whose rehearsed
logit is within a margin of its best one; a key's score is the number of nominations plus its rehearsed attention as a
tie-break. The newest 16 tokens always stay.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class TiltedRehearsal(EvictionMethod):
    name = "tilted_rehearsal"
    query_window = 32
    lanes = 12
    margin = 3.0
    newest = 16

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        h_kv, t, d = view.keys.shape
        mask = view.valid_mask()
        score = torch.full((h_kv, t), float("-inf"), device=view.keys.device)
        for h in range(h_kv):
            n = int(mask[h].sum())
            k = view.keys[h, :n].float()
            q = view.queries[h * g:(h + 1) * g].float().reshape(-1, d)
            qpos = view.query_positions.repeat(g)
            _, _, vh = torch.linalg.svd(q, full_matrices=False)
            tilt = vh.T                                                   # (D, D') columns = directions
            qt, kt = q @ tilt, k @ tilt
            mass = qt.abs().sum(0) * kt.abs().mean(0)
            lane = mass.topk(min(self.lanes, mass.numel())).indices
            logit = (qt[:, lane] @ kt[:, lane].T) * view.model.scale       # (gN, n)
            logit = logit.masked_fill(view.positions[h, :n][None] > qpos[:, None], float("-inf"))
            top = logit.amax(-1, keepdim=True)
            nominated = (logit >= top - self.margin).float().sum(0)
            soft = logit.softmax(-1).nan_to_num(0.0).sum(0)
            score[h, :n] = nominated + soft / (soft.max() + 1e-9)
            score[h, max(0, n - self.newest):n] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
