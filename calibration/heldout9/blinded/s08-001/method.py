"""Gated accumulation slots (board C).

Instead of throwing tokens away when a layer is full, some tokens are folded into the slot on their left, so the
information they carried stays in the cache as part of a running average. Which tokens fold is decided by a gate
read from the key itself: after removing the rotary embedding, each KV head has a dominant channel (largest mean
magnitude); a token whose standardised value on that channel is high opens the gate (sigmoid), and the tokens with
the most open gates fold first, each into the nearest slot to its left that stays. The fold is a weighted average:
every token brings a weight, the sigmoid of its own query on the same channel (group mean, pre-RoPE; 0.5 when its
query is no longer in the window), and every slot remembers the total weight folded into it, across evictions, so
older slots move less. Slots keep the position of their first token. The first 4 tokens and the newest 8 never fold.
"""

import torch

from harness import EvictionMethod, LayerView, Rewrite


class GatedAccumulationSlots(EvictionMethod):
    name = "gated_accumulation_slots"
    query_window = 4096
    n_sink = 4
    newest = 8

    def _weights(self, view: LayerView, h: int, pos: torch.Tensor, chan: int) -> torch.Tensor:
        w = torch.full((pos.numel(),), 0.5, device=pos.device)
        if view.queries is None:
            return w
        g = view.model.group_size
        qpos = view.query_positions.to(pos.device)
        q = view.queries[h * g:(h + 1) * g].float()
        pre = view.rotate(q, -qpos)[..., chan].mean(dim=0)                 # (N,)
        pre = (pre - pre.mean()) / pre.std().clamp_min(1e-6) if pre.numel() > 1 else pre
        at = torch.searchsorted(qpos, pos).clamp(max=qpos.numel() - 1)
        hit = qpos[at] == pos
        w[hit] = torch.sigmoid(pre[at[hit]])
        return w

    def select(self, view: LayerView) -> Rewrite:
        valid = view.valid_mask()
        carried = view.recall("mass")
        ks, vs, ps = [], [], []
        mass_out = torch.zeros(view.keys.shape[:2], device=view.keys.device)
        for h in range(view.n_kv_heads):
            idx = torch.nonzero(valid[h]).flatten()
            pos = view.positions[h, idx]
            k = view.keys[h, idx].float()
            v = view.values[h, idx].float()
            n = idx.numel()
            fold_n = max(0, n - view.budget)
            pre = view.rotate(k, -pos)
            chan = int(pre.abs().mean(dim=0).argmax())
            z = pre[:, chan]
            z = (z - z.mean()) / z.std().clamp_min(1e-6) if n > 1 else z
            gate = torch.sigmoid(z)
            movable = torch.ones(n, dtype=torch.bool, device=k.device)
            movable[: max(1, min(self.n_sink, n))] = False
            movable[max(0, n - self.newest):] = False
            fold = torch.zeros(n, dtype=torch.bool, device=k.device)
            if fold_n:
                cand = gate.masked_fill(~movable, float("-inf"))
                pick = cand.topk(min(fold_n, int(movable.sum()))).indices
                fold[pick] = True
                if int(fold.sum()) < fold_n:                              # not enough movable tokens: drop oldest
                    rest = torch.nonzero(~fold & (torch.arange(n, device=k.device) >= 1)).flatten()
                    fold[rest[: fold_n - int(fold.sum())]] = True
            weight = self._weights(view, h, pos, chan)
            prior = carried[h, idx]
            weight = torch.where(prior > 0, prior, weight)
            ar = torch.arange(n, device=k.device)
            anchor = torch.cummax(torch.where(fold, torch.zeros_like(ar), ar), dim=0).values
            slots = torch.nonzero(~fold).flatten()
            total = torch.zeros(n, device=k.device).index_add_(0, anchor, weight)
            k_sum = torch.zeros_like(k).index_add_(0, anchor, k * weight[:, None])
            v_sum = torch.zeros_like(v).index_add_(0, anchor, v * weight[:, None])
            denom = total[slots].clamp_min(1e-9)[:, None]
            ks.append((k_sum[slots] / denom).to(view.keys.dtype))
            vs.append((v_sum[slots] / denom).to(view.values.dtype))
            ps.append(pos[slots].long())
            mass_out[h, idx[slots]] = total[slots]
        view.remember("mass", mass_out)
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))
