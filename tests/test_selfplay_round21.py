"""Self-play round 21 (issue 23): twelve ports written blind to the reader by a helper (tests/selfplay_ports.py,
"(round 21)" keys). Before: 9 of 12 read as their paper, 1 as another paper's rule (its flag stands), 2 not read;
after: 10, 1 and 1. CAOTE's output change renormalises the other weights by 1 - a, an operation of its own that an
honest method adding the read-out's likeness to the values as a score term does not compute. A2SF's port kept its
ledger in a table reached through getattr(self, name, default): read now (accumulate). It stays open: its decay,
written rate ** steps, is unread, and a decayed running sum over each call's newest queries is a family member of A2SF
on board C anyway (read as the rule, it flagged five honest or credited decode methods of the held-out sets); reading
rate ** steps made four earlier A2SF ports family members too (sets 11, 17, 19 and 27), where the unread decay leaves
them H2O's rule and flagged, so it was not kept. The causes fixed here are general (data flow, never a name), each with the neighbour that must not read so;
every case is written fresh here."""

from __future__ import annotations

from reviewbench.evidence.computation import computation

HEAD = '''
import torch
from harness import EvictionMethod, Keep, LayerView


class M(EvictionMethod):
    name = "m"
    query_window = 64
    rate = 0.9

    def setup(self, model) -> None:
        self._memo = {}

BODY

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention().sum(dim=1), "sum")
        score = self._score(view, a)
        return Keep.from_topk(score, view.budget)
'''


def _f(body: str) -> set[str]:
    return set(computation(HEAD.replace("BODY", body)).features)


def test_a_table_reached_through_getattr_is_the_state_an_earlier_call_stored() -> None:
    # the table read back through getattr(self, name, default).get(layer) and written back entry by entry
    carried = _f('''    def _score(self, view, a):
        old = getattr(self, "_memo", {}).get(view.layer)
        s = a if old is None else a + old
        self._memo[view.layer] = s
        return s''')
    assert "accumulate" in carried, carried
    # the same table read through the attribute itself: the same reading
    plain = _f('''    def _score(self, view, a):
        old = self._memo.get(view.layer)
        s = a if old is None else a + old
        self._memo[view.layer] = s
        return s''')
    assert "accumulate" in plain
    # a table only set up once and read through getattr (never written by a call): nothing carried
    fixed = _f('''    def _score(self, view, a):
        w = getattr(self, "_memo", {}).get(view.layer)
        return a if w is None else a * w''')
    assert "accumulate" not in fixed, fixed


BOARD_A = '''
import torch
from harness import EvictionMethod, Keep, LayerView


class M(EvictionMethod):
    name = "m"
    question_queries = True
    query_window = 8

    def select(self, view: LayerView) -> Keep:
        p = view.attention()                                  # (H, n, T)
        v = view.values.float().repeat_interleave(view.model.group_size, 0)
        o = torch.einsum("hnt,htd->hnd", p, v)
        gap = torch.cdist(v, o).transpose(1, 2)               # (H, n, T): ||v_t - o_q||
BODY
        return Keep.from_topk(view.group(s.sum(1), "max"), view.budget, view.valid)
'''


def _matches_a(body: str):
    from reviewbench.evidence.priorart_evidence import computation_matches

    c = computation(BOARD_A.replace("BODY", body))
    return set(c.features), [(m.short_name, m.level) for m in computation_matches(c.features, "", c.paths, "A")]


def test_the_output_change_of_dropping_a_token_renormalises_by_one_minus_its_weight() -> None:
    for body in ("        s = p / (1 - p).clamp_min(1e-6) * gap",
                 "        den = 1.0 - p + 1e-6\n        s = gap * p / den",
                 "        s = (p / torch.clamp(1 - p, min=1e-6)) ** 2 * gap ** 2"):
        feats, ms = _matches_a(body)
        assert "removal_rescale" in feats, body
        assert ("CAOTE", "same") in ms, ms  # the question's rows stand for the window the rule reads
    # the read-out's likeness to each value weighting the question's attention: a score term of an honest method's
    feats, ms = _matches_a("        s = p * torch.nn.functional.cosine_similarity(v[:, None], o[:, :, None], dim=-1)"
                           ".clamp_min(0)")
    assert "removal_rescale" not in feats and ("CAOTE", "same") not in ms, ms
    # one minus something that is no attention (a key's likeness): no renormalisation of the weights
    feats, _ = _matches_a("        k = torch.nn.functional.normalize(view.keys.float(), dim=-1)\n"
                          "        sim = (k @ k.mean(1, keepdim=True).transpose(1, 2)).squeeze(-1)\n"
                          "        s = p * gap / (1 - sim.repeat_interleave(view.model.group_size, 0)[:, None])")
    assert "removal_rescale" not in feats
