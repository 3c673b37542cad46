"""Sketch-screened retention (board A).

Reading every key at full precision to rank it is the expensive part of query-aware eviction on long contexts.
We rank tokens from a one-bit sketch of the keys: per KV head and channel, every run of 32 consecutive tokens
shares a low and a high level, and each key coordinate is stored as the bit saying which of the two it is
closer to. The question rows (the question span plus the closing 16 rows) read the sketch with the model's
softmax scale; each token's score is the attention it receives there, summed over the rows and the KV head's
query heads. The closing 16 prompt rows and four opening tokens are always kept.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def _one_bit(keys: torch.Tensor, run: int) -> torch.Tensor:
    """Keys (H, T, D) rebuilt from one bit per coordinate with per-(run, channel) low/high levels."""
    h, t, d = keys.shape
    pad = (-t) % run
    k = torch.cat([keys, keys[:, -1:].expand(h, pad, d)], 1) if pad else keys
    k = k.reshape(h, -1, run, d)
    lo = k.amin(dim=2, keepdim=True)
    hi = k.amax(dim=2, keepdim=True)
    bit = (k - lo) * 2 >= (hi - lo)
    rebuilt = torch.where(bit, hi, lo)
    return rebuilt.reshape(h, -1, d)[:, :t]


class SketchScreen(EvictionMethod):
    name = "sketch_screen"
    query_window = 16
    question_queries = True
    run = 32
    opening = 4
    closing = 16

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None or view.valid is not None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        sketch = _one_bit(view.keys.float(), self.run)
        q = view.queries.float()
        qpos = view.query_positions
        h_kv, t, d = sketch.shape
        g = view.model.group_size
        logits = torch.einsum("hgnd,htd->hgnt", q.view(h_kv, g, -1, d), sketch) * view.model.scale
        hidden = view.positions[:, None, None, :] > qpos[None, None, :, None]
        probs = logits.masked_fill(hidden, float("-inf")).softmax(dim=-1).nan_to_num(0.0)
        score = probs.sum(dim=(1, 2))  # (H_kv, T)
        pinned = (view.positions > view.positions.max() - self.closing) | (view.positions < self.opening)
        score = torch.where(pinned, 1e9 + view.positions.float(), score)  # newest first if they alone overflow
        return Keep.from_topk(score, view.budget)
