"""Envelope-block retention (board A): the context is cut into blocks of 16 tokens; the question and each block
are both summarised by their element-wise envelopes (the largest and the smallest value of every feature), the
block's relevance is the best dot product between the two envelopes, and relevance is smoothed down the stack
so that a layer does not forget what the layers below it found relevant. Whole blocks are kept."""

import torch

from harness import EvictionMethod, Keep, LayerView


def _envelopes(x: torch.Tensor, size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(T, D) -> per block of ``size`` rows: element-wise max and min, each (B, D)."""
    t, d = x.shape
    pad = (-t) % size
    hi = torch.cat([x, x[-1:].expand(pad, d)]) if pad else x
    blocks = hi.view(-1, size, d)
    return blocks.amax(dim=1), blocks.amin(dim=1)


class EnvelopeBlockRetention(EvictionMethod):
    name = "envelope_block_retention"
    query_window = 32
    question_queries = True
    block = 16
    carry = 0.25           # weight of the layers below in the smoothed relevance
    n_sink = 4

    def setup(self, model) -> None:
        self._below: dict = {}

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        below = getattr(self, "_below", None)
        if below is None:
            self._below = below = {}
        if view.layer == min(view.model.attention_layers or (view.layer,)):
            below.clear()
        valid = view.valid_mask()
        g = view.model.group_size
        score = torch.full(view.keys.shape[:2], float("-inf"), device=view.keys.device)
        for kv in range(view.n_kv_heads):
            idx = torch.nonzero(valid[kv]).flatten()
            k = view.keys[kv, idx].float()
            q = view.queries[kv * g:(kv + 1) * g].float().reshape(-1, k.shape[-1])
            q_hi, q_lo = q.amax(dim=0), q.amin(dim=0)
            k_hi, k_lo = _envelopes(k, self.block)                                     # (B, D)
            crit = torch.stack([k_hi @ q_hi, k_hi @ q_lo, k_lo @ q_hi, k_lo @ q_lo]).amax(dim=0)
            crit = crit.softmax(dim=0)                                                 # (B,)
            tok = crit.repeat_interleave(self.block)[: idx.numel()]
            pos = view.positions[kv, idx]
            prev = below.get(kv)
            if prev is not None:
                old_pos, old_val = prev
                where = torch.searchsorted(old_pos, pos).clamp(max=old_pos.numel() - 1)
                hit = old_pos[where] == pos
                tok = torch.where(hit, self.carry * old_val[where] + (1 - self.carry) * tok, tok)
            below[kv] = (pos.clone(), tok.clone())
            score[kv, idx] = tok
        score = score.masked_fill(view.positions >= int(view.query_positions.min()), float("inf"))
        score = score.masked_fill(view.positions < self.n_sink, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
