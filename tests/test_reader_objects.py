"""Helper objects and counts the reader follows (issue 23, self-play round 19's three unread ports): an operator on
an instance of a class of the module runs its dunder method, a dataclass (or a factory method's object) carries the
data its fields were given, ``arange`` over a count of the data makes indices (no data), and a ranking cut at one
head's share of the budget is a head budget. Each written fresh, with the neighbour that must not read so."""

from __future__ import annotations

from reviewbench.evidence.computation import computation

HEAD = '''
from dataclasses import dataclass

import torch
from harness import EvictionMethod, Keep, LayerView

HELPERS

class M(EvictionMethod):
    name = "m"
    query_window = 1

    def select(self, view: LayerView) -> Keep:
        w = view.group(view.attention(view.queries[:, -1:])[:, 0], "sum") * view.values.float().norm(dim=-1)
        room = int(view.budget)
        out = []
        for h in range(view.n_kv_heads):
BODY
        return Keep(tuple(out))
'''


def _f(helpers: str, body: str) -> set[str]:
    return set(computation(HEAD.replace("HELPERS", helpers).replace("BODY", body)).features)


_CDF = '''
class Ladder:
    def __init__(self, weight):
        self.order = torch.argsort(weight)
        self.cdf = torch.cumsum(weight[self.order], 0) / weight.sum()

    def rungs(self, k):
        return (torch.arange(k, dtype=self.cdf.dtype) + 0.5) / k

    def OP(self, levels):
        return self.order[torch.searchsorted(self.cdf, levels).clamp(max=self.cdf.numel() - 1).unique()]
'''


def test_an_operator_on_a_helper_object_runs_its_method() -> None:
    for op, expr in (("__matmul__", "lad @ lad.rungs(room)"), ("__getitem__", "lad[lad.rungs(room)]"),
                     ("__rshift__", "lad >> lad.rungs(room)")):
        f = _f(_CDF.replace("OP", op), f"            lad = Ladder(w[h])\n            out.append({expr})")
        assert "importance_sampling" in f, (op, f)
    # the same object with no such operator: `@` is a product of two tensors the reader cannot see inside
    plain = _f(_CDF.replace("OP", "draw"), "            lad = Ladder(w[h])\n            out.append(lad.order[:room])")
    assert "importance_sampling" not in plain


_BOX = '''
@dataclass
class Box:
    hi: torch.Tensor
    lo: torch.Tensor
    n: int

    @staticmethod
    def of(keys):
        return Box(keys.amax(dim=0), keys.amin(dim=0), keys.shape[0])

    def reach(self, q):
        return torch.maximum(q * self.hi, q * self.lo).sum(-1)
'''


def test_a_dataclass_and_a_factory_s_object_carry_their_fields() -> None:
    body = ("            k = view.keys[h].float()\n            q = view.queries[h * view.model.group_size, -1].float()\n"
            "            pages = k.reshape(-1, 16, k.shape[-1])\n"
            "            bound = torch.stack([MAKE.reach(q) for p in pages])\n"
            "            out.append((bound.topk(room // 16).indices[:, None] * 16 + torch.arange(16)).flatten())")
    for make in ("Box.of(p)", "Box(p.amax(dim=0), p.amin(dim=0), 16)", "Box(lo=p.amin(0), hi=p.amax(0), n=16)"):
        f = _f(_BOX, body.replace("MAKE", make))
        assert "key_envelope" in f, (make, f)
    # fields given sizes only carry no keys: no envelope
    sizes = _f(_BOX, body.replace("MAKE.reach(q)", "Box(torch.ones(1), torch.zeros(1), 16).reach(q).sum()"))
    assert "key_envelope" not in sizes


def test_indices_counted_from_the_data_are_positions_and_floor_divided_make_blocks() -> None:
    body = ("            live = torch.nonzero(view.valid_mask()[h]).flatten()\n"
            "            n = int((w[h] > 0).sum())\n            ids = torch.arange(n) // 16\n"
            "            pages = torch.zeros(int(ids.max()) + 1).index_add_(0, ids, w[h, :n])\n"
            "            out.append(live[torch.isin(ids, pages.topk(max(1, room // 16)).indices)][:room])")
    assert "block_scores" in _f("", body)
    # a count bounds the run; the run read as positions ranks by recency, not by the data it was counted from
    recency = _f("", "            n = int((w[h] > 0).sum())\n"
                 "            out.append(torch.arange(n).float().topk(min(room, n)).indices)")
    assert "attention" in recency and "block_scores" not in recency


def test_a_ranking_cut_at_one_head_s_share_of_the_budget_is_a_head_budget() -> None:
    share = ("        mass = w.sum(dim=-1)\n        quota = [int(room * len(w) * float(m) / float(mass.sum())) for m in mass]\n")
    for cut in ("            k = min(quota[h], w.shape[-1])\n            out.append(torch.argsort(w[h], descending=True)[:k])",
                "            out.append(w[h].topk(min(quota[h], w.shape[-1])).indices)"):
        src = HEAD.replace("HELPERS", "").replace("        out = []\n", "        out = []\n" + share).replace("BODY", cut)
        assert "head_budget" in computation(src).features, cut
    # one even count for every head: no budget moves between heads
    even = HEAD.replace("HELPERS", "").replace(
        "BODY", "            quota = [room] * view.n_kv_heads\n"
                "            out.append(torch.argsort(w[h], descending=True)[:quota[h]])")
    assert "head_budget" not in computation(even).features
