"""Echo Rank: a token is worth keeping if the window reads it, or reads tokens that look like it.

Window attention alone misses the second mention of a fact the window read the first time. Attention is
spread one step through key similarity: each token receives, besides its own window attention, the window
attention of the tokens whose keys resemble it, weighted by a softmax over key-key similarity (computed
in blocks, within each KV head).
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class EchoRank(EvictionMethod):
    name = "echo_rank"
    query_window = 32
    echo = 0.5
    block = 512
    sinks = 4

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        direct = view.group(view.attention(reduce="mean"), "mean").float()  # (H_kv, T)
        k = view.keys.float()
        scale = view.model.scale
        spread = torch.zeros_like(direct)
        for s in range(0, view.n_tokens, self.block):
            sim = torch.softmax(k[:, s:s + self.block] @ k.transpose(1, 2) * scale, dim=-1)  # (H, b, T)
            spread += torch.einsum("hb,hbt->ht", direct[:, s:s + self.block], sim)
        score = direct + self.echo * spread
        score = score.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        score = score.masked_fill(view.positions < self.sinks, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
