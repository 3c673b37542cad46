"""Issue 23, after the first held-out set: what its misses showed about the code reader and the novelty cap.

Every snippet here is written for these tests (none is a held-out or calibration bundle):
- attention compared with a bar computed from positions (the average attention 1 / tokens seen) is a threshold;
- a scalar taken out of a remembered state and scaled is not a decay of that state;
- a per-layer schedule whose arithmetic sits in a helper that gets the layer index is a pyramid;
- a method near a credited work only because it builds on it (the work's rule plus an operation of its own) is a
  family member (novelty 2), not a copy (0); uncredited, or adding nothing, or keeping the same tokens, it is not.
"""

from __future__ import annotations

from pathlib import Path

from reviewbench.evidence.computation import computation
from reviewbench.evidence.facts import ComputedFact, EvidenceFacts, SimilarityFact
from reviewbench.evidence.judge import novelty
from reviewbench.evidence.priorart_evidence import computation_matches
from reviewbench.rubric import load_rubric

HEAD = "import torch\n\nfrom harness.api import EvictionMethod, Keep, LayerView\n\n\n"

# how often a token beats the mean attention of the keys each query can see (the bar from positions)
ABOVE_MEAN = HEAD + '''class Tally(EvictionMethod):
    query_window = 40

    def select(self, view: LayerView) -> Keep:
        probs = view.attention()
        visible = (view.positions[0][None, :] <= view.query_positions[:, None]).sum(dim=-1)
        level = 1.0 / visible.clamp(min=1).float()
        hits = (probs > level[None, :, None]).float().sum(dim=1)
        return Keep.from_topk(view.group(hits, "max"), view.budget, view.valid)
'''

# attention masked by positions, then compared with 0: a mask, not a threshold
MASKED = HEAD + '''class Plain(EvictionMethod):
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        s = view.group(view.attention().sum(dim=1), "mean")
        s = s.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        live = torch.isinf(s[0]).logical_and(s[0] > 0)
        return Keep.from_topk(s + live.float(), view.budget, view.valid)
'''

# accumulated attention; a per-head share is read out of the state as a scalar and scaled (no decay)
SCALAR_OUT = HEAD + '''class Shares(EvictionMethod):
    query_window = 1 << 20

    def select(self, view: LayerView) -> Keep:
        acc = view.recall("a")
        if view.queries is not None:
            acc = acc + view.group(view.attention(reduce="sum"), "sum")
        view.remember("a", acc)
        top = acc.amax(dim=-1) / acc.sum(dim=-1).clamp_min(1e-9)
        s = acc.clone()
        for h in range(view.n_kv_heads):
            k = int(view.budget * (0.1 + 0.3 * float(top[h])))
            s[h, view.n_tokens - k:] = float("inf")
        return Keep.from_topk(s, view.budget, view.valid)
'''
DECAYED = SCALAR_OUT.replace('acc = acc + view.group', 'acc = acc * 0.95 + view.group')

# a linear depth schedule computed in a module-level helper that is handed the layer index
HELPER_SCHEDULE = HEAD + '''def share(i, total, mean, spread):
    hi = mean * (1 + spread)
    lo = mean * (1 - spread)
    return int(hi - i * (hi - lo) / max(1, total - 1))


class Taper(EvictionMethod):
    query_window = 24

    def layer_budgets(self, mean_budget, n_tokens, model):
        return [min(n_tokens, share(j, model.n_layers, mean_budget, 0.6)) for j in range(model.n_layers)]

    def select(self, view: LayerView) -> Keep:
        s = view.group(view.attention().sum(dim=1), "mean")
        return Keep.from_topk(s, view.budget, view.valid)
'''
FLAT_SCHEDULE = HELPER_SCHEDULE.replace("share(j, model.n_layers, mean_budget, 0.6)",
                                        "share(0, model.n_layers, mean_budget, 0.6)")


def _rubric():
    return load_rubric(Path(__file__).resolve().parent.parent / "rubrics" / "default.toml")


def test_attention_against_a_bar_computed_from_positions_is_a_threshold():
    f = computation(ABOVE_MEAN).features
    assert "attention_threshold" in f
    assert computation_matches(f, "")[0].short_name == "Scissorhands"
    assert "attention_threshold" not in computation(MASKED).features


def test_a_scalar_read_out_of_the_state_and_scaled_is_not_a_decay():
    assert "decay" not in computation(SCALAR_OUT).features
    assert "decay" in computation(DECAYED).features


def test_a_schedule_whose_arithmetic_sits_in_a_helper_is_a_pyramid():
    assert "pyramid" in computation(HELPER_SCHEDULE).features
    assert "pyramid" not in computation(FLAT_SCHEDULE).features


def _facts(credited: bool, level: str = "family", beh: float | None = None, extra: tuple[str, ...] = ("entropy",),
           other: SimilarityFact | None = None) -> EvidenceFacts:
    code = [SimilarityFact(reference="baseline:h2o", implements="h2o", via="code", score=0.9, containment=0.2,
                           credited=credited, credit_reason="")]
    if other is not None:
        code.append(other)
    behaviour = [SimilarityFact(reference="baseline:h2o", implements="h2o", via="behaviour", score=beh,
                                credited=credited, credit_reason="")] if beh is not None else []
    return EvidenceFacts(code=code, behaviour=behaviour, behaviour_measured=beh is not None,
                         computed=[ComputedFact(short_name="H2O", title="H2O", arxiv="2306.14048", level=level,
                                                ops=["attention", "accumulate"], extra=list(extra),
                                                credited=credited)])


def test_a_credited_rule_plus_an_operation_of_its_own_is_a_family_member_not_a_copy():
    rubric = _rubric()
    assert novelty(_facts(True), rubric).score == 2
    assert "credited" in novelty(_facts(True), rubric).rationale
    assert novelty(_facts(True, beh=0.8), rubric).score == 2  # close behaviour, credited, measurably changed
    # not credited: the distance decides (the same code)
    assert novelty(_facts(False), rubric).score == 0
    # the credited rule and nothing of its own: the method exists
    assert novelty(_facts(True, level="same", extra=()), rubric).score <= 1
    # the addition changes nothing it keeps: the same method
    assert novelty(_facts(True, beh=0.95), rubric).score == 0


def test_an_uncredited_reference_is_explained_by_a_credited_one_only_when_it_matches_no_more():
    rubric = _rubric()
    held = SimilarityFact(reference="baseline:tova", implements="tova", via="code", score=0.7, containment=0.2,
                          credited=False, credit_reason="")
    assert novelty(_facts(True, other=held), rubric).score == 2
    closer = held.model_copy(update={"score": 0.95})
    assert novelty(_facts(True, other=closer), rubric).score == 0
