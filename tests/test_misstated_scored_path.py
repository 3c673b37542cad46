"""Issue 23: a stated mechanism is looked for where the method is scored, and a memory across evictions is a
mechanism of its own.

- What only a design guard's early return computes (the newest tokens kept when there are no queries or when
  everything fits) does not show a mechanism the description states for the method.
- "Scores accumulated across evictions with a decay" states a score carried from call to call: code that keeps
  nothing between calls lacks it, code that remembers has it; a sum over one call's rows is no such claim.
- A description without the arena's sections that says "This is a port, not a new method" declares a port.

Code and sentences written fresh for these tests (no held-out case).
"""

from __future__ import annotations

from reviewbench.evidence.computation import computation, scored_features
from reviewbench.evidence.priorart_evidence import declared_port
from reviewbench.flags.misstated import misstated_flags

HEAD = "import torch\n\nfrom harness.api import EvictionMethod, Keep, LayerView\n\n\n"

# window attention per head; the newest tokens only on the guard's return (no queries)
GUARDED = HEAD + '''class Beacon(EvictionMethod):
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        s = view.group(view.attention(reduce="sum"), "mean")
        return Keep.from_topk(s, view.budget, view.valid)
'''

# the same, with the newest 24 kept on the scored path too
KEEPS_NEWEST = GUARDED.replace(
    '        s = view.group(view.attention(reduce="sum"), "mean")\n',
    '        s = view.group(view.attention(reduce="sum"), "mean")\n'
    '        s = s.masked_fill(view.positions >= view.positions.max(dim=-1, keepdim=True).values - 24, float("inf"))\n')

# a score remembered per layer and decayed between calls
REMEMBERS = HEAD + '''class Ember(EvictionMethod):
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        s = view.group(view.attention(reduce="sum"), "mean")
        old = view.recall("heat")
        if old is not None and old.shape == s.shape:
            s = s + 0.8 * old
        view.remember("heat", s)
        return Keep.from_topk(s, view.budget, view.valid)
'''

DESC = "# Beacon\n\n## Idea\nKeep what the newest queries read.\n\n## Method summary\n- {}\n\n## Limitations\nUntested.\n"


def _flags(sentence: str, source: str) -> list[str]:
    return [f.strength for f in misstated_flags(DESC.format(sentence), source) if f.flag == "MISSTATED_METHOD"]


def test_the_guards_return_is_not_the_scored_path() -> None:
    # (the harness's fallback adds no operation to the whole reading either, since set 34's key)
    assert "recent" not in computation(GUARDED).features
    assert "recent" not in scored_features(GUARDED)
    assert "recent" in scored_features(KEEPS_NEWEST)


def test_recency_only_on_the_guard_is_not_computed() -> None:
    said = "The most recent tokens are always kept beside the attended ones."
    assert _flags(said, GUARDED)
    assert not _flags(said, KEEPS_NEWEST)


def test_a_memory_across_evictions_without_state_is_a_proof() -> None:
    said = "Scores are accumulated across evictions with a decay of 0.8 per round."
    assert _flags(said, GUARDED) == ["proof"]
    assert not _flags(said, REMEMBERS)


def test_a_sum_over_one_calls_rows_is_no_memory_claim() -> None:
    assert not _flags("Attention is summed over the window's rows and averaged over the group.", GUARDED)


def test_a_port_declared_under_headings_of_the_authors_own() -> None:
    desc = ("# Window attention, ported (board A)\n\n**This is a port, not a new method.** It implements SnapKV "
            "(arXiv:2404.14469) for the arena.\n\n## What it computes\n- Window attention, pooled.\n\n"
            "## Departures\n- None.\n")
    port = declared_port(desc)
    assert port is not None and port.short_name == "SnapKV"
    contrast = ("# Window attention with decay (board A)\n\nUnlike SnapKV, the window's attention decays with age; "
                "this is our own rule.\n\n## What it computes\n- Decayed window attention.\n")
    assert declared_port(contrast) is None
