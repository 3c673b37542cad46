"""Half-Life Hitters: running attention totals per token, a recent quarter of the budget kept."""

from harness import EvictionMethod, Keep, LayerView


class HalfLifeHitters(EvictionMethod):
    name = "half_life_hitters"
    query_window = 4096
    half_life = 256  # decode steps
    recent_share = 0.25

    def select(self, view: LayerView) -> Keep:
        total = view.recall("mass")
        if view.queries is not None:
            last_seen = view.state.get("last_q", -1)
            new = view.query_positions > last_seen
            if bool(new.any()):
                q = view.queries if bool(new.all()) else view.queries[:, new]
                # attention of the new queries, reduced over them as it is computed (causal when all are new)
                mass = view.attention(reduce="sum") if bool(new.all()) else view.attention(q, reduce="sum")
                total = total + view.group(mass, "mean")
                view.state["last_q"] = int(view.query_positions.max())
        view.remember("mass", total)
        scores = total.clone()
        n_real = view.valid_mask().sum(dim=1).tolist()
        keep_recent = int(view.budget * self.recent_share)
        for h, n in enumerate(n_real):
            if keep_recent:
                scores[h, max(0, n - keep_recent):n] = float("inf")
        return Keep.from_topk(scores, view.budget, view.valid)
