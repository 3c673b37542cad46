"""Grain Dial: let each head's question attention decide whether it keeps single tokens or whole chunks.

SnapKV keeps single tokens by the question's attention; ChunkKV keeps fixed chunks so that a kept fact keeps its
surroundings. Which one is right depends on the head: when a head's question attention is concentrated (its top
``budget`` tokens already hold most of its mass) single tokens lose nothing, and when it is spread out, chunks keep
the context around what it reads. Per KV head, the share of the free budget given to chunks is one minus that
concentration; the chunks (``chunk`` tokens, scored by their mean attention) are taken first, then single tokens by
attention fill the rest. The question rows and the first four tokens are kept.
Builds on SnapKV (question attention) and ChunkKV (chunk-level selection).
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class GrainDial(EvictionMethod):
    name = "grain_dial"
    query_window = 16
    question_queries = True
    chunk = 8
    n_sink = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        att = view.group(view.attention(reduce="sum"), "mean").masked_fill(~valid, 0.0)
        pinned = ((view.positions < self.n_sink) | (view.positions >= view.query_positions.min())) & valid
        t = view.n_tokens
        n_chunks = -(-t // self.chunk)
        out = []
        for h in range(view.n_kv_heads):
            kept = pinned[h].clone()
            room = view.budget - int(kept.sum())
            if room <= 0:
                idx = torch.nonzero(kept).flatten()
                out.append(idx[-view.budget:])
                continue
            free = att[h].masked_fill(kept | ~valid[h], 0.0)
            total = float(free.sum())
            top = float(free.topk(min(room, t)).values.sum())
            concentration = top / total if total > 0 else 1.0
            chunk_room = int(room * (1.0 - concentration))
            if chunk_room >= self.chunk:
                per_chunk = F.pad(free, (0, n_chunks * self.chunk - t)).view(n_chunks, self.chunk).mean(dim=1)
                for c in per_chunk.argsort(descending=True).tolist():
                    span = torch.arange(c * self.chunk, min(t, (c + 1) * self.chunk))
                    span = span[valid[h][span] & ~kept[span]]
                    if span.numel() == 0 or span.numel() > chunk_room:
                        if chunk_room < self.chunk:
                            break
                        continue
                    kept[span] = True
                    chunk_room -= int(span.numel())
            room = view.budget - int(kept.sum())
            if room > 0:
                rest = att[h].masked_fill(kept | ~valid[h], float("-inf"))
                room = min(room, int((rest > float("-inf")).sum()))
                kept[rest.topk(room).indices] = True
            out.append(torch.nonzero(kept).flatten())
        return Keep(tuple(out))
