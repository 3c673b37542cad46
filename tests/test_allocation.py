"""Budgets said to vary across heads or layers, against what the method keeps (``behaviour.Allocation``,
``flags.misstated``).

"Heads get budgets in proportion to their entropy" is words until the kept sets show it: a method whose heads keep the
same number of tokens in every measured call does not share its budget out, whatever its code computes on the way.
The methods under tests/data/allocation/ and the descriptions here were written for these tests; no held-out or
calibration case set ``ALLOCATION_MIN_CALLS`` (four calls: one call can be a coincidence of one prompt).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from reviewbench.evidence.behaviour import Allocation, Behaviour, allocation
from reviewbench.flags.misstated import ALLOCATION_MIN_CALLS, misstated_flags

DATA = Path(__file__).resolve().parent / "data"
N = 120


def _masks(counts_for) -> Behaviour:
    """counts_for(view) -> the number of tokens each head keeps (the newest ones) in that view."""
    budgets = [0.1, 0.3]
    masks = {}
    for b in budgets:
        for v in ("p0/L3", "p0/L9", "p1/L3", "p1/L9"):
            rows = np.zeros((4, N), dtype=bool)
            for h, k in enumerate(counts_for(v, int(b * N))):
                rows[h, N - k:] = True
            masks[(f"{b:g}", v)] = rows
    return Behaviour.from_masks(masks, budgets)


def test_allocation_counts_calls_whose_heads_or_layers_keep_different_numbers():
    uniform = allocation(_masks(lambda v, k: [k] * 4), "bank")
    assert (uniform.head_views, uniform.head_uneven, uniform.layer_groups, uniform.layer_uneven) == (8, 0, 4, 0)
    heads = allocation(_masks(lambda v, k: [k - 3, k + 3, k, k]), "bank")
    assert heads.head_uneven == 8 and heads.layer_uneven == 0
    layers = allocation(_masks(lambda v, k: [k * 2] * 4 if v.endswith("L3") else [k // 2] * 4), "bank")
    assert layers.head_uneven == 0 and layers.layer_uneven == 4
    whole = allocation(_masks(lambda v, k: [N] * 4), "bank")
    assert whole.head_views == 0 and whole.layer_groups == 0  # keeping everything says nothing


SRC = (DATA / "allocation" / "entropy_told" / "method.py").read_text()


def _desc(summary: str, idea: str = "Heads differ.") -> str:
    return f"# Entropy budgets\n\n## Idea\n{idea}\n\n## Method summary\n{summary}\n"


def _alloc(source: str, calls: int, uneven: int) -> Allocation:
    return Allocation(source=source, head_views=calls, head_uneven=uneven, layer_groups=calls, layer_uneven=uneven,
                      summary="")


VARIES = ("Each head's budget is set in proportion to how peaked its window attention is, so heads keep different "
          "numbers of tokens.")


def _proofs(desc: str, alloc) -> list:
    return [f for f in misstated_flags(desc, SRC, allocation=alloc) if f.strength == "proof"]


def test_budgets_said_to_vary_across_heads_but_equal_in_every_measured_call_are_a_proof():
    proofs = _proofs(_desc(VARIES), [_alloc("benchmark", 48, 0), _alloc("bank", 96, 0)])
    assert len(proofs) == 1 and "per-head budgets" in proofs[0].explanation
    assert "same number of tokens in every one of 48 calls on the scored calls and 96 calls on the behaviour bank" \
        in proofs[0].explanation
    assert proofs[0].location.startswith("DESCRIPTION.md:")


@pytest.mark.parametrize("alloc", [
    [_alloc("benchmark", 48, 3), _alloc("bank", 96, 0)],  # one source shows heads sharing the budget out
    [_alloc("bank", 96, 5)],
    [_alloc("bank", ALLOCATION_MIN_CALLS - 1, 0)],  # too few calls to say
    [],  # nothing measured: words alone
])
def test_no_proof_where_a_measured_source_shows_uneven_heads_or_too_little_was_measured(alloc):
    assert not _proofs(_desc(VARIES), alloc)


def test_a_budget_applied_per_head_or_stated_in_the_idea_only_is_no_proof():
    same = [_alloc("bank", 96, 0)]
    # "a per-layer budget" says where a budget applies, not that it varies
    assert not _proofs(_desc("Per-layer budget, no global threshold; top-k per head by window attention."), same)
    assert not _proofs(_desc("Top-k per head by window attention.", idea=VARIES), same)
    # another work's allocation, said in the passive
    assert not _proofs(_desc("Entropy has been used before for budget allocation across heads (CAKE); we rank "
                             "tokens by window attention."), same)


def test_layers_said_to_keep_fewer_with_depth_but_equal_everywhere_are_a_proof():
    desc = _desc("Budgets shrink with depth: deeper layers keep fewer tokens; per head, top-k by window attention.")
    assert _proofs(desc, [_alloc("bank", 96, 0)])
    assert not _proofs(desc, [_alloc("bank", 96, 4)])


@pytest.fixture(scope="module")
def bank():
    from reviewbench.evidence.behaviour import all_members, fingerprints

    specs = [str((DATA / d).resolve()) for d in ("allocation/entropy_told", "head_roles/honest_adaptive")]
    return fingerprints([*all_members(), *specs]), specs


def test_the_bank_shows_equal_heads_for_an_unused_share_and_uneven_ones_for_a_shared_budget(bank):
    res, (told, shared) = bank
    assert not res["errors"]
    a = {s: allocation(Behaviour(res["kept"][s], res["views"], res["budgets"]), "bank") for s in (told, shared)}
    assert a[told].head_views >= ALLOCATION_MIN_CALLS and a[told].head_uneven == 0, a[told]
    assert a[shared].head_uneven > 0, a[shared]
    pyramid = next(s for s in res["kept"] if "pyramidkv" in s)
    assert allocation(Behaviour(res["kept"][pyramid], res["views"], res["budgets"]), "bank").layer_uneven > 0
    flags = misstated_flags(_desc(VARIES), SRC, allocation=[a[told]])
    assert [f.strength for f in flags] == ["proof"]
