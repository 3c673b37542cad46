"""Past the Echo: score the re-reading pass's attention, but discount the part that only follows the copy.

KVzip has the model re-read the context after a "repeat" instruction and keeps the entries that some re-reading
row attends to most. While re-reading token j, much of that attention simply lands on the entry right after token j
(the copy itself), so every entry gets a high score once, whether or not anything beyond the copy needs it. Here
each re-reading row is aligned to the context token it re-reads (the pass's last T rows re-read the T cached entries
in order), attention inside a band of +-``band`` entries around the copy target is counted at a ``copy_weight``
discount, and attention outside the band counts in full. An entry's score is its largest counted attention over the
rows and the query heads of its KV head, as in KVzip. The first four entries are kept.
Builds on KVzip (the re-reading pass and max-attention scoring) and on the copy / induction head picture of
Olsson et al. (2022), which says where the copy attention lands.
"""

import torch

from harness import EvictionMethod, Keep, LayerView
from harness.api import reference_attention


class PastTheEcho(EvictionMethod):
    name = "past_the_echo"
    reconstruction_queries = True
    band = 2
    copy_weight = 0.25
    n_sink = 4
    rows_per_chunk = 128

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        h_kv, t, g = view.n_kv_heads, view.n_tokens, view.model.group_size
        n_rows = int(view.queries.shape[1])
        lead = max(0, n_rows - t)                 # rows before the re-read itself (the instruction)
        index = torch.arange(t)
        best = torch.zeros(h_kv, t)
        for start in range(0, n_rows, self.rows_per_chunk):
            q = view.queries[:, start: start + self.rows_per_chunk]
            c = int(q.shape[1])
            probs = reference_attention(q, view.keys, view.positions, None, g, view.valid,
                                        scale=view.model.scale)                   # (H_q, c, T), not causal
            reread = torch.arange(start, start + c) - lead                         # token each row re-reads
            target = (reread + 1).view(c, 1)
            near = ((index.view(1, t) - target).abs() <= self.band) & (reread.view(c, 1) >= 0)
            weight = torch.where(near, torch.full((c, t), self.copy_weight), torch.ones(c, t))
            counted = (probs * weight).view(h_kv, g * c, t).amax(dim=1)
            best = torch.maximum(best, counted)
        best = best.masked_fill(view.positions < self.n_sink, float("inf"))
        return Keep.from_topk(best, view.budget, view.valid)
