"""Root Tally: decode-time eviction by attention received, normalised by the square root of how often a token
could have been seen.

H2O sums the attention each token receives (early tokens win because more queries saw them); kvpress's
observed-attention variant divides by the number of queries that saw the token (late tokens win on a few lucky
hits). This method divides by the square root of that count: a middle ground between the sum and the mean. The
first 4 tokens (StreamingLLM's sinks) and the newest quarter of the budget are always kept.
"""

import math

import torch

from harness import EvictionMethod, Keep, LayerView


class RootTally(EvictionMethod):
    name = "root_tally"
    query_window = 512          # at least one block of decode queries since the previous call
    sinks = 4
    recent_share = 0.25

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        tally = view.recall("tally")
        seen = view.recall("seen")
        if view.queries is not None and view.query_positions is not None:
            last = view.state.get("last_q", -1)
            fresh = view.query_positions > last
            if bool(fresh.any()):
                q = view.queries[:, fresh]
                qpos = view.query_positions[fresh].to(view.positions.device)
                got = self._causal_sum(view, q, qpos)
                tally = tally + view.group(got, "sum")
                seen = seen + (qpos[None, None, :] >= view.positions[:, :, None]).sum(-1).float()
                view.state["last_q"] = int(qpos.max())
        view.remember("tally", tally)
        view.remember("seen", seen)
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        score = tally / seen.clamp_min(1.0).sqrt()
        score = score.masked_fill(view.positions < self.sinks, math.inf)
        n_recent = max(1, int(view.budget * self.recent_share))
        counts = valid.sum(dim=1)
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            score[h, max(0, n - n_recent):n] = math.inf
        return Keep.from_topk(score, view.budget, view.valid)

    @staticmethod
    def _causal_sum(view: LayerView, q: torch.Tensor, qpos: torch.Tensor) -> torch.Tensor:
        """(H_q, T): attention of the fresh queries, each over the keys at or before its own position."""
        g = view.model.group_size
        hkv, t, d = view.keys.shape
        out = torch.zeros(q.shape[0], t, device=view.keys.device)
        k = view.keys.float()
        hide_pad = ~view.valid_mask()
        for s in range(0, q.shape[1], 64):
            qc = q[:, s:s + 64].float()
            c = qc.shape[1]
            logits = torch.einsum("hgcd,htd->hgct", qc.reshape(hkv, g, c, d), k) * view.model.scale
            future = view.positions[:, None, None, :] > qpos[s:s + c][None, None, :, None]
            logits = logits.masked_fill(future | hide_pad[:, None, None, :], float("-inf"))
            p = logits.softmax(-1).nan_to_num(0.0)
            out += p.sum(dim=2).reshape(hkv * g, t)
        return out
