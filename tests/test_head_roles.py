"""Streaming and retrieval heads seen in the kept sets (``behaviour.HeadRoles``, ``flags.prior_art.head_role_flags``).

The published split of a layer's heads into streaming heads (the opening tokens and the newest run) and heads that
keep by content (DuoAttention, RazorAttention, and the learned-gate papers after them) can be written in any idiom
and with any per-head statistic; what it keeps cannot hide it. The threshold (rubrics/default.toml
``head_roles_split``) was set on the reference members alone (test below); the methods under
tests/data/head_roles/ were written for these tests (two ports in different idioms, one honest method whose heads
all keep by content with budgets of their own), none is a held-out or calibration bundle.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from reviewbench.evidence.behaviour import Behaviour, HeadRoles, head_roles
from reviewbench.evidence.facts import EvidenceFacts
from reviewbench.evidence.judge import novelty
from reviewbench.flags.prior_art import head_role_flags, head_role_papers
from reviewbench.rubric import RUBRICS_DIR, EvidenceRules, load_rubric

DATA = Path(__file__).resolve().parent / "data" / "head_roles"
RULES = EvidenceRules()
N = 200


def _row(idx) -> np.ndarray:
    m = np.zeros(N, dtype=bool)
    m[list(idx)] = True
    return m


def _streaming(k: int, sinks: int = 4) -> np.ndarray:
    return _row([*range(sinks), *range(N - (k - sinks), N)])


def _content(k: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return _row(rng.choice(N - 20, size=k, replace=False) + 10)


def _behaviour(rows_for) -> Behaviour:
    """rows_for(view, k) -> the (heads, N) masks of one view at budget k tokens."""
    budgets = [0.1, 0.3]
    masks = {(f"{b:g}", v): np.stack(rows_for(v, int(b * N))) for b in budgets for v in ("p0|8", "p1|8", "p2|23")}
    return Behaviour.from_masks(masks, budgets)


def test_a_split_of_the_heads_is_seen_and_a_whole_layer_rule_is_not():
    split = head_roles(_behaviour(lambda v, k: [_streaming(k), _streaming(k), _content(k, 1), _content(k, 2)]),
                       "bank")
    assert split.split_share == 1.0 and split.streaming_heads == 0.5 and split.views == 3
    window = head_roles(_behaviour(lambda v, k: [_streaming(k, sinks=0)] * 4), "bank")
    assert window.split_share == 0.0 and window.streaming_heads == 1.0  # StreamingLLM: every head, no split
    per_view = head_roles(_behaviour(lambda v, k: [_streaming(k)] * 4 if v == "p0|8" else
                                     [_content(k, 3), _content(k, 4)] * 2), "bank")
    assert per_view.split_share == 0.0  # a rule that changes by prompt (KVzip without its repeat) is no head split
    # a head that streams at one budget and picks by content at another is no streaming head
    wavering = head_roles(_behaviour(lambda v, k: [_streaming(k) if k < 40 else _content(k, 5), _content(k, 6)]),
                          "bank")
    assert wavering.split_share == 0.0
    # a gap in the newest run, or no newest token, is content
    gap = head_roles(_behaviour(lambda v, k: [_row([*range(4), *range(N - k + 3, N - 1), 50]), _content(k, 7)]),
                     "bank")
    assert gap.split_share == 0.0


def _roles(share: float) -> list[HeadRoles]:
    return [HeadRoles(source="benchmark", views=12, split_share=share, streaming_heads=0.5, summary="measured")]


UNCREDITED = ("# Reach layout\n\n## Idea\nHeads that only look nearby read a rolling span; the far-reaching ones pick "
              "tokens by pooled window attention (SnapKV, Li et al. 2024, arXiv 2404.14469, whose pooling we use).\n")
CREDITED = UNCREDITED + ("\n## Builds on\n- DuoAttention (Xiao et al., 2024, arXiv 2410.10819): its split of the "
                         "heads into streaming and retrieval heads, decided here per prompt by a statistic.\n")
FILLER = {"attention": 3, "window_queries": 3, "pooling": 5, "sinks": 4, "recent": 4, "head_average": 3}


def test_an_uncredited_split_is_a_proof_naming_the_family_and_a_credited_one_raises_nothing():
    names = [p.short_name for p in head_role_papers()]
    assert {"DuoAttention", "RazorAttention"} <= set(names)
    [f] = head_role_flags(_roles(0.6), FILLER, UNCREDITED, ("class ReachLayout", 9), RULES)
    assert f.flag == "UNDISCLOSED_PRIOR_ART" and f.strength == "proof" and f.raised_by == "evidence:behaviour"
    assert "DuoAttention" in f.explanation and "RazorAttention" in f.explanation and f.location == "method.py:9"
    assert head_role_flags(_roles(0.6), FILLER, CREDITED, ("class ReachLayout", 9), RULES) == []
    assert head_role_flags(_roles(RULES.head_roles_split / 2), FILLER, UNCREDITED, ("c", 1), RULES) == []
    # a mechanism of its own beside the split: the split is a part, an indication for a judge
    [g] = head_role_flags(_roles(0.6), {**FILLER, "key_norm": 7}, UNCREDITED, ("c", 1), RULES)
    assert g.strength == "indication" and "key_norm" in g.explanation


def test_novelty_of_a_bare_split_is_at_most_one_and_of_a_split_with_its_own_part_at_most_two():
    rubric = load_rubric(RUBRICS_DIR / "default.toml")
    papers = [p.short_name for p in head_role_papers()]
    assert novelty(EvidenceFacts(head_roles="same", head_role_papers=papers), rubric).score <= 1
    assert novelty(EvidenceFacts(head_roles="family", head_role_papers=papers), rubric).score <= 2
    assert novelty(EvidenceFacts(), rubric).score == 3  # nothing measured near: the measured ceiling


@pytest.fixture(scope="module")
def bank():
    from reviewbench.evidence.behaviour import all_members, fingerprints

    specs = [str((DATA / d).resolve()) for d in ("port_mask", "port_loop", "honest_adaptive")]
    return fingerprints([*all_members(), *specs]), specs


def test_no_reference_member_splits_its_heads_so_the_threshold_stands_clear_of_them(bank):
    from reviewbench.evidence.behaviour import all_members

    res, _ = bank
    assert not res["errors"]
    rules = load_rubric(RUBRICS_DIR / "default.toml").evidence
    worst = max((head_roles(Behaviour(res["kept"][s], res["views"], res["budgets"]), "bank").split_share, s)
                for s in all_members())
    assert worst[0] * 4 <= rules.head_roles_split, worst  # the nearest (FastGen's, head-adaptive itself) 0.04


def test_ports_written_in_two_idioms_split_their_heads_on_the_bank_and_an_honest_adaptive_method_does_not(bank):
    res, (mask, loop, honest) = bank
    rules = load_rubric(RUBRICS_DIR / "default.toml").evidence
    share = {s: head_roles(Behaviour(res["kept"][s], res["views"], res["budgets"]), "bank").split_share
             for s in (mask, loop, honest)}
    assert share[mask] >= rules.head_roles_split and share[loop] >= rules.head_roles_split, share
    assert share[honest] == 0.0, share


def test_a_content_rule_the_code_computes_is_only_an_indication_where_every_scored_head_keeps_positions():
    """Where the scored calls show every head keeping only the opening tokens and the newest run at every budget,
    a rule that ranks by content did not choose what is kept (its operations sized a window at most: a per-head
    span set by how much attention it covers): an indication, not a proof. The bank alone never weakens the code
    (a method can tell the bank apart), and a rule of positions is what such sets are."""
    from reviewbench.evidence.priorart_evidence import computation_matches
    from reviewbench.flags.prior_art import computation_flags

    desc = "# X\n\n## Method summary\nOur own rule.\n"
    src = "class X:\n    pass\n"
    coverage = [m for m in computation_matches({"attention": 1, "attention_coverage": 1, "sinks": 1, "recent": 1},
                                               desc) if m.level == "same"]
    assert coverage and computation_flags(coverage, [], src)[0].strength == "proof"
    every = HeadRoles(source="benchmark", views=8, split_share=0.0, streaming_heads=1.0, summary="all stream")
    [f] = computation_flags(coverage, [], src, RULES, (), [every])
    assert f.strength == "indication" and "no ranking by content" in f.explanation
    on_bank = every.model_copy(update={"source": "bank"})
    assert computation_flags(coverage, [], src, RULES, (), [on_bank])[0].strength == "proof"
    some = every.model_copy(update={"streaming_heads": 0.5})
    assert computation_flags(coverage, [], src, RULES, (), [some])[0].strength == "proof"
