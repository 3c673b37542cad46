"""Joint-basis question attention (board A): the keys of all KV heads of a layer share one low-dimensional basis,
fitted jointly in the rotation-free frame; the question ranks the context against keys rebuilt from that shared
basis, which keeps what the heads have in common and drops each head's idiosyncratic noise."""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class JointBasisAttention(EvictionMethod):
    name = "joint_basis_attention"
    query_window = 32
    question_queries = True
    rank_share = 0.25     # kept rank as a share of the concatenated head width
    kernel = 7
    n_anchor = 4

    @staticmethod
    def _unrotate(view: LayerView, keys: torch.Tensor, sign: int) -> torch.Tensor:
        try:
            view.rope
        except ValueError:
            return keys.float()
        return torch.stack([view.rotate(keys[h], sign * view.positions[h]) for h in range(keys.shape[0])])

    def _rebuilt_keys(self, view: LayerView) -> torch.Tensor:
        h_kv, t, d = view.keys.shape
        plain = self._unrotate(view, view.keys, -1)                          # (H_kv, T, D)
        wide = plain.permute(1, 0, 2).reshape(t, h_kv * d)                   # heads side by side: (T, H_kv*D)
        mean = wide.mean(dim=0, keepdim=True)
        u, s, vh = torch.linalg.svd(wide - mean, full_matrices=False)
        r = max(1, min(s.numel(), int(round(self.rank_share * h_kv * d))))
        low = (u[:, :r] * s[:r]) @ vh[:r] + mean
        joint = low.reshape(t, h_kv, d).permute(1, 0, 2).contiguous()
        return self._unrotate(view, joint, 1)

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        keys = self._rebuilt_keys(view)
        h_kv, t, d = keys.shape
        g = view.model.group_size
        rows = view.queries.float().reshape(h_kv, -1, d)
        logits = torch.einsum("hnd,htd->hnt", rows, keys) * view.model.scale
        qpos = view.query_positions.repeat(g)
        logits = logits.masked_fill(view.positions[:, None, :] > qpos[None, :, None], float("-inf"))
        score = logits.softmax(dim=-1).nan_to_num(0.0).sum(dim=1) / g
        score = F.max_pool1d(score[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        pinned = (view.positions >= int(view.query_positions.min())) | (view.positions < self.n_anchor)
        return Keep.from_topk(score.masked_fill(pinned, float("inf")), view.budget, view.valid)
