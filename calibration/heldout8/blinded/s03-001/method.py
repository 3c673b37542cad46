"""Successor folding for decode-time caches (board C).

Every cached token carries the attention it has received since it entered the cache (summed over the decode steps, per
KV head). When a layer reaches its cap, the least-attended tokens leave, but the most-attended of the leavers (as many
as tokens arrived since the previous eviction) are folded forward: each is offered to the next few surviving tokens
that follow it, and is accepted with a chance equal to its attention relative to theirs. An accepted leaver adds an
equal share of its value vector to each of those successors, so its content keeps reaching the output. Keys are never
touched.
"""

import torch

from harness import EvictionMethod, LayerView, Rewrite

_ACC = "succ_fold_acc"
_SEEN = "succ_fold_seen"
_ARRIVED = "succ_fold_arrived"


def _fresh_attention(view: LayerView) -> tuple[torch.Tensor, int]:
    """Attention summed over the queries not counted yet (H_kv, T), and how many there were."""
    if view.queries is None or view.query_positions is None:
        return torch.zeros(view.keys.shape[:2], device=view.keys.device), 0
    last = view.state.get(_SEEN, -1)
    new = view.query_positions > last
    count = int(new.sum())
    if count == 0:
        return torch.zeros(view.keys.shape[:2], device=view.keys.device), 0
    att = view.attention(view.queries[:, new], reduce="sum") if count < new.numel() else view.attention(reduce="sum")
    view.state[_SEEN] = int(view.query_positions.max())
    return view.group(att, "mean"), count


class SuccessorFolding(EvictionMethod):
    name = "successor_folding"
    query_window = 64
    fold_width = 8          # surviving successors that share a folded value
    newest = 8              # the newest tokens never leave
    seed = 7

    def select(self, view: LayerView) -> Rewrite:
        received, arrived = _fresh_attention(view)
        acc = view.recall(_ACC) + received
        view.remember(_ACC, acc)
        valid = view.valid_mask()
        h_kv = view.n_kv_heads
        # one ranking for the whole layer: attention received, averaged over the KV heads
        shared = (acc * valid).sum(0) / valid.sum(0).clamp_min(1)
        lengths = valid.sum(1)
        since = view.state.get(_ARRIVED, 0) + arrived
        gen = torch.Generator().manual_seed(self.seed * 131 + view.layer)
        keys, vals, poss = [], [], []
        for h in range(h_kv):
            n = int(lengths[h])
            k, v, p = view.keys[h, :n].float(), view.values[h, :n].float().clone(), view.positions[h, :n]
            budget = min(view.budget, n)
            rank = shared[:n].clone()
            rank[max(0, n - self.newest):] = float("inf")
            keep = rank.topk(budget).indices.sort().values
            gone_mask = torch.ones(n, dtype=torch.bool, device=k.device)
            gone_mask[keep] = False
            gone = torch.nonzero(gone_mask).flatten()
            if gone.numel() and budget > 0:
                self._fold(v, acc[h, :n], keep, gone, rank, since, gen)
            keys.append(k[keep])
            vals.append(v[keep])
            poss.append(p[keep])
        view.state[_ARRIVED] = 0
        view.remember(_ACC, acc)  # realigned by position at the next call
        return Rewrite(tuple(keys), tuple(vals), tuple(poss))

    def _fold(self, v, heat, keep, gone, rank, since, gen) -> None:
        m = min(max(since, 1), gone.numel())
        # the hottest leavers (later positions first among equals)
        order = torch.argsort(rank[gone].flip(0), descending=True, stable=True)[:m]
        movers = gone.flip(0)[order].sort().values
        start = torch.searchsorted(keep, movers, right=True)
        offs = torch.arange(self.fold_width, device=v.device)
        slot = start[:, None] + offs[None, :]
        inside = slot < keep.numel()
        slot = slot.clamp(max=keep.numel() - 1)
        targets = keep[slot]                                      # (m, W) cache indices
        width = inside.sum(1).clamp_min(1).float()
        ref = (heat[targets] * inside).sum(1) / width
        chance = (heat[movers] / ref).nan_to_num(0.0, posinf=1.0).clamp(0, 1)
        accept = torch.bernoulli(chance.cpu(), generator=gen).to(v.device)
        share = (accept / width)[:, None, None] * inside[:, :, None]
        add = v[movers][:, None, :] * share                        # (m, W, D)
        v.index_add_(0, targets.flatten(), add.reshape(-1, v.shape[-1]))
