"""Issue 23, after held-out set 17's measurement (not held out since): two general readings its misses showed. The
code below is written fresh for these tests, not taken from the set.

- Queries asked for but no attention computed from them: which queries a score would read decides nothing, so a
  rule that reads no attention (KeyDiff's mean-key dissimilarity) is matched exactly beside a declared window.
- NACL's random eviction samples head-wise from its proxy score (the paper's Figure 3): a draw weighted by the
  question's attention beside a top-k share is NACL's rule, as a uniform draw is.
"""

from __future__ import annotations

from reviewbench.evidence.computation import computation
from reviewbench.evidence.priorart_evidence import computation_matches

HEAD = "import torch\nimport torch.nn.functional as F\n\nfrom harness.api import EvictionMethod, Keep, LayerView\n\n\n"

DESC = ("# M\n\n## Idea\nAn idea.\n\n## Method summary\nA summary.\n\n## Relation to prior work\nNone.\n\n"
        "## Evidence\nNone.\n\n## Limitations\nSome.\n")

# the closing rows asked for (they mark the kept window) but never attended with; keys scored by how far they point
# from the head's average key
DRIFT = HEAD + '''class Drift(EvictionMethod):
    query_window = 24

    def select(self, view: LayerView) -> Keep:
        unit = F.normalize(view.keys.float(), dim=-1)
        centre = F.normalize(unit.mean(dim=1, keepdim=True), dim=-1)
        away = 1.0 - (unit * centre).sum(dim=-1)
        return Keep.from_topk(away, view.budget, view.valid)
'''


def _levels(src: str, board: str) -> dict[str, str]:
    return {m.short_name: m.level for m in computation_matches(computation(src).features, DESC, board=board)}


def test_a_window_asked_for_without_attention_is_no_choice_of_queries():
    feats = computation(DRIFT).features
    assert "window_queries" in feats and "attention" not in feats
    assert _levels(DRIFT, "B_online").get("KeyDiff") == "same"
    # where the window's attention is computed, the choice of queries is an operation beside the rule again
    attended = DRIFT.replace("away = 1.0 - (unit * centre).sum(dim=-1)",
                             "away = (1.0 - (unit * centre).sum(dim=-1)) * view.attention().sum(dim=1)[:1]")
    assert _levels(attended, "B_online").get("KeyDiff") != "same"


# the question's attention per key; most of the budget to the top scores, the rest drawn without replacement with
# probabilities from the same scores
DRAW = HEAD + '''class Draw(EvictionMethod):
    query_window = 8
    question_queries = True

    def select(self, view: LayerView) -> Keep:
        s = view.group(view.attention().sum(dim=1), "sum")
        g = torch.Generator().manual_seed(7)
        kept = []
        for h in range(s.shape[0]):
            fixed = max(1, int(view.budget * 0.7))
            top = s[h].topk(fixed).indices
            rest = s[h].clone()
            rest[top] = 0.0
            extra = torch.multinomial(rest.clamp_min(0) + 1e-12, view.budget - fixed, replacement=False, generator=g)
            kept.append(torch.cat([top, extra]))
        return Keep(tuple(kept))
'''


def test_a_draw_weighted_by_the_proxy_score_is_nacls_random_eviction():
    feats = computation(DRAW).features
    assert "importance_sampling" in feats
    assert _levels(DRAW, "A").get("NACL") == "same"
