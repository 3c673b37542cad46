"""Port of XAttention (Xu et al., 2025, arXiv 2503.16428): block importance from sums along antidiagonals.

XAttention is a sparse *prefill* attention: inside each (query block, key block) tile it sums the attention
scores sampled along antidiagonals with a stride S, a cheap proxy for the tile's mass, and keeps the blocks whose
cumulative share reaches a threshold. Ported here to eviction on board A: the question tokens form the query
side, the context is cut into key blocks of ``block`` tokens, each block is scored by the strided antidiagonal
sum of its softmax scores (the paper sums the pre-softmax products over the antidiagonals and then softmaxes
per block row; here the softmax comes first so the scores are comparable across blocks), blocks are taken in
order of importance until the budget is spent (the threshold is replaced by the budget), and a partial last
block is filled by plain attention. Block size and stride are the porter's choice (16 and 4)."""

import torch

from harness import EvictionMethod, Keep, LayerView


class XAttentionPort(EvictionMethod):
    name = "xattention_port"
    question_queries = True
    block = 16
    stride = 4

    def select(self, view: LayerView) -> Keep:
        T = view.n_tokens
        if view.queries is None or view.budget >= T:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        att = view.attention()                                   # (Hq, N, T)
        n = att.shape[1]
        qi = torch.arange(n)[:, None]
        kj = torch.arange(T)[None, :]
        diag = ((qi + kj) % self.stride == self.stride - 1).to(att.dtype)   # antidiagonal sampling pattern
        sampled = view.group((att * diag).sum(1), "sum")         # (H_kv, T)
        nb = -(-T // self.block)
        padded = torch.nn.functional.pad(sampled, (0, nb * self.block - T))
        block_mass = padded.reshape(-1, nb, self.block).sum(-1)  # (H_kv, blocks)
        plain = view.group(att.sum(1), "sum")
        score = block_mass.repeat_interleave(self.block, dim=1)[:, :T] * 1e3 + plain
        return Keep.from_topk(score, view.budget, view.valid)
