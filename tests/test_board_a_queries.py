"""Issue 23: on board A the closing rows a window rule reads are the question's, so a rule with an operation of its
own read off the question is that rule there; and two reader fixes met on the way: indices sorted by a score are a
ranking (a comparison of them is no attention threshold), and a score read in a ranking's order and summed up is a
coverage of the attention mass (the fewest tokens reaching a share), not a running sum.

Code written fresh for these tests (not a held-out case).
"""

from __future__ import annotations

from reviewbench.evidence.computation import computation
from reviewbench.evidence.priorart_evidence import computation_matches

DESC = "# X\n\n## Method summary\nOur own rule.\n"
HEAD = "import torch\nfrom harness.api import EvictionMethod, Keep, LayerView\n\n\n"


def _level(features: dict[str, int], paper: str, board: str | None) -> str | None:
    return next((m.level for m in computation_matches(features, DESC, board=board) if m.short_name == paper), None)


def test_a_window_rule_read_off_the_question_is_that_rule_on_board_a_only() -> None:
    # channels chosen by the queries' and keys' magnitudes, attention on those channels (ThinK's rule), the board's
    # question and closing rows as the queries
    f = {"attention": 5, "channel_selection": 4, "window_queries": 0, "question_queries": 0, "sinks": 7}
    assert _level(f, "ThinK", "A") == "same"
    assert _level(f, "ThinK", "B_online") == "family"
    assert _level(f, "ThinK", None) == "family"


def test_a_rule_of_attention_and_queries_alone_stays_a_family_member_on_board_a() -> None:
    # SnapKV's operations are all a choice of queries and their aggregation: nothing there names it apart from any
    # question-attention method on board A
    f = {"attention": 5, "window_queries": 0, "question_queries": 0, "pooling": 6}
    assert _level(f, "SnapKV", "A") == "family"


def test_an_own_operation_beside_the_question_keeps_it_a_family_member() -> None:
    f = {"attention": 5, "channel_selection": 4, "window_queries": 0, "question_queries": 0, "key_norm": 8}
    assert _level(f, "ThinK", "A") == "family"


SPANS = HEAD + '''class Ridge(EvictionMethod):
    query_window = 16
    span = 6

    def select(self, view: LayerView) -> Keep:
        s = view.attention().sum(dim=1)
        s = view.group(s, "mean")
        out = []
        for h in range(s.shape[0]):
            row = s[h].tolist()
            n = len(row)
            picked = [False] * n
            left = view.budget
            for a in sorted(range(n), key=lambda i: -row[i]):
                if left <= 0:
                    break
                lo = hi = a
                while hi - lo + 1 < self.span and hi + 1 < n and not picked[hi + 1]:
                    hi += 1
                for i in range(lo, hi + 1):
                    if left > 0 and not picked[i]:
                        picked[i] = True
                        left -= 1
            out.append(torch.tensor([i for i in range(n) if picked[i]], dtype=torch.long))
        return Keep(tuple(out))
'''

MASS = HEAD + '''class Tally(EvictionMethod):
    query_window = 16
    share = 0.9

    def select(self, view: LayerView) -> Keep:
        s = view.group(view.attention().sum(dim=1), "mean")
        valid = view.valid_mask()
        out = []
        for h in range(s.shape[0]):
            idx = torch.nonzero(valid[h]).flatten()
            order = idx[s[h, idx].argsort(descending=True)]
            mass = torch.cumsum(s[h, order], 0)
            reached = torch.nonzero(mass >= self.share * mass[-1]).flatten()
            n = int(reached[0]) + 1 if reached.numel() else order.numel()
            out.append(order[: min(n, view.budget)].sort().values)
        return Keep(tuple(out))
'''


def test_indices_sorted_by_a_score_are_a_ranking_not_an_attention_threshold() -> None:
    f = computation(SPANS).features
    assert "attention" in f
    assert "attention_threshold" not in f


def test_a_score_summed_in_a_rankings_order_is_a_coverage_of_the_mass() -> None:
    f = computation(MASS).features
    assert "attention_coverage" in f
    assert "accumulate" not in f
