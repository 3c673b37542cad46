"""Lantern: a single look from the end of the prompt.

After prefill, the very last prompt position (the end of the question) casts one look over the cache. Every KV head
keeps what that look lights up, on top of a fixed frame: the opening tokens and the closing stretch of the prompt,
which every answer reads. The look is computed here directly from the keys (one row per query head), so nothing of
size N x T is ever held.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class Lantern(EvictionMethod):
    name = "lantern"
    query_window = 1
    question_queries = True

    opening = 4      # tokens at the very start that stay lit
    closing = 48     # closing stretch of the prompt that stays lit

    def _glow(self, view: LayerView) -> torch.Tensor:
        # the last prompt row of every query head, against every key of its KV head
        beam = view.queries[:, -1, :].float()                                 # (H_q, D)
        h_kv, g = view.n_kv_heads, view.model.group_size
        beam = beam.view(h_kv, g, -1)
        logits = torch.einsum("hgd,htd->hgt", beam, view.keys.float()) * view.model.scale
        if view.valid is not None:
            logits = logits.masked_fill(~view.valid[:, None, :], float("-inf"))
        light = (logits - torch.logsumexp(logits, dim=-1, keepdim=True)).exp()  # (H_kv, g, T)
        return light.amax(dim=1)                                              # brightest reader of the group

    def select(self, view: LayerView) -> Keep:
        t = view.n_tokens
        if view.budget >= t:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        frame = self.opening + self.closing
        spare = view.budget - frame
        if spare <= 0 or view.queries is None:
            # the frame alone fills the lantern: newest tokens first
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        glow = self._glow(view)
        ahead = torch.arange(t, device=glow.device)
        fixed = (ahead < self.opening) | (ahead >= t - self.closing)
        glow = glow.masked_fill(fixed[None, :], float("inf"))
        return Keep.from_topk(glow, view.budget, view.valid)
