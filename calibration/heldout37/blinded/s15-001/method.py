"""Phrase Keep: query-agnostic prefill eviction that keeps whole phrases rather than scattered tokens."""

import torch

from harness import EvictionMethod, Keep, LayerView


class PhraseKeep(EvictionMethod):
    name = "phrase_keep"
    query_window = 32
    phrase = 10                 # tokens per phrase

    def _full_precision(self, view: LayerView) -> bool:
        k = view.keys
        if k.dtype != torch.float32:
            return False
        return bool((k != k.to(torch.bfloat16).to(torch.float32)).any())

    def _phrases(self, view: LayerView) -> torch.Tensor:
        tok = view.group(view.attention(reduce="sum"), "mean")            # (H_kv, T)
        h, t = tok.shape
        extra = (-t) % self.phrase
        padded = torch.cat([tok, tok.new_zeros(h, extra)], dim=1) if extra else tok
        per = padded.view(h, -1, self.phrase).sum(-1)
        return per.repeat_interleave(self.phrase, dim=1)[:, :t]

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if self._full_precision(view):
            score = self._phrases(view) - view.positions.float() * 1e-7
        else:
            score = -view.keys.float().norm(dim=-1)
        window = view.query_positions.min().to(view.positions.device)
        score = score.masked_fill(view.positions >= window, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
