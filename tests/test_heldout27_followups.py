"""Follow-ups of held-out set 27's key (not held out; each written fresh here, with an honest neighbour):
a Method summary that weighs its score by the attention the queries pay each token while the code reads no query is
a misstatement; "not split evenly", "gives up slots", "depends on" say a budget varies; a misstatement's line is the
line its sentence starts on; on board B_offline the reconstruction pass is a rule's queries where the rule lets any
of several choices of queries stand (Keyformer), not where it names one (SnapKV's window)."""

from __future__ import annotations

from reviewbench.evidence.computation import computation
from reviewbench.evidence.priorart_evidence import computation_matches
from reviewbench.evidence.stated import states_variation
from reviewbench.flags.misstated import _line_of, misstated_flags

NORMS = '''
import torch
from harness import EvictionMethod, Keep, LayerView


class Ridges(EvictionMethod):
    name = "ridges"
    query_window = 0

    def select(self, view: LayerView) -> Keep:
        spread = view.keys.float().std(dim=-1) + view.values.float().std(dim=-1)
        share = torch.softmax(spread, dim=-1)
        return Keep.from_topk(share, view.budget, view.valid)
'''
WITH_ATTENTION = NORMS.replace("query_window = 0", "query_window = 32").replace(
    "        share = torch.softmax(spread, dim=-1)\n",
    "        share = torch.softmax(spread, dim=-1) * view.group(view.attention(reduce=\"sum\"), \"mean\")\n")


def _desc(method: str) -> str:
    return ("# Ridges\n\n## Idea\nTokens that stand out from their neighbours carry the text.\n\n## Method\n"
            f"{method}\n")


CLAIM = ("Each token's spread across channels of its key and value is turned into a softmax share; that share is\n"
         "multiplied by the attention the closing 32 rows pay the token, so a token nothing reads is never kept.")


def test_a_score_said_to_be_weighted_by_attention_that_reads_no_query_is_misstated() -> None:
    flags = misstated_flags(_desc(CLAIM), NORMS)
    assert flags and flags[0].strength == "proof" and "attention" in flags[0].explanation, flags
    assert flags[0].location == "DESCRIPTION.md:7"  # the line the sentence starts on, not the first
    # the code computes the attention it states
    assert not misstated_flags(_desc(CLAIM), WITH_ATTENTION)
    # a query-free method that says so, and names attention-weighted methods as other work
    honest = ("Each token's spread across channels of its key and value is turned into a softmax share. No attention\n"
              "is computed, unlike methods whose scores are weighted by the attention each token receives.")
    assert not [f for f in misstated_flags(_desc(honest), NORMS) if "attention weighting" in f.explanation]


def test_words_that_say_a_budget_varies() -> None:
    for s in ("The budget is not split evenly across heads.",
              "Focused heads give up slots to heads whose attention is spread.",
              "Each head's share depends on how spread its attention is.",
              "Each head's share follows how many tokens it needs."):
        assert states_variation(s), s
    for s in ("Every head keeps the same share of the budget.", "Each head's share is the layer budget."):
        assert not states_variation(s), s


def test_a_sentence_over_two_lines_is_found_on_its_first() -> None:
    text = "# T\n\n## Method\nFirst line of a sentence that\nruns on. Another.\n"
    assert _line_of(text, "First line of a sentence that\nruns on.") == 4


GUMBEL = '''
import torch
from harness import EvictionMethod, Keep, LayerView


class Jitter(EvictionMethod):
    name = "jitter"
    reconstruction_queries = True

    def select(self, view: LayerView) -> Keep:
        g = torch.Generator().manual_seed(view.layer)
        logits = torch.einsum("hnd,htd->hnt", view.queries.float().view(view.n_kv_heads, -1, view.keys.shape[-1]),
                              view.keys.float()) * view.model.scale
        SCORE
        score[:, -max(1, view.budget // 4):] = float("inf")
        return Keep.from_topk(score, view.budget, view.valid)
'''


def test_the_pass_is_a_rules_queries_where_it_lets_any_choice_stand() -> None:
    noisy = GUMBEL.replace("SCORE", "u = torch.rand(logits.shape, generator=g).clamp(1e-9, 1 - 1e-9)\n        "
                                    "score = torch.softmax(logits - torch.log(-torch.log(u)), dim=-1).sum(dim=1)")
    c = computation(noisy)
    same = {m.short_name for m in computation_matches(c.features, "", c.paths, "B_offline") if m.level == "same"}
    assert "Keyformer" in same, same
    # the pass's attention pooled: no window rule (SnapKV's) is read off the pass by this
    pooled = GUMBEL.replace("SCORE", "score = torch.nn.functional.max_pool1d(torch.softmax(logits, dim=-1).sum(dim=1)"
                                     "[:, None], 7, 1, 3)[:, 0]")
    c = computation(pooled)
    same = {m.short_name for m in computation_matches(c.features, "", c.paths, "B_offline") if m.level == "same"}
    assert "SnapKV" not in same, same


def test_a_bar_on_the_pass_attention_is_no_noised_or_barred_rule_of_the_pass() -> None:
    # an honest KVzip variant: the pass's maximum attention, near-duplicates of a far better token moved back by a bar
    barred = GUMBEL.replace("SCORE", "a = torch.softmax(logits, dim=-1)\n        score = a.amax(dim=1)\n        "
                                     "score = torch.where(score > 0.5 * score.amax(-1, keepdim=True), score, score * 0.5)")
    c = computation(barred)
    same = {m.short_name for m in computation_matches(c.features, "", c.paths, "B_offline") if m.level == "same"}
    assert not same & {"Scissorhands", "Keyformer"}, same


def test_each_querys_few_channel_retrievals_counted_are_a_retrieval_rules_port() -> None:
    src = GUMBEL.replace("        g = torch.Generator().manual_seed(view.layer)\n", "").replace(
        "logits = torch.einsum", "q = view.queries.float().view(view.n_kv_heads, -1, view.keys.shape[-1])\n        "
        "lanes = (q.abs().mean(1) * view.keys.float().abs().mean(1)).topk(8, dim=-1).indices\n        "
        "qs = q.gather(-1, lanes[:, None, :].expand(-1, q.shape[1], -1))\n        "
        "ks = view.keys.float().gather(-1, lanes[:, None, :].expand(-1, view.keys.shape[1], -1))\n        "
        "approx = torch.einsum(\"hnd,htd->hnt\", qs, ks)\n        logits = torch.einsum").replace(
        "SCORE", "picks = approx.topk(16, dim=-1).indices\n        score = torch.zeros(approx.shape[0], approx.shape[2])\n"
                 "        score.scatter_add_(1, picks.flatten(1), torch.ones_like(picks.flatten(1), dtype=torch.float))")
    c = computation(src)
    assert {"channel_selection", "query_votes"} <= set(c.features), sorted(c.features)
    same = {m.short_name for m in computation_matches(c.features, "", c.paths, "B_offline") if m.level == "same"}
    assert "Double Sparsity" in same, same
