"""Readings added after held-out set 35's key (not held out; every snippet written fresh for these tests, none a
bundle of the set), each with a neighbour that must read otherwise:

- keys scaled by attention, multiplied by themselves over the tokens, are a weighted Gram of the keys (a leverage
  score's), no walk of attention over the token graph;
- the diagonal of a key Gram summed whole is its trace, one number per head (a ridge's scale), no norm per key;
- ``arange(min(4, n))`` is at most the first four tokens: beside a recent run, the sinks;
- board A hands its queries over as the question's: a rule that lets the newest queries stand as a window or as
  the last one (PyramidInfer's) reads the question's queries there;
- behaving like a reference the description credits by name is the credited method's behaviour (novelty at most 1,
  not the undisclosed copy's 0), whether or not the code reads as its rule;
- a rule whose own operations few papers name (LSH sign agreement), its scores carried over the calls with a fade,
  is still that rule; a faded attention tally is not H2O.
"""

from __future__ import annotations

from pathlib import Path

from reviewbench.evidence.computation import computation
from reviewbench.evidence.priorart_evidence import computation_matches

HEAD = "import torch\nimport torch.nn.functional as F\n\nfrom harness.api import EvictionMethod, Keep, LayerView\n\n\n"
BARE = "# Method\n\n## Idea\nSomething.\n\n## Method summary\nA score.\n\n## Relation to prior work\nNone.\n"


def _same(src: str, board: str | None) -> list[str]:
    c = computation(src)
    return [m.short_name for m in computation_matches(c.features, BARE, c.paths, board) if m.level == "same"]


SPREAD = HEAD + '''class Spread(EvictionMethod):
    query_window = 8

    def select(self, view: LayerView) -> Keep:
        w = view.group(view.attention(reduce="sum"), "sum")
        x = view.keys.float() * w.unsqueeze(-1)
        cov = x.mT @ x + 1e-3 * torch.eye(x.shape[-1])
        lev = (x * torch.linalg.solve(cov, x.mT).mT).sum(-1)
        return Keep.from_topk(lev, view.budget, view.valid)
'''
TWO_HOP = HEAD + '''class TwoHop(EvictionMethod):
    query_window = 8

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention(), "mean")
        square = a[:, :, -a.shape[1]:]
        reach = (square @ square).sum(1)
        return Keep.from_topk(reach, view.budget, view.valid)
'''


def test_attention_scaled_keys_against_themselves_are_a_gram_not_a_walk() -> None:
    feats = computation(SPREAD).features
    assert "leverage" in feats
    assert "attention_propagation" not in feats


def test_attention_against_attention_is_still_a_walk() -> None:
    assert "attention_propagation" in computation(TWO_HOP).features


RIDGED = HEAD + '''class Ridged(EvictionMethod):
    query_window = 8
    lam = 0.05

    def select(self, view: LayerView) -> Keep:
        w = view.group(view.attention(reduce="mean"), "mean")
        x = view.keys.float() * w.unsqueeze(-1)
        g = torch.einsum("htd,hte->hde", x, x)
        scale = g.diagonal(dim1=-2, dim2=-1).sum(-1)
        g = g + self.lam * scale[:, None, None] * torch.eye(g.shape[-1])
        lev = (x * torch.linalg.solve(g, x.mT).mT).sum(-1)
        return Keep.from_topk(lev, view.budget, view.valid)
'''
NORMS = HEAD + '''class Norms(EvictionMethod):
    def select(self, view: LayerView) -> Keep:
        k = view.keys.float()
        energy = (k @ k.mT).diagonal(dim1=-2, dim2=-1)
        return Keep.from_topk(-energy, view.budget, view.valid)
'''


def test_a_gram_s_trace_as_a_ridge_scale_is_no_key_norm() -> None:
    feats = computation(RIDGED).features
    assert "leverage" in feats
    assert "key_norm" not in feats


def test_the_diagonal_kept_per_key_is_the_key_norm() -> None:
    assert "key_norm" in computation(NORMS).features


CAPPED = HEAD + '''class Capped(EvictionMethod):
    query_window = 16
    first = 3

    def select(self, view: LayerView) -> Keep:
        n, b = view.n_tokens, view.budget
        head = torch.arange(min(self.first, n))
        tail = torch.arange(max(head.numel(), n - b // 2), n)
        s = view.group(view.attention(reduce="sum"), "sum")
        s[:, torch.cat([head, tail])] = float("inf")
        return Keep.from_topk(s, b, view.valid)
'''


def test_a_run_from_zero_capped_by_a_few_is_the_sinks() -> None:
    assert {"sinks", "recent"} <= set(computation(CAPPED).features)


def test_a_run_from_zero_capped_by_the_budget_is_no_sinks() -> None:
    src = CAPPED.replace("torch.arange(min(self.first, n))", "torch.arange(min(b // 2, n))")
    assert src != CAPPED
    assert "sinks" not in computation(src).features


FORGETFUL = HEAD + '''class Forgetful(EvictionMethod):
    def select(self, view: LayerView) -> Keep:
        now = view.group(view.attention(reduce="sum"), "sum")
        tally = view.recall("tally")
        tally = now if tally is None else 0.8 * tally + now
        view.remember("tally", tally)
        return Keep.from_topk(tally, view.budget, view.valid)
'''


def test_a_forgetting_tally_of_attention_is_a2sf_s_decay_not_h2o_s_accumulation() -> None:
    # (a decay stays an operation of its own beside a rule that does not name it: set 35's HashEvict port, whose tally
    # forgets, stays a family member; honest methods of sets 8, 10, 20 and 24 decay H2O's tally)
    assert {"accumulate", "decay"} <= set(computation(FORGETFUL).features)
    assert "A2SF" in _same(FORGETFUL, "C")
    assert "H2O" not in _same(FORGETFUL, "C")


FOLDED = HEAD + '''from harness.api import Rewrite


class Folded(EvictionMethod):
    query_window = 4

    def select(self, view: LayerView) -> Keep | Rewrite:
        a = view.group(view.attention(reduce="sum"), "sum")
        seen = view.recall("seen")
        steps = view.recall("steps")
        seen = a if seen is None else seen + a
        steps = torch.ones_like(a) if steps is None else steps + 1
        view.remember("seen", seen)
        view.remember("steps", steps)
        avg = seen / steps.clamp_min(1.0)
        ks, vs, ps = [], [], []
        for h in range(avg.shape[0]):
            keep = avg[h].topk(min(view.budget, avg.shape[1])).indices.sort().values
            into = (torch.searchsorted(keep, torch.arange(avg.shape[1]), right=True) - 1).clamp(min=0)
            w = avg[h]
            mass = torch.zeros(keep.numel()).index_add_(0, into, w)
            vals = torch.zeros(keep.numel(), view.values.shape[-1]).index_add_(0, into, view.values[h].float() * w[:, None])
            ks.append(view.keys[h][keep])
            vs.append((vals / mass.clamp_min(1e-6)[:, None]).to(view.values.dtype))
            ps.append(view.positions[h][keep])
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))
'''


def test_values_folded_by_average_attention_are_weightedkv() -> None:
    from reviewbench.priorart import load_index

    paper = load_index().by_name("WeightedKV")
    assert paper is not None and any("count_normalised" in opt for _, _, opt, _ in paper.rules())  # "average attention"
    assert "merge" in computation(FOLDED).features
    assert "WeightedKV" in _same(FOLDED, "C")


TAPER = HEAD + '''class Taper(EvictionMethod):
    question_queries = True

    def layer_budgets(self, mean_budget, n_tokens, model):
        n = len(model.attention_layers)
        raw = [1.4 - 0.8 * i / max(1, n - 1) for i in range(n)]
        return [max(1, int(mean_budget * r * n / sum(raw))) for r in raw]

    def select(self, view: LayerView) -> Keep:
        s = view.group(view.attention(reduce="mean"), "mean")
        return Keep.from_topk(s, view.budget, view.valid)
'''


def test_question_attention_with_budgets_shrinking_down_the_stack_is_pyramidinfer_on_board_a() -> None:
    feats = computation(TAPER).features
    assert {"question_queries", "layer_budget", "pyramid"} <= set(feats)
    assert "PyramidInfer" in _same(TAPER, "A")


def test_a_rule_naming_one_choice_of_queries_is_not_met_by_the_question_s() -> None:
    # PyramidKV names the pooled window of the closing queries, one choice: the question's queries are not it here
    assert "PyramidKV" not in _same(TAPER, "A")


def _novelty(credited: bool) -> float:
    from reviewbench.evidence.facts import EvidenceFacts, SimilarityFact
    from reviewbench.evidence.judge import novelty
    from reviewbench.rubric import load_rubric

    rubric = load_rubric(Path(__file__).resolve().parent.parent / "rubrics" / "default.toml")
    near = [SimilarityFact(reference="baseline:kvzip", implements="kvzip", via="behaviour", score=0.97,
                           credited=credited, credit_reason="cited in Builds on" if credited else "not attributed")]
    return novelty(EvidenceFacts(computed=[], behaviour=near, behaviour_measured=True), rubric).score


def test_keeping_a_credited_reference_s_tokens_is_the_credited_method_not_a_copy() -> None:
    assert _novelty(credited=True) == 1


def test_keeping_an_uncredited_reference_s_tokens_is_the_copy() -> None:
    assert _novelty(credited=False) == 0


# --- a score term beside a rule of rare operations (after set 35's LSH port with a decayed tally) -----------------

SIGN_TALLY = HEAD + '''class SignTally(EvictionMethod):
    bits = 24
    fade = 0.85

    def select(self, view: LayerView) -> Keep:
        if view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        planes = torch.randn(view.keys.shape[-1], self.bits, generator=torch.Generator().manual_seed(view.layer))
        kc = (view.keys.float() @ planes) > 0
        qc = (view.queries[:, -1:].float() @ planes) > 0
        qc = view.group(qc.float(), "mean") > 0.5
        same_bits = (kc == qc).float().sum(-1)
        tally = view.recall("tally") * self.fade + same_bits
        view.remember("tally", tally)
        return Keep.from_topk(tally, view.budget, view.valid)
'''
FADED_ATTENTION = HEAD + '''class FadedAttention(EvictionMethod):
    fade = 0.85

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention(reduce="sum"), "sum")
        tally = view.recall("tally") * self.fade + a
        view.remember("tally", tally)
        return Keep.from_topk(tally, view.budget, view.valid)
'''


def test_a_decayed_tally_of_lsh_agreement_is_still_the_lsh_rule() -> None:
    from reviewbench.evidence.priorart_evidence import source_order
    from reviewbench.flags.prior_art import computation_flags

    c = computation(SIGN_TALLY)
    assert {"hashing", "decay"} <= set(c.features)
    matches = computation_matches(c.features, BARE, c.paths, "C")
    assert "HashEvict" in [m.short_name for m in matches if m.level == "same"]
    assert source_order(matches)[0].short_name == "HashEvict"
    flags = computation_flags(matches, [], SIGN_TALLY)
    assert [f.flag for f in flags] == ["UNDISCLOSED_PRIOR_ART"] and "HashEvict" in flags[0].explanation


def test_a_decayed_attention_tally_is_no_rule_of_rare_operations() -> None:
    # attention summed over the calls with a fade is a family of its own (A2SF-like), not H2O itself: the term
    # beside a rule stays the author's where the rule is attention or a tally many methods share
    assert "H2O" not in _same(FADED_ATTENTION, "C")
