"""Delayed-decision eviction after DMS (board C), a training-free port.

Source: Dynamic Memory Sparsification (DMS), Łańcucki et al., "Inference-Time Hyper-Scaling with KV Cache
Compression", NeurIPS 2025, arXiv 2506.05345. Inference side only, in the training-free form of NVIDIA kvpress's
DMSPress (a scorer plus a threshold plus a protected sliding window).

What DMS does at inference: every new token gets an eviction decision, but the eviction is *delayed*: the token
stays readable for a sliding window of w steps and is dropped only once it leaves the window. What we port:
- the delay: a token is never evicted while it is among the newest ``delay`` positions (w = 32 here, scaled down
  from the paper's windows for the 135M model's 128/256-token caps);
- the decision, taken once per token and then frozen: DMS predicts it with a trained gate; we have no trained
  gate, so (deviation, as kvpress) the decision score is the attention the token received from the queries that
  arrived while it was inside its delay window, averaged over the KV head's query heads and expressed relative to
  a uniform share (attention x number of visible keys); tokens scoring below ``threshold`` (0.6 of uniform) are
  marked for eviction and go as soon as they leave the window;
- deviation forced by the board's hard cap: the harness asks once per block of steps, not every step, and the
  cap must hold, so if the unmarked tokens still exceed the budget, the lowest-scored decided tokens go too; the
  first 4 tokens are kept (sinks; DMS keeps them through its trained gate).
At prefill (a prompt that alone fills the cap) tokens without in-window queries are decided by the mean attention
of the available prompt queries. Outside board C it keeps the most recent tokens.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class DelayedDecisionDMS(EvictionMethod):
    name = "delayed_decision_dms"
    query_window = 64
    delay = 32
    threshold = 0.6
    n_sink = 4

    def _relative_attention(self, view: LayerView) -> torch.Tensor:
        """(H_kv, N, T) causal attention of the view's queries, mean over the group, times the number of keys each
        query could see (1.0 = a uniform share)."""
        attn = view.attention()                                               # (H_q, N, T), causal
        h_kv, t = view.n_kv_heads, view.n_tokens
        attn = attn.reshape(h_kv, view.model.group_size, attn.shape[1], t).mean(dim=1)
        visible = (view.positions[:, None, :] <= view.query_positions[None, :, None]) & view.valid_mask()[:, None, :]
        return attn * visible.sum(dim=-1, keepdim=True).float()

    def select(self, view: LayerView) -> Keep:
        if view.board != "C" or view.queries is None or view.query_positions is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        qpos = view.query_positions
        rel = self._relative_attention(view)                                  # (H_kv, N, T)
        seen = view.state.get("dms_seen", -1)
        fresh = (qpos > seen)[None, :, None]
        pos = view.positions[:, None, :]
        in_window = (qpos[None, :, None] > pos) & (qpos[None, :, None] <= pos + self.delay) & fresh
        total = view.recall("dms_sum") + (rel * in_window).sum(dim=1)
        count = view.recall("dms_cnt") + in_window.sum(dim=1).float()
        view.remember("dms_sum", total)
        view.remember("dms_cnt", count)
        view.state["dms_seen"] = int(qpos.max())

        newest = int(qpos.max())
        decided = (view.positions + self.delay < newest) & valid
        fallback = rel.mean(dim=1)                                            # decided tokens no window query saw
        score = torch.where(count > 0, total / count.clamp_min(1.0), fallback)
        sink = view.positions < self.n_sink
        marked = decided & (score < self.threshold) & ~sink
        ranked = score.masked_fill(~decided, float("inf")).masked_fill(sink, float("inf"))
        ranked = ranked.masked_fill(marked, float("-inf"))
        allowed = (valid & ~marked).sum(dim=1)
        k = torch.clamp(allowed, max=view.budget)
        return Keep.from_topk(ranked, k, view.valid)

    def on_decode(self, view: LayerView) -> Keep:
        return self.select(view)
