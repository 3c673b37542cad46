"""Left Lean (board A): the question's attention lands on the answer's tokens, but the words that introduce them
(the key of a key-value pair, the label before a number) are read less. Each token adds half the score of the
token after it, so a hit drags its left neighbour in with it; right neighbours get nothing."""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class LeftLean(EvictionMethod):
    name = "left_lean"
    query_window = 8
    question_queries = True
    lean = 0.5
    sinks = 4

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        base = view.group(view.attention(reduce="sum"), "max")          # (H_kv, T)
        after = F.pad(base[:, 1:], (0, 1))
        after2 = F.pad(base[:, 2:], (0, 2))
        score = base + self.lean * after + 0.25 * self.lean * after2
        score[:, : self.sinks] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
