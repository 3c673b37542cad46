"""A port of ChunkKV (Liu et al., 2025, "ChunkKV: Semantic-Preserving KV Cache Compression for Efficient
Long-Context LLM Inference", arXiv 2502.00299) to board B_online. This is a port, not a new method.

ChunkKV keeps contiguous chunks of tokens rather than single tokens: the observation window's attention is summed
per chunk and the best chunks are kept whole, so a kept fact keeps its neighbours. As in the paper: chunk size 10,
chunk score = the observation window's attention summed over the chunk's tokens (after summing over the window rows
and averaging over each KV head's query heads), top chunks kept whole, the window itself always kept.

Deviations from the paper: (1) board B is query-agnostic, so the observation window is the closing 32 context rows
rather than the question; (2) ChunkKV's layer-wise index reuse (sharing kept indices between adjacent layers) is not
ported, every layer selects for itself; (3) when the budget ends inside a chunk, the remaining slots go to the best
single tokens of the next-best chunk (the paper rounds to whole chunks).
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class ChunkKVPort(EvictionMethod):
    name = "chunkkv_port"
    query_window = 32
    chunk = 10

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        token = view.group(view.attention(reduce="sum"), "mean")  # (H_kv, T)
        t = token.shape[-1]
        n_chunks = (t + self.chunk - 1) // self.chunk
        padded = torch.zeros(token.shape[0], n_chunks * self.chunk, device=token.device)
        padded[:, :t] = token
        chunk_score = padded.view(token.shape[0], n_chunks, self.chunk).sum(dim=-1)  # (H_kv, n_chunks)
        # each token inherits its chunk's score; the token's own score breaks ties inside the last chunk taken
        inherited = chunk_score.repeat_interleave(self.chunk, dim=-1)[:, :t]
        score = inherited + 1e-4 * token
        window = view.positions >= view.query_positions.min()
        return Keep.from_topk(score.masked_fill(window, float("inf")), view.budget, view.valid)
