"""Terraced retention (board A).

Depth changes what a layer needs. Shallow layers still mix local context and need a broad cache; deep layers
read almost only what the question points at. Instead of a smooth funnel we cut the network into four terraces
of equal depth, and each terrace holds half the cache of the one above it (the mean over layers is the arena's
budget). Inside a layer the ranking is as sharp as possible: the final prompt token, the one that will emit the
answer, decides alone; its attention (averaged over the KV head's query heads) ranks the context, and the
question span itself is never dropped.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def _terrace_weights(n_layers: int, terraces: int, ratio: float) -> list[float]:
    return [ratio ** min(terraces - 1, (i * terraces) // max(1, n_layers)) for i in range(n_layers)]


class TerracedRetention(EvictionMethod):
    name = "terraced_retention"
    query_window = 1
    question_queries = True
    terraces = 4
    ratio = 0.5

    def layer_budgets(self, mean_budget, n_tokens, model):
        layers = model.attention_layers
        w = _terrace_weights(len(layers), self.terraces, self.ratio)
        total = mean_budget * len(layers)
        raw = [max(1, min(n_tokens, int(total * x / sum(w)))) for x in w]
        spare = total - sum(raw)
        # hand back what clipping at n_tokens freed to the deeper terraces, one token at a time
        i = len(raw) - 1
        while spare > 0 and i >= 0:
            room = n_tokens - raw[i]
            give = min(room, spare)
            raw[i] += give
            spare -= give
            i -= 1
        while sum(raw) > total:  # tiny budgets: the floor of one token per layer overshot
            j = max(range(len(raw)), key=raw.__getitem__)
            raw[j] -= 1
        return raw

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        qpos = view.query_positions
        last = int(qpos.argmax())
        q = view.queries[:, last:last + 1]  # the emitting token only
        logits = torch.einsum("hnd,htd->hnt", q.float(),
                              view.keys.float().repeat_interleave(view.model.group_size, 0))[:, 0] * view.model.scale
        logits = logits.masked_fill(~valid.repeat_interleave(view.model.group_size, 0), float("-inf"))
        probs = logits.softmax(-1).nan_to_num(0.0)
        score = view.group(probs, "mean")
        span_start = int(qpos.min())
        protect = view.positions >= span_start
        n_protect = protect.sum(1)
        if int(n_protect.max()) * 2 > view.budget:  # question longer than half the layer's share: rank it too
            protect = view.positions >= int(qpos.max()) - view.budget // 4
        score = torch.where(protect, torch.full_like(score, 1e9), score)
        return Keep.from_topk(score, view.budget, valid)
