import torch

from harness import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    """Phrase-level retention: keep whole runs of neighbouring tokens, ranked by the run's total demand."""

    name = "phrase_runs"
    query_window = 32
    run_len = 10
    share_every = 2          # pairs of adjacent layers agree on one selection

    def setup(self, model) -> None:
        self._memo = {}

    def _demand(self, view: LayerView) -> torch.Tensor:
        probs = view.attention()                                   # (H_q, W, T)
        d = view.group(probs.sum(dim=1), "mean")                  # (H_kv, T)
        return d

    def _runs(self, d: torch.Tensor) -> torch.Tensor:
        h, t = d.shape
        L = self.run_len
        pad = (-t) % L
        padded = torch.cat([d, d.new_zeros(h, pad)], dim=1)
        run_total = padded.view(h, -1, L).sum(dim=-1)              # (H_kv, T / L)
        spread = run_total.repeat_interleave(L, dim=1)[:, :t]
        # whole runs first, then the strongest tokens of a run that only partly fits
        return spread + 1e-6 * d

    def select(self, view: LayerView) -> Keep:
        t = view.n_tokens
        if view.queries is None or view.budget >= t:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        memo = getattr(self, "_memo", {})
        key = (t, view.budget, view.layer // self.share_every)
        if view.layer % self.share_every == 1 and key in memo:
            return Keep.from_topk(memo[key], view.budget, view.valid)
        score = self._runs(self._demand(view))
        score = score.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        memo = {key: score}
        self._memo = memo
        return Keep.from_topk(score, view.budget, view.valid)
