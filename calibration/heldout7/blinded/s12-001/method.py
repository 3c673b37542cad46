"""Hierarchical block scouting (board A): the question first scouts a coarse, overlapping summary of the context,
then the scouted evidence is pooled into retention blocks and whole blocks are kept, together with the opening
block and the closing blocks."""

import torch

from harness import EvictionMethod, Keep, LayerView


def _coarse(keys: torch.Tensor, span: int, hop: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(H_kv, T, D) -> coarse summaries (H_kv, M, D) of overlapping spans (length ``span``, every ``hop``), and the
    (M,) end position index of each span."""
    t = keys.shape[1]
    starts = torch.arange(0, max(1, t - span + 1), hop, device=keys.device)
    windows = keys.float().unfold(1, span, hop) if t >= span else keys.float().mean(dim=1, keepdim=True)[..., None]
    summaries = windows.mean(dim=-1)                                     # (H_kv, M, D)
    ends = (starts + span - 1).clamp(max=t - 1)[: summaries.shape[1]]
    return summaries, ends


def _overlap(n_coarse: int, span: int, hop: int, block: int, n_blocks: int, device) -> torch.Tensor:
    """(M, B) 1 where coarse span m overlaps retention block b."""
    s = torch.arange(n_coarse, device=device)[:, None] * hop
    b = torch.arange(n_blocks, device=device)[None, :] * block
    return ((s < b + block) & (s + span > b)).float()


class HierarchicalBlockScout(EvictionMethod):
    name = "hierarchical_block_scout"
    query_window = 32
    question_queries = True
    span = 16          # coarse summary length
    hop = 8            # coarse summary stride (summaries overlap by half)
    block = 32         # retention block
    opening_blocks = 1
    closing_blocks = 2

    def _block_importance(self, view: LayerView, n_blocks: int) -> torch.Tensor:
        g = view.model.group_size
        summ, ends = _coarse(view.keys, self.span, self.hop)                # (H_kv, M, D)
        h_kv, m, d = summ.shape
        q = view.queries.float().reshape(h_kv, -1, d)                       # (H_kv, g*N, D)
        logits = torch.einsum("hnd,hmd->hnm", q, summ) * view.model.scale
        qpos = view.query_positions.repeat(g)
        seen_pos = view.positions[:, ends]                                  # position of each span's last token
        logits = logits.masked_fill(seen_pos[:, None, :] > qpos[None, :, None], float("-inf"))
        p = logits.softmax(dim=-1).nan_to_num(0.0).sum(dim=1)               # (H_kv, M): shared by the group
        return p @ _overlap(m, self.span, self.hop, self.block, n_blocks, p.device)

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        t = view.n_tokens
        n_blocks = (t + self.block - 1) // self.block
        importance = self._block_importance(view, n_blocks)                 # (H_kv, B)
        forced = list(range(min(self.opening_blocks, n_blocks)))
        forced += [b for b in range(n_blocks - 1, max(-1, n_blocks - 1 - self.closing_blocks), -1) if b not in forced]
        out = []
        for h in range(view.n_kv_heads):
            order = forced + [int(b) for b in importance[h].argsort(descending=True) if int(b) not in forced]
            tokens = torch.cat([torch.arange(b * self.block, min(t, (b + 1) * self.block)) for b in order])
            out.append(tokens[: view.budget].sort().values.to(view.keys.device))
        return Keep(tuple(out))
