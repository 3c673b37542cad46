"""Two-hop question attention (board A).

Builds on SnapKV (Li et al., 2024, arXiv 2404.14469): the question's attention over the context ranks the tokens.
A question often points at a token that only makes sense through another one (a variable assigned from another
variable, a key whose value sits a sentence earlier); the first hop finds the former, not the latter. Here the
tokens the question attends to most (the hubs: up to 64 per KV head, a quarter of the budget at most) are asked
in turn, with their own prompt queries, what *they* attend to, and that second-hop attention, weighted by the
hub's first-hop weight, is added to the score with weight 0.5. The question is taken as the last 32 prompt
queries; scores are max-pooled over 3 tokens; the last 32 tokens and the first 4 (StreamingLLM, Xiao et al.,
2023, arXiv 2309.17453) are kept. All prompt queries are requested, but only the hubs' rows are used.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class TwoHopAttention(EvictionMethod):
    name = "two_hop_attention"
    query_window = 1 << 20       # every prompt query: a hub's own query is needed
    question_queries = True
    question_rows = 32
    max_hubs = 64
    hop_weight = 0.5
    n_sink = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        valid = view.valid_mask()
        qpos = view.query_positions
        rows = min(self.question_rows, qpos.numel())
        question = view.queries[:, -rows:]
        first = view.attention(question)                                      # (H_q, rows, T), no causal mask
        last_pos = int(qpos[-rows:].min())
        future = view.positions > last_pos                                    # the question itself
        first = view.group(first.mean(dim=1), "mean").masked_fill(future | ~valid, 0.0)   # (H_kv, T)
        first = first / first.sum(dim=-1, keepdim=True).clamp_min(1e-12)
        n_hubs = max(1, min(self.max_hubs, view.budget // 4))
        second = torch.zeros_like(first)
        for kv in range(view.n_kv_heads):
            w, hub = first[kv].topk(min(n_hubs, int(valid[kv].sum())))
            hub_pos = view.positions[kv, hub]
            at = torch.searchsorted(qpos, hub_pos).clamp(max=qpos.numel() - 1)
            have = qpos[at] == hub_pos
            if not bool(have.any()):
                continue
            hq = view.queries[kv * g:(kv + 1) * g, at[have]].float()             # (g, h, D)
            logits = hq @ view.keys[kv].float().t() * view.model.scale            # (g, h, T)
            hide = (view.positions[kv][None, :] > hub_pos[have][:, None]) | ~valid[kv][None, :]
            probs = logits.masked_fill(hide[None], float("-inf")).softmax(dim=-1).nan_to_num(0.0)
            second[kv] = (probs.mean(dim=0) * w[have][:, None]).sum(dim=0)
        score = first + self.hop_weight * second
        score = F.max_pool1d(score[:, None], 3, stride=1, padding=1)[:, 0]
        tail_from = int(qpos.max()) - self.question_rows + 1
        score = score.masked_fill((view.positions >= tail_from) | (view.positions < self.n_sink), float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
