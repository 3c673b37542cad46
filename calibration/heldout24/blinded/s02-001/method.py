"""Lookahead probes (board A, question-aware prefill).

The question rows say what the model is about to look for, but they sit where the question sits. The answer
will be read from positions that come after the prompt. This method moves the question rows to where the
answer tokens will be: each row is brought back to its un-rotated form and re-rotated at a few positions just
past the prompt, and those probes are what rank the context. A recent tail is always kept.
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, Keep, LayerView


def _log_softmax_rows(logits: torch.Tensor) -> torch.Tensor:
    return logits - torch.logsumexp(logits, dim=-1, keepdim=True)


class LookaheadProbes(EvictionMethod):
    name = "lookahead_probes"
    query_window = 8
    question_queries = True
    horizon = 12          # probe positions placed past the prompt
    stride = 3            # spacing of the probe positions
    tail = 48             # newest tokens kept unconditionally
    smooth = 5

    def _probes(self, view: LayerView) -> torch.Tensor:
        q = view.queries.float()                                   # (H_q, R, D)
        qpos = view.query_positions.to(q.device)
        bare = view.rotate(q, -qpos)                               # un-rotated rows
        last = int(view.positions.max()) + 1
        ahead = last + self.stride * torch.arange(self.horizon, device=q.device)
        # every row, placed at every probe position: (H_q, R * horizon, D)
        rows = bare.repeat_interleave(self.horizon, dim=1)
        where = ahead.repeat(bare.shape[1])
        return view.rotate(rows, where)

    def _rank(self, view: LayerView) -> torch.Tensor:
        probes = self._probes(view)
        g = view.model.group_size
        h_kv, t, d = view.keys.shape
        k = view.keys.float()
        scores = torch.empty(h_kv, t, device=k.device)
        for h in range(h_kv):
            p = probes[h * g:(h + 1) * g]                          # (g, M, D)
            kk = k[h].unsqueeze(0).expand(g, t, d)
            logits = torch.baddbmm(torch.zeros(g, p.shape[1], t, device=k.device), p, kk.transpose(1, 2),
                                   beta=0.0, alpha=view.model.scale)
            if view.valid is not None:
                logits = logits.masked_fill(~view.valid[h].view(1, 1, t), float("-inf"))
            logp = _log_softmax_rows(logits)
            # log of the mean probability over probes, then the loudest head of the group
            scores[h] = (torch.logsumexp(logp, dim=1) - torch.log(torch.tensor(float(p.shape[1])))).amax(0)
        pad = self.smooth // 2
        padded = torch.nn.functional.pad(scores[:, None], (pad, pad), value=float("-inf"))
        return padded.unfold(-1, self.smooth, 1).amax(-1)[:, 0]

    def select(self, view: LayerView) -> Keep:
        newest = view.positions.float()
        if view.queries is None or view.budget >= view.n_tokens or view.budget <= self.tail:
            return Keep.from_topk(newest, view.budget, view.valid)
        score = self._rank(view)
        top = view.positions.max(dim=-1, keepdim=True).values
        score = score.masked_fill(view.positions > top - self.tail, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
