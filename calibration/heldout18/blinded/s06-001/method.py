"""A port of ChunkKV (Liu et al., 2025, arXiv 2502.00299), "ChunkKV: Semantic-Preserving KV Cache Compression for
Efficient Long-Context LLM Inference", to the query-agnostic board B_online. This is a port, not a new method.

ChunkKV scores fixed-size chunks of contiguous tokens by the attention an observation window pays them and keeps whole
chunks, so that the kept context stays readable. As ported here: observation window = the closing 32 positions of the
context (no question on board B), attention summed over the window and the KV head's query heads, chunks of 10
tokens, chunk score = sum of its tokens' scores, whole chunks kept in score order until the budget is full (the last
chosen chunk trimmed to fit); the window is always kept.

Deviations from the paper: (1) the paper's layer-wise index reuse (neighbouring layers share the chosen indices) is
not ported; every layer selects on its own. (2) Selection is per KV head, not shared across the layer. (3) The window
holds the end of the context rather than the question, as the board requires.
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
        token_score = view.group(view.attention(reduce="sum"), "sum")
        window_start = view.query_positions.min()
        valid = view.valid_mask()
        kept = []
        for h in range(view.n_kv_heads):
            real = valid[h].nonzero().squeeze(-1)
            window = real[view.positions[h, real] >= window_start]
            body = real[view.positions[h, real] < window_start]
            room = max(0, view.budget - window.numel())
            if room == 0 or body.numel() == 0:
                kept.append(window[-view.budget:] if view.budget > 0 else window[:0])
                continue
            chunks = torch.split(body, self.chunk)
            chunk_score = torch.stack([token_score[h, c].sum() for c in chunks])
            picked = []
            for i in chunk_score.argsort(descending=True).tolist():
                if room <= 0:
                    break
                c = chunks[i][:room]
                picked.append(c)
                room -= c.numel()
            kept.append(torch.cat(picked + [window]).sort().values)
        return Keep(tuple(kept))
