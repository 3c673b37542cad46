"""Self-play round 21 (issue 23): twelve ports written blind to the reader by a helper (tests/selfplay_ports.py,
"(round 21)" keys). Before: 9 of 12 read as their paper, 1 as another paper's rule (its flag stands), 2 not read;
after: 10, 1 and 1 (A2SF's port kept its ledger in a table reached through getattr(self, name, default) and faded
it by rate ** steps; CAOTE's output change beside the question's attention stays a score term an honest method may
add). The causes fixed here are general (data flow, never a name), each with the neighbour that must not read so;
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


def test_a_carried_score_scaled_by_a_rate_to_the_power_of_the_steps_decays() -> None:
    faded = _f('''    def _score(self, view, a):
        old = self._memo.get(view.layer)
        steps = view.n_tokens - getattr(self, "_seen", view.n_tokens)
        s = a if old is None else old * self.rate ** steps + a
        self._memo[view.layer] = s
        return s''')
    assert {"accumulate", "decay"} <= faded, faded
    # a carried score scaled by a power of two (a growth, no forgetting factor): no decay
    grown = _f('''    def _score(self, view, a):
        old = self._memo.get(view.layer)
        s = a if old is None else old * 2 ** 3 + a
        self._memo[view.layer] = s
        return s''')
    assert "accumulate" in grown and "decay" not in grown, grown
