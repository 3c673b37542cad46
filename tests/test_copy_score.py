"""A head's copy (retrieval) score, how often its strongest attention in the reconstruction pass falls on the
token a copy writes next, is the training-free stand-in for HeadKV's and RazorAttention's offline head profiles
(``copy_score``); a total divided by a Python count of rows is a mean, not attention over each key's count of
queries (``count_normalised``)."""

from __future__ import annotations

import pytest

from reviewbench.evidence.computation.features import computation
from reviewbench.evidence.priorart_evidence import computation_matches

HEAD = '''
import torch
from harness import EvictionMethod, Keep, LayerView


class Shares(EvictionMethod):
    name = "shares"
    reconstruction_queries = True

    def select(self, view: LayerView) -> Keep:
        a = view.attention(view.queries)                      # (H_q, rows, T)
        t = view.n_tokens
        rows = torch.arange(a.shape[1])
        nxt = (rows - (a.shape[1] - t) + 1).clamp(0, t - 1)
'''
SPLIT = '''
        skill = view.group(hit, "mean")
        score = view.group(a.sum(dim=1), "mean")
        w = skill.clamp_min(0) + 1e-6
        shares = (view.budget * view.n_kv_heads * w / w.sum()).floor().long()
        return Keep.from_topk(score, shares, view.valid)
'''
COPY = {
    "argmax equals the next token": "        hit = (a.argmax(dim=-1) == nxt.view(1, -1)).float().mean(dim=1)\n",
    "attention gathered at the next token": (
        "        hit = a.gather(-1, nxt.view(1, -1, 1).expand(a.shape[0], -1, 1)).squeeze(-1).mean(dim=1)\n"),
    "attention read at paired row and token indices": (
        "        tok = nxt.clamp(0, t - 2)\n"
        "        hit = torch.maximum(a[:, rows, tok], a[:, rows, tok + 1]).mean(dim=1)\n"),
}
NOT_COPY = {
    "argmax against a sink bound": "        hit = (a.argmax(dim=-1) == 0).float().mean(dim=1)\n",
    "attention at each row's top picks": (
        "        hit = a.gather(-1, a.topk(4, dim=-1).indices).sum(-1).mean(dim=1)\n"),
    "attention entropy": "        hit = -(a * a.clamp_min(1e-9).log()).sum(-1).mean(dim=1)\n",
    "one diagonal per distance, summed (slash lines)": (
        "        hit = torch.stack([a[:, rows[d:], rows[d:] - d].sum(-1) for d in range(1, 8)], -1).mean(-1)\n"),
}


@pytest.mark.parametrize("idiom", sorted(COPY))
def test_copy_scores_are_read(idiom: str) -> None:
    c = computation(HEAD + COPY[idiom] + SPLIT)
    assert "copy_score" in c.features, (idiom, sorted(c.features))
    matches = computation_matches(c.features, "Heads that copy well get more of the budget.", c.paths, "B_offline")
    assert matches and matches[0].short_name == "HeadKV", matches[:3]


@pytest.mark.parametrize("idiom", sorted(NOT_COPY))
def test_other_head_scores_are_not(idiom: str) -> None:
    c = computation(HEAD + NOT_COPY[idiom] + SPLIT)
    assert "copy_score" not in c.features, (idiom, sorted(c.features))


_MEAN = '''
import torch
from harness import EvictionMethod, Keep, LayerView


class M(EvictionMethod):
    name = "m"

    def select(self, view: LayerView) -> Keep:
        a = view.attention(view.queries)
        total = torch.zeros(a.shape[0], a.shape[-1])
        counted = 0
        for s in range(0, a.shape[1], 64):
            total += a[:, s:s + 64].sum(dim=1)
            counted += int(a[:, s:s + 64].shape[1])
        counted = max(1, counted)
        return Keep.from_topk(view.group(total / counted, "mean"), view.budget, view.valid)
'''
_H2O_NORMALISED = '''
import torch
from harness import EvictionMethod, Keep, LayerView


class M(EvictionMethod):
    name = "m"

    def select(self, view: LayerView) -> Keep:
        a = view.attention(view.queries).sum(dim=1)
        seen = view.n_tokens - torch.arange(view.n_tokens)
        return Keep.from_topk(view.group(a / seen, "mean"), view.budget, view.valid)
'''


def test_a_total_over_a_python_count_of_rows_is_a_mean() -> None:
    assert "count_normalised" not in computation(_MEAN).features
    assert "count_normalised" in computation(_H2O_NORMALISED).features


def test_sinks_counted_by_a_hyper_parameter_bound_are_the_first_tokens() -> None:
    src = (HEAD.replace('name = "shares"', 'name = "shares"\n    n_first = 4') + COPY["argmax equals the next token"]
           + """        first = min(self.n_first, view.budget - 1)
        keep = torch.cat([torch.arange(first), torch.arange(t - (view.budget - first), t)])
        return Keep.same_for_all_heads(keep, view.n_kv_heads)
""")
    assert "sinks" in computation(src).features
