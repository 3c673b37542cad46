"""A head gate written as one select: heads picked by a test on this prompt's data keep their attention score, the
others positions alone (streaming heads: sinks and a window), ``torch.where(opened[:, None], attention,
positions)``. The training-free port of the head-split rules (DuoAttention, RLKV, PruLong). A condition per token, or
a fixed split of the heads, is no such gate; a module-level count of first tokens is sinks."""

from __future__ import annotations

from reviewbench.evidence.computation.features import computation
from reviewbench.evidence.priorart_evidence import computation_matches

SRC = '''
import torch
from harness import EvictionMethod, Keep, LayerView

SINKS = 4
NEAR = 64


class Split(EvictionMethod):
    name = "split"
    query_window = 32

    def select(self, view: LayerView) -> Keep:
        read = view.group(view.attention(reduce="sum"), "mean")
        newest = view.positions.amax(dim=1, keepdim=True)
        near = (view.positions < SINKS) | (view.positions > newest - NEAR)
        reach = (read * ~near).sum(-1) / read.sum(-1).clamp_min(1e-9)
        COND
        score = torch.where(opened, read, view.positions.float())
        score = score.masked_fill(view.positions < SINKS, float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
'''


def test_heads_opened_by_their_reach_keep_attention_the_rest_positions() -> None:
    src = SRC.replace("COND", "opened = (reach > reach.median())[:, None]")
    c = computation(src)
    assert {"head_gate", "sinks", "recent"} <= set(c.features), sorted(c.features)
    matches = computation_matches(c.features, "Heads that read far keep their attention.", c.paths, "B_online")
    assert {"DuoAttention", "RLKV", "PruLong"} <= {m.short_name for m in matches if m.level == "same"}, matches[:4]
    ranked = SRC.replace("COND", "opened = torch.isin(torch.arange(view.n_kv_heads), reach.topk(2).indices)"
                                 ".unsqueeze(-1)")
    assert "head_gate" in computation(ranked).features


def test_a_condition_per_token_or_a_fixed_split_is_no_head_gate() -> None:
    per_token = SRC.replace("COND", "opened = read > read.mean(dim=-1, keepdim=True)")
    assert "head_gate" not in computation(per_token).features
    fixed = SRC.replace("COND", "opened = (torch.arange(view.n_kv_heads) % 2 == 0)[:, None]")
    assert "head_gate" not in computation(fixed).features
