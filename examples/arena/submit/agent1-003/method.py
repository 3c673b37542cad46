"""Foresight-C: decode-time eviction that extrapolates each token's attention trend a few steps ahead.

A reasoning trace keeps coming back to some tokens and drifts away from others. For every cached token the
method keeps an exponential moving average of the attention it receives from recent decode queries and an
EMA of its change between calls; the score is the level plus ``horizon`` times the trend, so a token whose
attention is rising is kept before it becomes a heavy hitter, and a fading one is dropped early.
Training-free; sinks and a recent window are always kept.
"""


from harness import EvictionMethod, Keep, LayerView


class ForesightC(EvictionMethod):
    name = "foresight_c"
    query_window = 16
    n_sink = 4
    n_recent = 64
    decay = 0.8  # EMA factor for level and trend
    horizon = 4.0  # how many calls ahead the trend is extrapolated

    def select(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        level = view.recall("level")
        trend = view.recall("trend")
        if view.queries is not None:
            now = view.group(view.attention().mean(dim=1), "mean")  # (H_kv, T)
            new_level = self.decay * level + (1 - self.decay) * now
            trend = self.decay * trend + (1 - self.decay) * (new_level - level)
            level = new_level
        view.remember("level", level)
        view.remember("trend", trend)
        score = level + self.horizon * trend
        score[:, : self.n_sink] = float("inf")
        score[:, -self.n_recent :] = float("inf")
        return Keep.from_topk(score, view.budget, valid)
