"""Episode-medoid proxy readers (board B_online, query-agnostic prefill).

On board B the questions are unknown at compression time, and the closing window is a poor proxy for them: it only
reads what the end of the context is about. A long context is usually several topics in a row, and a question is
about one of them. We look for the topics and let each topic's most typical passage read the context on its
behalf.

1. Passages: the context is cut into blocks of 64 rows; a block is described by the mean of its unit-normalised keys
   in this layer.
2. Topics: spherical k-means over the block descriptors (4 topics, 8 iterations, seeded from evenly spaced
   blocks); each topic's reader is its medoid block, the block closest to the topic centre.
3. Reading: the reader block's own queries (we ask for every prompt row) attend over the whole context, not only
   what precedes them, as if the passage were read again after the context; attention summed over the reader's rows,
   averaged over the query heads of the KV head, average-pooled over 5 tokens.
4. Budget: the closing 32 rows and four opening tokens are kept; the rest is shared equally between topics, each
   taking its best tokens in turn; leftovers go to the best tokens by the normalised maximum over topics.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class EpisodeMedoidReaders(EvictionMethod):
    name = "episode_medoid_readers"
    query_window = 1 << 20
    block = 64
    topics = 4
    iters = 8
    tail = 32
    opening = 4

    def _readers(self, desc: torch.Tensor) -> list[int]:
        n = desc.shape[0]
        k = min(self.topics, n)
        cent = desc[torch.linspace(0, n - 1, k).round().long()].clone()
        for _ in range(self.iters):
            assign = (desc @ cent.T).argmax(-1)
            for c in range(k):
                members = desc[assign == c]
                if members.numel():
                    cent[c] = F.normalize(members.mean(0), dim=-1)
        assign = (desc @ cent.T).argmax(-1)
        readers = []
        for c in range(k):
            members = torch.nonzero(assign == c).flatten()
            if members.numel():
                readers.append(int(members[(desc[members] @ cent[c]).argmax()]))
        return readers

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        qpos = view.query_positions
        n_rows = qpos.numel()
        n_blocks = max(1, n_rows // self.block)
        valid = view.valid_mask()
        g = view.model.group_size
        picks = []
        for h in range(view.n_kv_heads):
            n = int(valid[h].sum())
            pos = view.positions[h, :n]
            kn = F.normalize(view.keys[h, :n].float(), dim=-1)
            # block descriptors over the rows' own positions (prefill: row i is token i)
            row_tok = torch.searchsorted(pos, qpos).clamp(max=n - 1)
            desc = torch.stack([kn[row_tok[b * self.block:(b + 1) * self.block]].mean(0) for b in range(n_blocks)])
            desc = F.normalize(desc, dim=-1)
            per_topic = []
            for b in self._readers(desc):
                rows = slice(b * self.block, min(n_rows, (b + 1) * self.block))
                q = view.queries[h * g:(h + 1) * g, rows].float()
                attn = (torch.einsum("gnd,td->gnt", q, view.keys[h, :n].float()) * view.model.scale).softmax(-1)
                s = attn.sum(1).mean(0)
                s = F.avg_pool1d(s[None, None], 5, stride=1, padding=2, count_include_pad=False)[0, 0]
                per_topic.append(s / s.max().clamp_min(1e-12))
            keep = (pos < self.opening) | (pos >= int(qpos.max()) - self.tail + 1)
            left = view.budget - int(keep.sum())
            share = left // max(1, len(per_topic))
            for s in per_topic:
                take = min(share, int((~keep).sum()))
                if take > 0:
                    keep[s.masked_fill(keep, float("-inf")).topk(take).indices] = True
            left = view.budget - int(keep.sum())
            if left > 0:
                best = torch.stack(per_topic).amax(0).masked_fill(keep, float("-inf"))
                keep[best.topk(min(left, int((~keep).sum()))).indices] = True
            idx = torch.nonzero(keep).flatten()
            picks.append(idx[-view.budget:] if idx.numel() > view.budget else idx)
        return Keep(tuple(picks))
