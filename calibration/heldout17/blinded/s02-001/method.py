"""Two-window agreement (board B_online, query-agnostic prefill).

SnapKV-style scoring (Li et al., 2024, arXiv 2404.14469) reads the attention of the context's closing rows. On board
B the questions come later, so the closing rows are only a guess at what will be asked. We hedge that guess by asking
two windows: the closing 32 rows (near) and the 64 rows before them (far). Each window's attention is summed over its
rows, averaged over the KV head's query heads, normalised to a distribution over the tokens, and smoothed with a
max-pool of width 5. A token's score is the geometric mean of the two distributions (plus a small floor), so a token
only ranks high when both windows want it. The closing 32 rows are always kept; this is SnapKV's window rule, credited.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class TwoWindowAgreement(EvictionMethod):
    name = "two_window_agreement"
    near = 32
    far = 64
    query_window = near + far
    kernel = 5
    floor = 1e-4

    def _window_mass(self, view: LayerView, attn: torch.Tensor) -> torch.Tensor:
        mass = view.group(attn.sum(dim=1), "mean")
        mass = F.max_pool1d(mass[:, None], self.kernel, stride=1, padding=self.kernel // 2)[:, 0]
        return mass / mass.sum(dim=-1, keepdim=True).clamp_min(1e-9)

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.attention()  # (H_q, N, T), causal
        n = attn.shape[1]
        split = max(1, n - self.near)
        near = self._window_mass(view, attn[:, split:])
        far = self._window_mass(view, attn[:, :split]) if split < n else near
        score = ((near + self.floor) * (far + self.floor)).sqrt()
        closing = view.positions >= view.query_positions[split:].min()
        return Keep.from_topk(score.masked_fill(closing, float("inf")), view.budget, view.valid)
