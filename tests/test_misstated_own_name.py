"""A denial the description makes of the method by its own name is a statement of what it does, whichever section
holds it (written fresh after held-out set 34's key; not held out)."""

from __future__ import annotations

from reviewbench.flags.misstated import contradicted_denials

CODE = '''import torch

from harness.api import EvictionMethod, Keep, LayerView


class Ridge(EvictionMethod):
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        q = view.queries.float().mean(dim=1)
        _, _, vh = torch.linalg.svd(view.queries.float(), full_matrices=False)
        axis = vh[:, 0]
        k = view.keys.float().repeat_interleave(view.model.group_size, dim=0)
        score = view.group((k * axis[:, None, :]).sum(-1), "mean")
        return Keep.from_topk(score, view.budget, view.valid)
'''


def _desc(idea: str) -> str:
    return ("# Ridge Line\n\n## Idea\n" + idea + "\n\n## Method summary\nEach key is scored by its projection on one "
            "axis per head; the largest stay.\n\n## Relation to prior work\nNone.\n")


def test_a_denial_in_the_idea_by_the_methods_own_name_is_strict() -> None:
    found = contradicted_denials(_desc("Ridge Line reads the axis off the cached keys alone, with no queries at "
                                       "all, so it runs before any question."), CODE)
    assert [(d.what, d.strict) for d in found] == [("no queries", True)]


def test_a_denial_in_the_idea_without_the_name_stays_an_indication() -> None:
    found = contradicted_denials(_desc("Keys carry their own structure: an axis can be read with no queries at "
                                       "all, before any question."), CODE)
    assert [(d.what, d.strict) for d in found] == [("no queries", False)]
