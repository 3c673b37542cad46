"""InfiniPot (Kim et al., EMNLP 2024, arXiv 2410.01518, "Infinite Context Processing on Memory-Constrained LLMs"):
Continual Context Distillation. The context streams into a fixed-size pot; each time the pot is full, it is
distilled back to its compressed size by the Catalyst Prompt's attention (CaP: the queries of a prompt appended
after the pot attend to the pot's tokens; their attention, summed, ranks them), and the next tokens fill it again,
so every chunk competes with what the earlier distillations left. On one view the catalyst prompt's own queries
are not there: the stand-in catalyst is the last ``catalyst`` prompt queries before each distillation point (the
queries that closed the pot, each seeing the whole pot); the final distillation uses the prompt's last queries.
The pot holds ``pot_factor`` times the budget (the paper's 4K pot distilled to 2K: 2), the distilled size is the
budget; attention is causal, summed over the catalyst queries and the KV head's query heads, the kept tokens ranked
afresh at each distillation (no pooling). Novelty under Compression (NuC: the model's own surprise at a token, which
needs the LM head) is not on the interface and is left out; the positions reset (CR-RoPE) change no selection here.
Without queries: recency.
Settings: pa_infinipot; pa_infinipot?pot_factor=1.5; pa_infinipot?pot_factor=4; pa_infinipot?catalyst=32
"""

from typing import ClassVar

import torch

from harness.api import EvictionMethod, Keep, LayerView


class InfiniPot(EvictionMethod):
    name = "pa_infinipot"
    paper: ClassVar[str] = "InfiniPot"
    query_window = 1 << 20  # every prompt query: the catalyst of each distillation is the queries closing it
    pot_factor = 2.0
    catalyst = 16

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        g = view.model.group_size
        qpos = view.query_positions
        out = []
        for h in range(view.n_kv_heads):
            idx = valid[h].nonzero()[:, 0]
            idx = idx[view.positions[h, idx].argsort()]
            pos = view.positions[h, idx]
            keys = view.keys[h, idx].float()
            q_all = view.queries[h * g:(h + 1) * g].float()  # (g, N_q, D)
            k = min(view.budget, idx.numel())
            pot_size = max(k + 1, int(k * self.pot_factor))
            pot = torch.zeros(0, dtype=torch.long, device=idx.device)  # indices into idx, oldest first
            nxt, n = 0, idx.numel()
            while True:
                take = min(n, nxt + pot_size - pot.numel())
                pot = torch.cat([pot, torch.arange(nxt, take, device=idx.device)])
                nxt = take
                if pot.numel() <= k:
                    break  # the stream ended inside the budget
                # distil: the catalyst is the last queries up to the pot's newest token
                rows = (qpos <= pos[pot[-1]]).nonzero()[:, 0][-self.catalyst:]
                logits = torch.matmul(q_all[:, rows], keys[pot].T) * view.model.scale  # (g, c, P)
                causal = pos[pot][None, None, :] > qpos[rows][None, :, None]
                score = logits.masked_fill(causal, float("-inf")).softmax(dim=-1).nan_to_num(0.0).sum(dim=(0, 1))
                pot = pot[score.topk(k).indices.sort().values]
                if nxt == n:
                    break
            out.append(idx[pot].sort().values)
        return Keep(tuple(out))
