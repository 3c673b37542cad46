"""Issue 23: a credit covers the ruled paper the code matches when the credited paper's own index entry (or rule)
states the same computation — and never because the description says so.

Code and descriptions written fresh for these tests (not a held-out case).
"""

from __future__ import annotations

from pathlib import Path

from reviewbench.evidence.computation import computation
from reviewbench.evidence.facts import ComputedFact, EvidenceFacts
from reviewbench.evidence.judge import novelty
from reviewbench.evidence.priorart_evidence import computation_matches, covers, credited_papers, prior_art
from reviewbench.flags.prior_art import computation_flags
from reviewbench.priorart import Paper, load_index
from reviewbench.rubric import load_rubric

HEAD = "import torch\nimport torch.nn.functional as F\n\nfrom harness.api import EvictionMethod, Keep, LayerView\n\n\n"

# the newest query's attention, one set per layer, budgets shrinking linearly with depth (names say nothing)
SHRINKING = HEAD + '''class Quill(EvictionMethod):
    query_window = 1

    def layer_budgets(self, mean_budget: int, n_tokens: int, model) -> list[int]:
        n = len(model.attention_layers)
        return [min(n_tokens, int(mean_budget * (1.6 - 1.2 * i / max(1, n - 1)))) for i in range(n)]

    def select(self, view: LayerView) -> Keep:
        s = view.attention()[:, -1].mean(dim=0, keepdim=True).expand(view.keys.shape[0], -1)
        return Keep.from_topk(s, view.budget, view.valid)
'''
# pooled window attention per head (SnapKV's rule)
POOLED = HEAD + '''class Reed(EvictionMethod):
    query_window = 32

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention().sum(dim=1), "mean")
        a = F.max_pool1d(a.unsqueeze(1), 7, stride=1, padding=3).squeeze(1)
        return Keep.from_topk(a, view.budget, view.valid)
'''


def _desc(summary: str, relation: str = "None.", builds: str = "None.") -> str:
    return (f"# Port\n\n## Idea\nAn idea.\n\n## Method summary\n{summary}\n\n## Relation to prior work\n{relation}\n\n"
            f"## Evidence\nNone.\n\n## Limitations\nSome.\n\n## Builds on\n{builds}\n")


def _paper(name: str) -> Paper:
    return next(p for p in load_index().papers if p.short_name == name)


def _rubric():
    return load_rubric(Path(__file__).resolve().parent.parent / "rubrics" / "default.toml")


def _novelty(ev) -> float:
    facts = EvidenceFacts(computed=[ComputedFact(short_name=c.short_name, title=c.title, arxiv=c.arxiv, level=c.level,
                                                 ops=list(c.matched), extra=c.extra, credited=c.credited)
                                    for c in ev.computed[:4]])
    return novelty(facts, _rubric()).score


def test_a_credited_port_of_a_paper_stating_the_same_computation_is_not_an_uncredited_port():
    d = _desc("Progressive layer-wise pruning after LazyLLM: the last token's attention, averaged over heads, "
              "ranks the tokens, and deeper layers keep fewer.",
              relation="This is a port of LazyLLM (arXiv 2407.14057) to eviction.",
              builds="LazyLLM (Fu et al., 2024, arXiv 2407.14057).")
    ev = prior_art(SHRINKING, "", "", d)
    assert ev.computed and all(m.credited for m in ev.computed if m.level == "same"), \
        [(m.short_name, m.credit.reason) for m in ev.computed]
    assert computation_flags(ev.computed, [], SHRINKING) == []
    assert _novelty(ev) <= 1  # a credited port is still a published method


def test_crediting_an_unrelated_paper_covers_nothing():
    """A SnapKV port that credits a quantisation paper, even saying it takes the scoring from there."""
    for name, arxiv in [("KIVI", _paper("KIVI").arxiv), ("GEAR", _paper("GEAR").arxiv)]:
        d = _desc("Pooled window attention ranks the tokens of each head.",
                  relation=f"We build on {name} (arXiv {arxiv}); the window scoring and pooling are taken from it.",
                  builds=f"{name} (arXiv {arxiv}): window attention scoring and pooling.")
        assert any(p.short_name == name for p, _ in credited_papers(d))
        ev = prior_art(POOLED, "", "", d)
        same = [m for m in ev.computed if m.level == "same"]
        assert same and same[0].short_name == "SnapKV" and not same[0].credited
        flags = computation_flags(ev.computed, [], POOLED)
        assert [f.flag for f in flags] == ["UNDISCLOSED_PRIOR_ART"] and flags[0].strength == "proof"
        assert "SnapKV" in flags[0].explanation


def test_a_mere_mention_or_contrast_of_the_covering_paper_is_no_credit():
    d = _desc("The last token's attention ranks tokens; deeper layers keep fewer.",
              relation="Unlike LazyLLM (arXiv 2407.14057), nothing is revived.")
    ev = prior_art(SHRINKING, "", "", d)
    same = [m for m in ev.computed if m.level == "same"]
    assert same and not any(m.credited for m in same)
    assert computation_flags(ev.computed, [], SHRINKING)


def test_covers_by_the_credited_entry_not_by_the_description():
    ruled = Paper(short_name="Ruled", title="r", ops=["attention", "window_queries", "pooling"])
    matched = {"attention": 3, "window_queries": 0, "pooling": 4}
    same_text = Paper(short_name="Prose", title="Prose: smoothing what the question sees",
                      key_idea="Attention from an observation window of recent queries, max-pooled along tokens.")
    assert covers(same_text, ruled, matched)
    part_text = Paper(short_name="Half", title="Half", key_idea="Attention of an observation window ranks tokens.")
    assert covers(part_text, ruled, matched) is None  # says nothing of pooling
    unrelated = Paper(short_name="Bits", title="Bits", key_idea="Keys quantised per channel at 2 bits.",
                      keywords=["quantization", "residual"])
    assert covers(unrelated, ruled, matched) is None
    # a ruled credited paper covers a rule that is part of its own (a strict subset), not the other way round
    superset = Paper(short_name="Super", title="s", ops=["attention", "window_queries", "pooling", "layer_budget"])
    assert covers(superset, ruled, matched)
    assert covers(ruled, superset, {**matched, "layer_budget": 9}) is None
    assert covers(ruled, ruled, matched) is None


def test_the_real_index_entries_cover_as_their_computations_say():
    snap, pk = _paper("SnapKV"), _paper("PyramidKV")
    matched = {"attention": 1, "window_queries": 0, "pooling": 2}
    assert covers(pk, snap, matched)  # PyramidKV's rule holds SnapKV's
    assert covers(snap, pk, {**matched, "layer_budget": 3, "pyramid": 4}) is None
    assert covers(_paper("KIVI"), snap, matched) is None


def test_a_covered_match_says_whose_credit_covers_it():
    d = _desc("Scores as below.", builds="LazyLLM (arXiv 2407.14057).")
    ms = computation_matches(computation(SHRINKING).features, d)
    covered = [m for m in ms if m.credited and m.short_name != "LazyLLM"]
    assert covered
    for m in covered:
        assert "covered by the credit of LazyLLM" in m.credit.reason and m.credit.quote


# each block's keys summed into a buffer by a block id (index_add_), divided by the block sizes, and the newest query
# against those means: the query against block summaries, not scores summed per block (written fresh)
BLOCK_MEANS = HEAD + '''class Sieve(EvictionMethod):
    query_window = 1
    size = 8

    def select(self, view: LayerView) -> Keep:
        k = view.keys[0]
        n = k.shape[0]
        nb = -(-n // self.size)
        which = torch.arange(n) // self.size
        acc = torch.zeros(nb, k.shape[-1]).index_add_(0, which, k)
        acc = acc / torch.bincount(which, minlength=nb).clamp_min(1)[:, None].float()
        s = view.queries[0, -1] @ acc.T
        s = s[which].unsqueeze(0).expand(view.keys.shape[0], -1)
        return Keep.from_topk(s, view.budget, view.valid)
'''


def test_keys_summed_by_block_id_are_block_summaries_not_block_scores():
    f = computation(BLOCK_MEANS).features
    assert "block_keys" in f and "block_scores" not in f
    # scores summed by a block id stay a score per block
    summed = BLOCK_MEANS.replace("index_add_(0, which, k)", "index_add_(0, which, view.attention()[0].sum(0)[:, None])")
    assert "block_scores" in computation(summed).features


def test_an_entry_stating_block_mean_keys_states_block_keys():
    from reviewbench.evidence.stated import implied_features

    assert "block_keys" in implied_features("the context cut into blocks represented by the mean of their keys")
    assert "block_keys" in implied_features("chunks scored by the query against their representative keys")
    assert "block_keys" not in implied_features("keep keys least similar to the mean key of the cache")
