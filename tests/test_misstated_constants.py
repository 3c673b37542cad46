"""Issue 23: a stated mechanism whose only trace in the code is an operation on constants, or one that needs data the
code never reads, is absent (a proof), not "some operation could compute it".

A loose reading lets any call of ``log`` stand for an entropy and any ``norm`` for a value norm. A logarithm of a
hyper-parameter (a decay written as ``exp(age * log(rate))``) is a number fixed before any input is seen, and a norm of
the keys is no norm of the values when the values are never read. Every snippet and sentence here is written fresh
for these tests (none is a held-out case).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reviewbench.evidence.computation import called_names
from reviewbench.evidence.stated import DATA_TRANSFORMS
from reviewbench.flags.misstated import misstated_flags, misstatements
from reviewbench.rubric import load_rubric
from reviewbench.verdict import decide

HEAD = "import math\n\nimport torch\n\nfrom harness.api import EvictionMethod, Keep, LayerView\n\n\n"

# unit keys against their mean direction; only the keys are read (a key norm, no value norm)
KEY_SPREAD = HEAD + '''class Sparrow(EvictionMethod):
    def select(self, view: LayerView) -> Keep:
        unit = view.keys.float() / view.keys.float().norm(dim=-1, keepdim=True).clamp_min(1e-6)
        centre = unit.mean(dim=1, keepdim=True)
        odd = 1 - (unit * centre).sum(-1) / centre.norm(dim=-1).clamp_min(1e-6)
        return Keep.from_topk(odd, view.budget, view.valid)
'''
# the same, weighted by the values' norms
KEY_SPREAD_VALUES = KEY_SPREAD.replace(
    "        return Keep.from_topk(odd,",
    "        odd = odd * view.values.float().norm(dim=-1)\n        return Keep.from_topk(odd,")

# attention of the newest queries, accumulated with a decay fixed by a class constant through a logarithm
DECAYED = HEAD + '''class Heron(EvictionMethod):
    query_window = 8
    rate = 0.9

    def __init__(self, floor: float = 0.5) -> None:
        self.floor = floor

    def select(self, view: LayerView) -> Keep:
        att = view.group(view.attention(), "sum")
        age = torch.arange(att.shape[1] - 1, -1, -1, device=att.device, dtype=att.dtype)
        weights = torch.exp(age * torch.log(torch.tensor(self.rate, device=att.device)))
        floor = math.log(self.floor) + math.log1p(-self.rate)
        score = torch.einsum("hqt,q->ht", att, weights) + floor
        return Keep.from_topk(score, view.budget, view.valid)
'''
# the same, where the rate comes from each head's attention entropy
DECAYED_ENTROPY = DECAYED.replace(
    "        weights = torch.exp(age * torch.log(torch.tensor(self.rate, device=att.device)))\n",
    "        p = att.mean(dim=1)\n        p = p / p.sum(-1, keepdim=True)\n"
    "        h = -(p * torch.log(p + 1e-9)).sum(-1, keepdim=True)\n"
    "        weights = torch.exp(age * torch.log(torch.sigmoid(h)).mean())\n")


def _desc(summary: str) -> str:
    return (f"# Plover\n\n## Idea\nSome tokens matter more than others.\n\n## Method summary\n{summary}\n\n"
            "## Relation to prior work\nNone.\n\n## Evidence\nNone.\n\n## Limitations\nSome.\n\n## Builds on\nNone.\n")


def _rubric():
    return load_rubric(Path(__file__).resolve().parent.parent / "rubrics" / "default.toml")


def _standing(desc: str, src: str) -> list[str]:
    flags = misstated_flags(desc, src, [], _rubric().evidence)
    return [f.flag for f in decide([], _rubric(), "other", flags).standing_flags]


VALUE_CONCEPTS = ("value norms", "the values / the attention output")
VALUE_CLAIMS = [
    "Each key's oddness is multiplied by the magnitude of its value vector, so silent values lose their slot.",
    "A token's score is its distance from the centre times the L2 norm of its value.",
    "The keep score weighs key novelty by value norms.",
]


@pytest.mark.parametrize("summary", VALUE_CLAIMS)
def test_a_value_norm_claimed_where_the_values_are_never_read_is_a_proof(summary):
    found = [m for m in misstatements(_desc(summary), KEY_SPREAD) if m.mechanism in VALUE_CONCEPTS]
    assert found and found[0].strict and found[0].absent
    assert _standing(_desc(summary), KEY_SPREAD) == ["MISSTATED_METHOD"]
    # the code that does read and weigh by the values states the truth
    assert not [m for m in misstatements(_desc(summary), KEY_SPREAD_VALUES) if m.mechanism in VALUE_CONCEPTS]
    assert _standing(_desc(summary), KEY_SPREAD_VALUES) == []


ENTROPY_CLAIMS = [
    "Each head sets its own decay from the entropy of its attention: diffuse heads forget sooner.",
    "The forgetting rate of every layer follows the Shannon entropy of that layer's window attention.",
]


@pytest.mark.parametrize("summary", ENTROPY_CLAIMS)
def test_an_entropy_claimed_where_the_only_logarithm_is_of_constants_is_a_proof(summary):
    found = [m for m in misstatements(_desc(summary), DECAYED) if m.mechanism == "entropy"]
    assert found and found[0].strict and found[0].absent
    assert _standing(_desc(summary), DECAYED) == ["MISSTATED_METHOD"]
    assert _standing(_desc(summary), DECAYED_ENTROPY) == []


def test_only_calls_on_data_count_for_the_data_transforms():
    assert "log" in called_names(DECAYED)  # the loose reading, as before
    assert not {"log", "log1p"} & called_names(DECAYED, DATA_TRANSFORMS)
    assert "log" in called_names(DECAYED_ENTROPY, DATA_TRANSFORMS)
    # a parameter, a loop variable, a size or a state written outside the constructor is data
    for body in ("def f(self, x):\n        return torch.log(x)\n",
                 "def f(self, view):\n        for r in range(3):\n            y = torch.log(torch.tensor(r + 1.0))\n"
                 "        return y\n",
                 "def f(self, view):\n        return math.log(view.keys.shape[1])\n",
                 "def f(self, view):\n        self.rate = view.keys.mean()\n        return torch.log(self.rate)\n"):
        src = HEAD + "class T(EvictionMethod):\n    rate = 0.5\n\n    " + body
        assert "log" in called_names(src, DATA_TRANSFORMS), body
    # constants through locals, class attributes, constructor parameters and arithmetic are not
    src = HEAD + ("class T(EvictionMethod):\n    base = 2.0\n\n    def __init__(self, r=0.3):\n        self.r = r\n\n"
                  "    def f(self, view):\n        c = self.base * (1 - self.r)\n        d = c ** 2\n"
                  "        return torch.log(torch.tensor(d, dtype=view.keys.dtype)) + view.keys.norm()\n")
    names = called_names(src, DATA_TRANSFORMS)
    assert "log" not in names and "norm" in names


def test_random_draws_and_layers_made_from_constants_still_count():
    src = HEAD + '''class Wren(EvictionMethod):
    def select(self, view: LayerView) -> Keep:
        g = torch.Generator().manual_seed(0)
        r = torch.randn(64, 8, generator=g)
        bits = torch.sign(view.keys.float() @ r)
        return Keep.from_topk(bits.sum(-1), view.budget, view.valid)
'''
    assert {"randn", "manual_seed"} <= called_names(src, DATA_TRANSFORMS)
    summary = "Keys are hashed by the signs of a random projection, and tokens with rare signatures are kept."
    assert not [m for m in misstatements(_desc(summary), src) if m.strict]
