"""Fold-in retention (board C, decode-time cap).

Dropping a token throws away its value; folding it in keeps a trace of it. Fold-in retention scores each cached
token by its mean attention (the attention the newest rows paid it, summed over the group's query heads, averaged over
the rows that could see it, carried across rounds as a running mean). The top `budget` tokens (newest 16 always) keep
their keys. Each dropped token's value is folded into the nearest kept token after it (the one before it at the end
of the cache), in proportion to the two tokens' mean attention; the kept token's attention weight grows by what it
absorbed, so later folds stay balanced.
"""

import torch

from harness import EvictionMethod, Keep, LayerView, Rewrite


class FoldInRetention(EvictionMethod):
    name = "fold_in"
    query_window = 64
    newest = 16
    carry = 0.5     # weight of the old running mean

    def select(self, view: LayerView):
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        seen = view.state.get("seen", -1)
        fresh = view.query_positions > seen
        att = view.group(view.attention(view.queries[:, fresh], reduce="mean"), "sum") if bool(fresh.any()) \
            else torch.zeros(view.keys.shape[:2], device=view.keys.device)
        view.state["seen"] = int(view.query_positions.max())
        old = view.recall("w", fill=-1.0)
        w = torch.where(old < 0, att, self.carry * old + (1 - self.carry) * att)
        mass = view.recall("mass", fill=1.0)
        mask = view.valid_mask()
        ks, vs, ps = [], [], []
        new_w = torch.zeros_like(w)
        new_mass = torch.zeros_like(w)
        keep_idx = []
        for h in range(view.n_kv_heads):
            n = int(mask[h].sum())
            s = w[h, :n].clone()
            s[max(0, n - self.newest):] = float("inf")
            k = min(view.budget, n)
            idx = s.topk(k).indices.sort().values
            keep_idx.append(idx)
            a = (w[h, :n].clamp_min(1e-6) * mass[h, :n])
            kept = torch.zeros(n, dtype=torch.bool, device=s.device)
            kept[idx] = True
            # each token's target: the first kept token at or after it, else the last kept one
            nxt = torch.full((n,), -1, dtype=torch.long, device=s.device)
            last = -1
            for i in range(n - 1, -1, -1):
                if bool(kept[i]):
                    last = i
                nxt[i] = last
            nxt[nxt < 0] = int(idx[-1])
            slot = torch.searchsorted(idx, nxt)
            v = view.values[h, :n].float()
            num = torch.zeros(k, v.shape[-1], device=v.device).index_add_(0, slot, a[:, None] * v)
            den = torch.zeros(k, device=v.device).index_add_(0, slot, a)
            merged = (num / den[:, None].clamp_min(1e-12)).to(view.values.dtype)
            ks.append(view.keys[h, idx].clone())
            vs.append(merged)
            ps.append(view.positions[h, idx].clone())
            new_w[h, :k] = w[h, idx]
            new_mass[h, :k] = den / w[h, idx].clamp_min(1e-6)
        # statistics follow the kept entries (by position)
        view.state["w"] = (torch.nn.utils.rnn.pad_sequence(ps, batch_first=True, padding_value=-1),
                           new_w[:, : max(len(p) for p in ps)],
                           torch.nn.utils.rnn.pad_sequence([torch.ones(len(p), dtype=torch.bool) for p in ps],
                                                           batch_first=True))
        view.state["mass"] = (view.state["w"][0], new_mass[:, : max(len(p) for p in ps)], view.state["w"][2])
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))
