"""Set 29's follow-ups (issue 23), made after its key was read (not held out any more): a budget ratio raised to every
layer's index at once (``r.pow(arange(n))``) is a geometric schedule over depth, as ``r ** layer`` in a loop was
(PyramidInfer's shrinking budgets, s18); "the rotary rotation undone", "a position-free frame" state the un-rotation
of the keys (s12, whose code clusters the keys as handed over). Every case is written fresh here, each with its
neighbour."""

from __future__ import annotations

from reviewbench.evidence.computation import computation
from reviewbench.flags.misstated import misstated_flags

BUDGETS = '''
import torch
from harness import EvictionMethod, Keep, LayerView


class M(EvictionMethod):
    name = "m"
    query_window = 8

    def layer_budgets(self, mean_budget, n_tokens, model):
        n = len(model.attention_layers)
BODY

    def select(self, view: LayerView) -> Keep:
        return Keep.from_topk(view.group(view.attention().sum(1), "mean"), view.budget, view.valid)
'''


def _f(body: str) -> set[str]:
    return set(computation(BUDGETS.replace("BODY", body)).features)


def test_a_ratio_raised_to_every_layer_s_index_at_once_is_a_geometric_schedule() -> None:
    for body in ("        w = torch.full((n,), 0.9).pow(torch.arange(n).float())\n"
                 "        return (w / w.mean() * mean_budget).long().tolist()",
                 "        w = torch.pow(torch.tensor(0.93), torch.arange(n, dtype=torch.float32))\n"
                 "        return (w * mean_budget * n / w.sum()).long().tolist()",
                 "        w = 0.95 ** torch.arange(n).float()\n        return (w * mean_budget * n / w.sum()).long().tolist()"):
        assert "pyramid" in _f(body), body
    # the same budget for every layer, squared once (no layer index in the exponent): no schedule over depth
    flat = _f("        b = torch.full((n,), float(mean_budget)).pow(1)\n        return b.long().tolist()")
    assert "pyramid" not in flat, flat


METHOD = '''
import torch
from harness import EvictionMethod, Keep, LayerView


class M(EvictionMethod):
    name = "m"
    query_window = 8

    def select(self, view: LayerView) -> Keep:
        k = torch.nn.functional.normalize(BODY, dim=-1)
        s = (k @ k.mean(1, keepdim=True).transpose(1, 2)).squeeze(-1)
        return Keep.from_topk(-s, view.budget, view.valid)
'''


def test_keys_said_to_be_taken_back_to_a_position_free_frame_need_the_rotation_undone() -> None:
    desc = ("# Frame\n\n## Method summary\nThe keys are compared in a position-free frame: the rotary rotation is "
            "undone at each key's own position before the similarity.\n")
    plain = METHOD.replace("BODY", "view.keys.float()")
    assert [f.strength for f in misstated_flags(desc, plain)][:1] == ["proof"]
    undone = METHOD.replace("BODY", "view.rotate(view.keys.float(), -view.positions)")
    assert not [f for f in misstated_flags(desc, undone) if f.strength == "proof"]
    # the rotation named as what is not done: no claim
    denied = ("# Frame\n\n## Method summary\nThe keys are compared as handed over; the rotary rotation is not undone "
              "and no position-free frame is used.\n")
    assert not [f for f in misstated_flags(denied, plain) if f.strength == "proof"]
