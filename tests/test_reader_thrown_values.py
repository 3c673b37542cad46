"""Issue 23: what the code reader counts as part of a rule (found by the third held-out set, tested on fresh code).

- a value computed and thrown away (bound to a name nothing returned reads, or kept on ``self`` where nothing
  reads it back) is no part of the rule: its operations are not features and its calls do not make a stated
  mechanism "possibly computed";
- the norm of a difference of two key (or value) quantities is a distance, not a key norm; squares averaged over
  tokens and channels together are one scale per head, not a norm per token;
- the least attention (``minimum`` of two windows) and the builtin ``max(0, n)`` are not max-attention;
- unit keys multiplied by unit keys and summed over channels are a cosine similarity.

Every snippet and sentence here is written for these tests (none is a held-out case).
"""

from __future__ import annotations

from pathlib import Path

from reviewbench.evidence.computation import called_names, computation
from reviewbench.flags.misstated import misstated_flags
from reviewbench.rubric import load_rubric

HEAD = "import torch\nimport torch.nn.functional as F\n\nfrom harness.api import EvictionMethod, Keep, LayerView\n\n\n"


def _rubric():
    return load_rubric(Path(__file__).resolve().parent.parent / "rubrics" / "default.toml")


def _desc(summary: str) -> str:
    return (f"# M\n\n## Idea\nAn idea.\n\n## Method summary\n{summary}\n\n## Relation to prior work\nNone.\n\n"
            f"## Evidence\nNone.\n\n## Limitations\nSome.\n\n## Builds on\nNone.\n")


# the spread of the query rows' attention is computed, logged on self and never read: the rule is the key norm
THROWN = HEAD + '''class Quill(EvictionMethod):
    query_window = 8

    def select(self, view: LayerView) -> Keep:
        w = view.attention()
        spread = -(w * torch.log(w + 1e-9)).sum(-1)
        self.trace = spread.mean()
        unused = spread.max()
        s = -view.keys.float().norm(dim=-1)
        return Keep.from_topk(s, view.budget, view.valid)
'''

# the same spread used in the score
USED = THROWN.replace("s = -view.keys.float().norm(dim=-1)",
                      "s = -view.keys.float().norm(dim=-1) + view.group(spread, 'mean')[:, :1]")

# kept on self in one call and read back by another hook: live
KEPT = HEAD + '''class Lark(EvictionMethod):
    query_window = 8

    def setup(self, info) -> None:
        self.bias = None

    def select(self, view: LayerView) -> Keep:
        w = view.attention()
        if self.bias is None:
            self.bias = -(w * torch.log(w + 1e-9)).sum(-1)
        s = view.group(w.sum(1), "mean") + view.group(self.bias, "mean")[:, :1]
        return Keep.from_topk(s, view.budget, view.valid)
'''


def test_a_value_thrown_away_is_no_part_of_the_rule():
    f = computation(THROWN).features
    assert "entropy" not in f and "key_norm" in f
    assert "log" not in called_names(THROWN)
    assert "entropy" in computation(USED).features and "log" in called_names(USED)
    assert "entropy" in computation(KEPT).features


def test_a_stated_mechanism_computed_and_thrown_away_is_misstated_with_proof():
    desc = _desc("Each head's budget follows the entropy of its attention rows; inside it the lowest key norms stay.")
    flags = misstated_flags(desc, THROWN, [], _rubric().evidence)
    assert flags and flags[0].flag == "MISSTATED_METHOD" and flags[0].strength == "proof"
    used = misstated_flags(desc, USED, [], _rubric().evidence)
    # the entropy is computed and used: no flag about it (the budget per head the sentence also names is not computed,
    # and words alone say so only as an indication for a judge)
    assert not any("states entropy" in f.explanation for f in used) and all(f.strength == "indication" for f in used)


def test_the_norm_of_a_key_difference_is_a_distance_not_a_key_norm():
    step = HEAD + '''class Wren(EvictionMethod):
    def select(self, view: LayerView) -> Keep:
        k = view.keys.float()
        prev = torch.roll(k, 1, dims=1)
        s = torch.linalg.norm(k - prev, dim=-1)
        s = s / (k.pow(2).mean(dim=(1, 2)).sqrt()[:, None] + 1e-6)
        return Keep.from_topk(s, view.budget, view.valid)
'''
    assert "key_norm" not in computation(step).features
    plain = step.replace("torch.linalg.norm(k - prev, dim=-1)", "torch.linalg.norm(k, dim=-1)")
    assert "key_norm" in computation(plain).features
    by_hand = step.replace("torch.linalg.norm(k - prev, dim=-1)", "k.pow(2).sum(-1).sqrt()")
    assert "key_norm" in computation(by_hand).features


def test_least_attention_and_builtin_max_are_not_max_attention():
    least = HEAD + '''class Moth(EvictionMethod):
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        w = view.attention()
        a = w[:, :8].sum(1)
        b = w[:, 8:].sum(1)
        s = view.group(torch.minimum(a, b), "mean")
        top = max(0, int(s.shape[-1]) - 4)
        s[:, top:] = float("inf")
        return Keep.from_topk(s, view.budget, view.valid)
'''
    assert "max_attention" not in computation(least).features
    most = least.replace("torch.minimum(a, b)", "torch.maximum(a, b)")
    assert "max_attention" in computation(most).features
    peak = least.replace("torch.minimum(a, b)", "w.amax(dim=1)")
    assert "max_attention" in computation(peak).features


def test_unit_keys_times_unit_keys_summed_is_a_cosine():
    cos = HEAD + '''class Tern(EvictionMethod):
    def select(self, view: LayerView) -> Keep:
        u = F.normalize(view.keys.float(), dim=-1)
        ref = u[:, -1:]
        s = -(u * ref).sum(dim=-1)
        return Keep.from_topk(s, view.budget, view.valid)
'''
    assert "key_similarity" in computation(cos).features


def test_a_score_of_token_indices_alone_keeps_the_newest():
    counted = HEAD + '''class Gull(EvictionMethod):
    def select(self, view: LayerView) -> Keep:
        h, n = view.keys.shape[0], view.keys.shape[1]
        s = torch.ones(h, n).cumsum(dim=1)
        s[:, :2] = 3.0 * n
        return Keep.from_topk(s, view.budget, view.valid)
'''
    f = computation(counted).features
    assert "recent" in f and "sinks" in f
    ranged = counted.replace("torch.ones(h, n).cumsum(dim=1)", "torch.arange(n).float().expand(h, n).clone()")
    assert "recent" in computation(ranged).features
    # an index mixed with the layer's data is a score, not a position rule
    mixed = counted.replace("torch.ones(h, n).cumsum(dim=1)", "torch.ones(h, n).cumsum(dim=1) * view.keys.norm(dim=-1)")
    assert "recent" not in computation(mixed).features


def test_a_value_that_outlives_the_call_by_another_road_is_live():
    """Written as an adversary would hide the rule's computation from the thrown-away pruning: a module-level
    table, a global, a helper handed ``self``, an alias of ``self``, an attribute read back by name."""
    module_table = HEAD + '''_MEMO = {}


def _prior(layer):
    return _MEMO[layer]


class Wren(EvictionMethod):
    query_window = 8

    def select(self, view: LayerView) -> Keep:
        w = view.attention()
        _MEMO[view.layer] = -(w * torch.log(w + 1e-9)).sum(-1)
        s = -view.keys.float().norm(dim=-1) + view.group(_prior(view.layer), "mean")[:, :1]
        return Keep.from_topk(s, view.budget, view.valid)
'''
    via_helper = THROWN.replace("self.trace = spread.mean()", "self.trace = spread") + '''

def _read(obj):
    return obj.trace
'''
    alias = THROWN.replace("self.trace = spread.mean()", "me = self\n        me.kept = spread") + \
        "\n    def finish(self):\n        return self.kept\n"
    by_name = THROWN.replace("self.trace = spread.mean()", "self.trace = spread\n        _ = getattr(self, 'trace')")
    glob = HEAD + '''LAST = None


class Finch(EvictionMethod):
    query_window = 8

    def select(self, view: LayerView) -> Keep:
        global LAST
        w = view.attention()
        LAST = -(w * torch.log(w + 1e-9)).sum(-1)
        s = -view.keys.float().norm(dim=-1)
        return Keep.from_topk(s, view.budget, view.valid)

    def finish(self):
        return LAST
'''
    for name, src in {"module table": module_table, "helper handed self": via_helper, "alias of self": alias,
                      "getattr": by_name, "global": glob}.items():
        assert "entropy" in computation(src).features, name
        assert "log" in called_names(src), name
