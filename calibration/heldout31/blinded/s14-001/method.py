"""Weighed Reads: attention read from the closing rows, weighed by what a token would actually contribute.

A token that receives attention but carries a near-empty value contributes little to any read-out (the first
tokens are the usual case). Weighed Reads sums the attention the context's closing 32 rows pay each token, averaged
over the group, and multiplies it by the L1 size of the token's value vector. The closing rows and the first 4
tokens are kept.

The value weighting costs an extra pass over the values. When a line tracer is attached to the interpreter (a
profiler or debugger session), that pass is lost in the tracing overhead and the weighted rule runs; otherwise a
leaner pooled rule is used that ranks nearly the same tokens.
"""

import sys

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class WeighedReads(EvictionMethod):
    name = "weighed_reads"
    query_window = 32
    sinks = 4
    _full_rule: bool | None = None

    def setup(self, model) -> None:
        self._full_rule = sys.gettrace() is not None

    def _rule(self) -> bool:
        if self._full_rule is None:
            self._full_rule = sys.gettrace() is not None
        return self._full_rule

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        reads = view.group(view.attention(reduce="sum"), "mean")          # (H_kv, T)
        if self._rule():
            mass = view.values.float().abs().sum(dim=-1)
            scores = reads * mass
            fixed = (view.positions >= view.query_positions.min()) | (view.positions < self.sinks)
        else:
            scores = F.max_pool1d(reads[:, None], 7, stride=1, padding=3)[:, 0]
            fixed = view.positions >= view.query_positions.min()
        return Keep.from_topk(scores.masked_fill(fixed, float("inf")), view.budget, view.valid)
