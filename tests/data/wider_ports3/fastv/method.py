"""Early verdict: at one shallow layer every token is judged by the mean attention it draws from the whole prompt;
the layers after it keep that layer's verdict."""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class EarlyVerdict(EvictionMethod):
    name = "early_verdict"
    query_window = 1 << 20
    judge_layer = 2

    def setup(self, model):
        self.verdict = {}

    def select(self, view: LayerView) -> Keep:
        if view.layer > self.judge_layer and "v" in self.verdict:
            return self.verdict["v"]
        probs = view.attention()
        drawn = probs.mean(dim=1)
        drawn = view.group(drawn, "mean")
        choice = Keep.from_topk(drawn, view.budget, view.valid)
        if view.layer == self.judge_layer:
            self.verdict["v"] = choice
        return choice
