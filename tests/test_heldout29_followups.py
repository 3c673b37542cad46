"""Set 29's follow-ups (issue 23), made after its key was read (not held out any more): a budget ratio raised to every
layer's index at once (``r.pow(arange(n))``) is a geometric schedule over depth, as ``r ** layer`` in a loop was
(PyramidInfer's shrinking budgets, s18); "the rotary rotation undone", "a position-free frame" state the un-rotation
of the keys (s12, whose code clusters the keys as handed over). After the line trace (the code read as it ran on the
scored calls) the two hostile ports s10 and s13 were still read as family members, by two reader misses: a table of
diagonal sums read at each key's distance from the end taken for a copy score (MInference's slash scores projected
onto the entries) and attention times a span of positions (the opening and newest tokens) against a bar not taken
for an attention share against a threshold (SimLayerKV's lazy-layer test). Every case is written fresh here, each
with its neighbour."""

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


# --- after the line trace (s10, s13): the reader's two misses, each written fresh here ------------------------

SLASH = '''
import torch
from harness import EvictionMethod, Keep, LayerView


class Lines(EvictionMethod):
    name = "lines"
    query_window = 32

    def select(self, view: LayerView) -> Keep:
        a = view.attention()                                      # (Hq, N, T)
        col = view.group(a.sum(dim=1), "sum")                     # (Hkv, T)
        q = view.query_positions
        span = int(q.max()) + 1
        off = torch.arange(span)
        diag = torch.zeros(a.shape[0], span)
        for h in range(a.shape[0]):
            tgt = (q[:, None] - off[None, :]).clamp_min(0)
            j = torch.searchsorted(view.positions[h // view.model.group_size].contiguous(), tgt).clamp(
                max=view.n_tokens - 1)
            diag[h] = a[h].gather(1, j).sum(0)
        diag = view.group(diag, "sum")
        back = (q.max() - view.positions).clamp(0, span - 1)
        slash = diag.gather(1, back)
        half = view.budget // 2
        keep = []
        for h in range(view.n_kv_heads):
            first = col[h].topk(half).indices
            rest = slash[h].clone()
            rest[first] = float("-inf")
            keep.append(torch.cat([first, rest.topk(view.budget - half).indices]))
        return Keep(tuple(keep))
'''


def test_a_table_of_diagonal_sums_read_at_each_key_s_distance_is_the_slash_score_not_a_copy_score() -> None:
    from reviewbench.evidence.priorart_evidence import prior_art

    f = computation(SLASH).features
    assert "diagonal_sums" in f and "copy_score" not in f
    assert [(c.short_name, c.level) for c in prior_art(SLASH, "", "", "", board="B_online").computed][:1] == [
        ("MInference", "same")]
    # a row's attention read at a position its own index names is still a copy score
    copy = SLASH.replace("        slash = diag.gather(1, back)\n",
                         "        slash = view.group(a.gather(2, (q - view.positions.min()).clamp(0, view.n_tokens - 1)"
                         "[None, :, None].expand(a.shape[0], -1, 1)).sum(1).expand(-1, view.n_tokens), 'sum')\n")
    assert "copy_score" in computation(copy).features


LAZY = '''
import torch
from harness import EvictionMethod, Keep, LayerView


class Idle(EvictionMethod):
    name = "idle"
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        a = view.attention()[:, -4:]                              # (Hq, 4, T)
        newest = view.positions >= view.positions.max(dim=-1, keepdim=True).values - view.budget // 3
        opening = view.positions < 2
        span = (opening | newest).repeat_interleave(view.model.group_size, dim=0)
        share = (a * span[:, None, :]).sum(-1).mean()
        if share > 0.9:
            return Keep.from_topk(view.positions.float() + 1e6 * opening, view.budget, view.valid)
        return Keep.from_topk(view.group(a.sum(1), "max"), view.budget, view.valid)
'''


def test_attention_times_a_span_of_positions_against_a_bar_is_an_attention_threshold() -> None:
    from reviewbench.evidence.priorart_evidence import prior_art

    assert "attention_threshold" in computation(LAZY).features
    assert ("SimLayerKV", "same") in [(c.short_name, c.level) for c in prior_art(LAZY, "", "", "", board="C").computed]
    # attention times a positional weight (no span) against a bar is still no token's attention against one
    weighted = LAZY.replace("span = (opening | newest)", "span = (view.positions.float() / view.n_tokens)")
    assert "attention_threshold" not in computation(weighted).features


# --- set 30's honest s01 (after its key; written fresh): the mean attention at each distance as a divisor --------

PROFILE = '''
import torch
from harness import EvictionMethod, Keep, LayerView


class Flat(EvictionMethod):
    name = "flat"
    query_window = 24

    def select(self, view: LayerView) -> Keep:
        a = view.attention()                                       # (Hq, N, T)
        d = (view.query_positions[None, :, None] - view.positions.repeat_interleave(
            view.model.group_size, 0)[:, None, :]).clamp_min(0)    # (Hq, N, T)
        flat_d = d.reshape(a.shape[0], -1)
        sums = torch.zeros(a.shape[0], int(d.max()) + 1).scatter_add_(1, flat_d, a.reshape(a.shape[0], -1))
        hits = torch.zeros_like(sums).scatter_add_(1, flat_d, torch.ones_like(flat_d, dtype=sums.dtype))
        typical = (sums / hits.clamp_min(1)).gather(1, flat_d).clamp_min(1e-6)
        lift = (a.reshape(a.shape[0], -1) / typical).view_as(a).mean(1)
        return Keep.from_topk(view.group(lift, "mean"), view.budget, view.valid)
'''


def test_attention_over_the_mean_attention_at_its_distance_is_no_slash_score() -> None:
    assert "diagonal_sums" not in computation(PROFILE).features
    # the same table read back as each entry's score is the slash score
    slash = PROFILE.replace("lift = (a.reshape(a.shape[0], -1) / typical).view_as(a).mean(1)",
                            "lift = typical.view_as(a).mean(1)")
    assert "diagonal_sums" in computation(slash).features
