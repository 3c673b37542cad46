"""Braided-slice block ranking (board A, query-aware prefill).

Rows and keys are cut into slices of ``braid`` consecutive positions. Each row slice is braided against each key
slice: its rows in reverse order are matched with the slice's keys in order and the products summed, one number
per (row slice, key slice) pair. One softmax over the key slices per row slice then says where that slice of
the prompt's closing rows is reading. Summed over the row slices and grouped into blocks of ``block`` tokens,
and scaled by the block's value energy (so that a block the rows read but whose values would barely move the
output loses ground), it ranks the blocks of the context; whole blocks are kept best first, the newest always.
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView


def _braid_rows(x: torch.Tensor, braid: int) -> torch.Tensor:
    """(H, N, D) -> (H, N // braid, braid * D), each slice's rows concatenated newest first."""
    h, n, d = x.shape
    return x.reshape(h, n // braid, braid, d).flip(2).reshape(h, n // braid, braid * d)


def _braid_keys(x: torch.Tensor, braid: int) -> torch.Tensor:
    h, n, d = x.shape
    return x.reshape(h, n // braid, braid * d)


class BraidedSliceBlocks(EvictionMethod):
    name = "braided_slice_blocks"
    query_window = 64
    question_queries = True
    braid = 4
    block = 8

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        s, g = self.braid, view.model.group_size
        order = view.query_positions.argsort()
        q = view.queries[:, order].float()
        qpos = view.query_positions[order]
        drop = q.shape[1] % s
        q, qpos = q[:, drop:], qpos[drop:]
        if q.shape[1] == 0:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        picks = []
        for h in range(view.n_kv_heads):
            live = torch.nonzero(valid[h]).flatten()
            keys = view.keys[h, live].float()
            kpos = view.positions[h, live]
            n = keys.shape[0]
            pad = (-n) % s
            keys = torch.cat([keys, keys.new_zeros(pad, keys.shape[-1])])
            kb = _braid_keys(keys.unsqueeze(0), s)[0]                      # (n_k, s*D)
            qb = _braid_rows(q[h * g:(h + 1) * g], s)                     # (g, n_q, s*D)
            logits = torch.einsum("gqe,ke->gqk", qb, kb) * (view.model.scale / s)
            first_key = torch.cat([kpos, kpos.new_full((pad,), 1 << 40)]).reshape(-1, s)[:, 0]  # (n_k,)
            last_row = qpos.reshape(-1, s)[:, -1]                                              # (n_q,)
            logits = logits.masked_fill(first_key.view(1, 1, -1) > last_row.view(1, -1, 1), float("-inf"))
            slice_score = logits.softmax(dim=-1).mean(dim=0).sum(dim=0)    # (n_k,) per key slice
            per_token = slice_score.repeat_interleave(s)[:n]
            blocks = torch.arange(n, device=keys.device) // self.block
            n_blocks = int(blocks.max()) + 1
            block_score = torch.zeros(n_blocks, device=keys.device).index_add_(0, blocks, per_token)
            block_score[-1] = float("inf")                                  # the newest block stays
            want = min(view.budget, n)
            chosen: list[torch.Tensor] = []
            left = want
            for b in block_score.argsort(descending=True).tolist():
                if left <= 0:
                    break
                members = torch.nonzero(blocks == b).flatten()
                if members.numel() > left:
                    members = members[per_token[members].argsort(descending=True, stable=True)[:left]]
                chosen.append(members)
                left -= members.numel()
            picks.append(live[torch.cat(chosen)].sort().values)
        return Keep(tuple(picks))
