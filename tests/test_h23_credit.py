"""Issue 23 (set 6 follow-ups): a declared port caps novelty; "query-free" / "attention-free" against code whose score
reads the queries; an author-year mention names the paper whose year it gives; "on par" and credit wording.

Every snippet and sentence here is written for these tests (none is a held-out case or a sentence of one).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reviewbench.evidence.facts import ComputedFact, EvidenceFacts, SimilarityFact
from reviewbench.evidence.gather import gather_facts
from reviewbench.evidence.judge import novelty, prior_work
from reviewbench.evidence.priorart_evidence import credit, declared_port
from reviewbench.priorart import load_index
from reviewbench.rubric import load_rubric

ROOT = Path(__file__).resolve().parent.parent


def _rubric():
    return load_rubric(ROOT / "rubrics" / "default.toml")


def _desc(idea: str, builds_on: str = "") -> str:
    return (f"# Some eviction rule\n\n## Idea\n{idea}\n\n## Method summary\n- A score per token, top-k kept.\n\n"
            f"## Limitations\nNone measured.\n\n## Builds on\n{builds_on or '- nothing'}\n")


# --- 1. a declared port: the description says the whole method is a published one ------------------------------

PORT_SENTENCES = [
    ("This is a port of MagicPIG (arXiv 2410.16179) to decode-time eviction.", "MagicPIG"),
    ("A faithful reimplementation of SnapKV for this harness.", "SnapKV"),
    ("We port TOVA to board C unchanged.", "TOVA"),
    ("GemFilter, ported as one-shot eviction.", "GemFilter"),
    ("This is GemFilter's selection rule, unchanged except for the deviation above.", "GemFilter"),
    ("The method is a reproduction of H2O (Zhang et al., 2023) on the harness's interface.", "H2O"),
    ("We reimplement Scissorhands' persistence-of-importance rule as published.", "Scissorhands"),
    ("Our method is adapted from KeyDiff (arXiv 2504.15364) to the layer view.", "KeyDiff"),
    ("An adaptation of PyramidKV to board B, with the paper's defaults.", "PyramidKV"),
    ("We implement Keyformer as described in its paper.", "Keyformer"),
    ("This submission reproduces StreamingLLM on board C.", "StreamingLLM"),
    ("A straightforward port of Ada-KV's head-wise allocation method to the harness.", "Ada-KV"),
    ("A port of the token selection algorithm of TOVA to decode time.", "TOVA"),
    ("An implementation of the eviction policy of Scissorhands, with its defaults.", "Scissorhands"),
]

NOT_A_PORT = [
    "We build on SnapKV's observation window and add a redundancy penalty of our own.",
    "The pooling is adapted from SnapKV; the score is computed from value norms.",
    "Unlike a port of TOVA, our score weighs each query by its distance.",
    "This is not a port of H2O: the accumulation is decayed per head.",
    "A port of SnapKV would need the question span, which board C does not give.",
    "H2O has been ported to many frameworks; we score by value norms.",
    "We reuse StreamingLLM's sinks and implement our own two-hop attention.",
    "Our implementation of SnapKV's pooling (kernel 7) smooths the contrastive score.",
    "A port of KVzip's reconstruction pass to board B_offline.",
    "Related methods include a port of TOVA to vLLM.",
    "This work extends Ada-KV's head budgets with a per-layer schedule.",
    "We adapt SnapKV's observation window to decode-time eviction.",
    "A port of SnapKV plus a key-diversity term of ours.",
    "This is SnapKV with an entropy weight on each window query.",
    "A port of the observation window of SnapKV to board C.",
    "An implementation of the pooling step of SnapKV, kernel 5.",
]


# the method as the one that ports ("this bundle", "our code"), a whole-method noun after the verb, and the author's
# own statement that nothing in it is new (the paper it names first, else its section's, else Builds on's)
MORE_PORTS = [
    ("This bundle ports Quest (arXiv 2406.10774) to board C.", "Quest"),
    ("Our code re-implements the eviction strategy of Keyformer on the layer view.", "Keyformer"),
    ("The submission transcribes the selection procedure of TOVA for decode time.", "TOVA"),
    ("This is CAKE's cascading budget rule re-run here, not a new method.", "CAKE"),
    ("Nothing in this submission is novel: the scoring follows LagKV (arXiv 2504.04704).", "LagKV"),
    ("We claim no novelty; H2O's accumulated attention decides, with the usual sinks.", "H2O"),
    ("This submission is a faithful reimplementation, offered as a yardstick. It follows Quest (arXiv 2406.10774).",
     "Quest"),
    ("Everything in this submission is TOVA's; the harness glue differs.", "TOVA"),
    ("Submitted as a reference point rather than as new work: CAKE's cascading budgets, as published.", "CAKE"),
]
NOT_NEW_BUT = [
    "Nothing here is new except the entropy weight on each window query, which SnapKV lacks.",
    "This is not a new method on its own; the combination of H2O's tally with key diversity is.",
    "SnapKV is not a new idea either, but its pooling helps us.",
    "The pooling is not a new idea (SnapKV); the score from value norms is ours.",
    "We claim no novelty for the sinks (StreamingLLM); the budget rule is ours.",
    "This bundle ports the pooling of SnapKV and scores tokens by their value norms.",
    "If nothing here were new, TOVA would keep the same tokens; it does not.",
    "It is not new work to pool window attention (SnapKV); our contribution is the key-diversity term.",
    "Everything here is computed per KV head from the keys, with SnapKV's pooling on top.",
    "This is a port of SnapKV's pooling to decode time, beside a score of value norms.",
]


@pytest.mark.parametrize("sentence,paper", PORT_SENTENCES + MORE_PORTS)
def test_a_sentence_stating_the_method_is_a_port_names_the_paper(sentence: str, paper: str) -> None:
    dp = declared_port(_desc(sentence))
    assert dp is not None and dp.short_name == paper, sentence


@pytest.mark.parametrize("sentence", NOT_A_PORT + NOT_NEW_BUT)
def test_a_part_an_addition_a_contrast_or_another_works_port_is_no_declared_port(sentence: str) -> None:
    assert declared_port(_desc(sentence)) is None, sentence


def test_nothing_new_without_a_paper_in_the_sentence_names_the_first_builds_on_entry() -> None:
    dp = declared_port(_desc("Nothing here is claimed as new.", "- Scissorhands (arXiv 2305.17118): the rule\n"
                                                               "- StreamingLLM: the sinks"))
    assert dp is not None and dp.short_name == "Scissorhands" and dp.section == "idea"
    assert declared_port(_desc("Nothing here is claimed as new.")) is None  # no paper credited: no port named


def test_the_opening_under_a_heading_of_the_authors_own_is_read_as_the_idea() -> None:
    def with_opening(text: str) -> str:
        return f"# An eviction rule\n\n## About this submission\n{text}\n\n" + _desc("A score.").split("\n", 1)[1]

    dp = declared_port(with_opening("This is a port of Keyformer to board A, as published."))
    assert dp is not None and dp.short_name == "Keyformer" and dp.section == "idea"
    assert declared_port(with_opening("Keyformer has been ported to several serving stacks.")) is None
    assert declared_port(with_opening("We asked whether a port of Keyformer would help; it would not.")) is None


def test_builds_on_entries_say_port_only_for_the_whole_method() -> None:
    assert declared_port(_desc("A score.", "- CAKE (arXiv 2503.12491): the whole scoring rule")).short_name == "CAKE"
    assert declared_port(_desc("A score.", "- LagKV, arXiv 2504.04704 (the method ported)")).short_name == "LagKV"
    assert declared_port(_desc("A score.", "- Keyformer (arXiv 2403.09054): the method being ported")).short_name == \
        "Keyformer"
    assert declared_port(_desc("A score.", "- SnapKV (arXiv 2404.14469): the observation window only")) is None
    assert declared_port(_desc("A score.", "- H2O: accumulated attention, which we decay")) is None
    # several on one line: the words after each name are that paper's
    two = declared_port(_desc("A score.", "- StreamingLLM (sinks), Keyformer (the whole scoring rule)"))
    assert two is not None and two.short_name == "Keyformer"


def test_a_declared_port_caps_novelty_at_one_whatever_the_code_reads_as() -> None:
    rubric = _rubric()
    # the reader sees only a hash (a family member of a credited rule): measured alone, novelty 2
    fam = [ComputedFact(short_name="HashEvict", title="t", arxiv=None, level="family", ops=["hashing"],
                        extra=["head_average"], credited=True)]
    assert novelty(EvidenceFacts(computed=fam), rubric).score == 2
    capped = novelty(EvidenceFacts(computed=fam, declared_port="MagicPIG"), rubric)
    assert capped.score == 1 and "port of MagicPIG" in capped.rationale
    # nothing measured near (3 alone): still at most 1
    assert novelty(EvidenceFacts(declared_port="Keyformer"), rubric).score == 1
    # it only lowers: a same-method distance stays 0
    # (a credited likeness reads 1 since set 35: keeping what a credited method keeps is no undisclosed copy)
    same = [SimilarityFact(reference="baseline:tova", implements="tova", via="behaviour", score=0.97, credited=False,
                           credit_reason="not attributed")]
    assert novelty(EvidenceFacts(behaviour=same, declared_port="TOVA"), rubric).score == 0
    # and the paper it ports is named among the prior works
    assert any("MagicPIG" in w.title for w in prior_work(EvidenceFacts(computed=fam, declared_port="MagicPIG"))[:3])


def test_gathered_facts_carry_the_declared_port_and_an_honest_builder_gets_none() -> None:
    port = gather_facts(evidence=None, ledger=None, sections_missing=[], earlier_names={}, board=None,
                        board_reason="", description=_desc(PORT_SENTENCES[0][0]))
    assert port.declared_port == "MagicPIG"
    honest = gather_facts(evidence=None, ledger=None, sections_missing=[], earlier_names={}, board=None,
                          board_reason="", description=_desc(NOT_A_PORT[0], "- SnapKV: the observation window"))
    assert honest.declared_port == ""


# a work outside the index, cited by arXiv id (an invented id and title: no index paper has them)
EXTERNAL = ('the Ripple Cache of Ovando and Iwu ("Ripple Caches for Streaming Decoders with Bounded Memory", '
            'arXiv 2611.04417, 2026)')


@pytest.mark.parametrize("sentence", [
    f"A training-free port of {EXTERNAL} to the harness; the method is theirs.",
    f"This bundle reimplements the eviction rule of {EXTERNAL.replace('the Ripple Cache of', 'the Ripple Cache by')} "
    "unchanged.",
])
def test_a_port_of_a_work_outside_the_index_cited_by_arxiv_id_is_declared(sentence: str) -> None:
    dp = declared_port(_desc(sentence))
    assert dp is not None and dp.short_name == "Ripple Cache" and dp.arxiv == "2611.04417", sentence
    gathered = gather_facts(evidence=None, ledger=None, sections_missing=[], earlier_names={}, board=None,
                            board_reason="", description=_desc(sentence))
    assert (gathered.declared_port, gathered.declared_port_arxiv) == ("Ripple Cache", "2611.04417")
    facts = EvidenceFacts(declared_port="Ripple Cache", declared_port_arxiv="2611.04417")
    assert novelty(facts, _rubric()).score == 1
    named = prior_work(facts)[0]
    assert named.arxiv_id == "2611.04417" and "Ripple Cache" in named.title


@pytest.mark.parametrize("sentence", [
    f"Our score is new; the decay is borrowed from {EXTERNAL}.",
    f"Unlike a port of {EXTERNAL}, we rank tokens by their value norms.",
    f"We were inspired by {EXTERNAL} but compute a different quantity.",
])
def test_a_part_a_contrast_or_an_inspiration_from_a_work_outside_the_index_is_no_declared_port(sentence: str) -> None:
    assert declared_port(_desc(sentence)) is None, sentence


# --- 3. "query-free" / "attention-free" against a score that reads the queries -------------------------------------

HEAD = "import torch\n\nfrom harness.api import EvictionMethod, Keep, LayerView\n\n\n"
# a score that reads the queries: the window's attention, max over the window (names chosen to say nothing)
READS_QUERIES = HEAD + '''class Kappa(EvictionMethod):
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        a = view.attention()
        s = view.group(a.amax(dim=1), "mean")
        return Keep.from_topk(s, view.budget, view.valid)
'''
# partial logits: the queries times a few key channels (no softmax, no helper)
PARTIAL_LOGITS = HEAD + '''class Lambda(EvictionMethod):
    query_window = 8

    def select(self, view: LayerView) -> Keep:
        q = view.queries.float().mean(dim=1)
        k = view.keys.float()
        top = q.abs().topk(8, dim=-1).indices
        part = torch.einsum("hd,htd->ht", q.gather(-1, top), k.gather(-1, top[:, None].expand(-1, k.shape[1], -1)))
        return Keep.from_topk(part, view.budget, view.valid)
'''
# a score of the keys alone; the class still asks for a query window (the harness hands it over; it is never read)
KEYS_ONLY = HEAD + '''class Mu(EvictionMethod):
    query_window = 8

    def select(self, view: LayerView) -> Keep:
        k = view.keys.float()
        s = (k - k.mean(dim=1, keepdim=True)).norm(dim=-1)
        return Keep.from_topk(s, view.budget, view.valid)
'''


def _method(summary: str, idea: str = "A score per token.") -> str:
    return (f"# Drift keeping\n\n## Idea\n{idea}\n\n## Method summary\n{summary}\n\n## Limitations\nNone.\n\n"
            f"## Builds on\n- nothing\n")


DENYING = [
    "The score is query-free: each key's distance from the mean key.",
    "No queries are read; each key is scored by its distance from the mean key.",
    "The ranking is attention-free and costs one pass over the keys.",
    "It never computes attention: keys far from their mean are kept.",
    "Unlike SnapKV, our score needs no attention at all.",
    "The queries are never read by the score.",
    "Scores use no queries and no attention, only the keys.",
    "The score does not depend on the queries.",
]
NOT_DENYING = [
    "Without queries (board C before decoding starts) it falls back to the newest tokens.",
    "When no queries are handed over, the newest tokens are kept.",
    "It uses no question queries; the closing window scores the tokens.",
    "SnapKV is attention-free in its fallback only, and we do not claim more.",
    "It is not query-free: the window's queries score every token.",
    "No attention to position is paid beyond the sinks.",
    "The score is query-agnostic: the question is not known when it runs.",
    "A query-free variant could follow in future work.",
    "The score needs no attention over the whole prompt: only the last 16 queries' attention is kept.",
    "It is attention-free at decode time; the prefill selection uses the window's attention.",
]


@pytest.mark.parametrize("summary", DENYING)
def test_a_stated_query_or_attention_free_score_the_code_contradicts_is_misstated(summary: str) -> None:
    from reviewbench.flags.misstated import misstated_flags

    for code in (READS_QUERIES, PARTIAL_LOGITS):
        flags = [f for f in misstated_flags(_method(summary), code) if f.flag == "MISSTATED_METHOD"]
        assert flags and flags[0].strength == "proof", (summary, code[:200])
        assert "depends on" in flags[0].explanation and "method.py:" in flags[0].explanation
    # the same words over a score of the keys alone: true, no flag
    assert not misstated_flags(_method(summary), KEYS_ONLY)


@pytest.mark.parametrize("summary", NOT_DENYING)
def test_a_condition_a_part_a_negation_or_another_works_is_no_denial(summary: str) -> None:
    from reviewbench.flags.misstated import misstated_flags

    assert not [f for f in misstated_flags(_method(summary), READS_QUERIES) if "reads no query" in f.explanation
                or "no attention" in f.explanation], summary


def test_a_denial_in_the_idea_alone_is_an_indication() -> None:
    from reviewbench.flags.misstated import misstated_flags

    flags = misstated_flags(_method("Keys are scored and the top ones kept.", "The score is attention-free."),
                            READS_QUERIES)
    assert [f.strength for f in flags] == ["indication"]


# --- an author-year mention names the paper of the year it gives --------------------------------------------------

def test_surname_and_year_name_the_paper_of_that_year_when_the_surname_has_two() -> None:
    papers = [p for p in load_index().papers if p.first_author and p.year]
    by_surname: dict[str, list] = {}
    for p in papers:
        by_surname.setdefault(p.first_author.split()[-1], []).append(p)
    pairs = [(a, b) for ps in by_surname.values() for a in ps for b in ps if a is not b and b.year == a.year + 1]
    checked = 0
    for a, b in pairs:
        surname = a.first_author.split()[-1]
        text = f"## Builds on\n- {surname} et al., {a.year}: the score we use\n"
        ca, cb = credit(text, a), credit(text, b)
        if surname.lower() in {"zhang", "wang", "li", "liu", "chen"} or not ca.credited:
            continue  # a common surname (or a year shared by two papers) names nobody
        assert not cb.credited, (surname, a.short_name, b.short_name)
        checked += 1
    assert checked >= 1  # the index has such a pair (Shi 2024 / Shi 2025 when this was written)


# --- 2. a credited paper whose rule the code computes covers the baseline rule inside it ----------------------------

from reviewbench.evidence.behaviour import BehaviourMatch  # noqa: E402
from reviewbench.evidence.computation import computation  # noqa: E402
from reviewbench.evidence.priorart_evidence import computation_matches  # noqa: E402
from reviewbench.flags.prior_art import computation_flags, prior_art_flags  # noqa: E402

# a filter layer's last-query attention, summed over heads, and the later layers keep its positions (kept on the module)
_FILTER = HEAD + '''class Sieve(EvictionMethod):
    query_window = 1

    def select(self, view: LayerView) -> Keep:
        a = view.attention()[:, -1]
        idx = a.sum(dim=0).topk(min(view.budget, view.n_tokens)).indices
        if view.layer > 9 and self.picked is not None:
            pos = self.picked
            return Keep.same_for_all_heads(torch.searchsorted(view.positions[0], pos), view.n_kv_heads)
        if view.layer == 9:
            {store}
        return Keep.same_for_all_heads(idx, view.n_kv_heads)
'''
REUSE_ATTR = _FILTER.replace("{store}", "self.picked = view.positions[0, idx]")
REUSE_DICT = _FILTER.replace("{store}", "self.cache[view.n_tokens] = view.positions[0, idx]").replace(
    "self.picked is not None", "view.n_tokens in self.cache").replace("pos = self.picked", "pos = self.cache[view.n_tokens]")
NO_REUSE = HEAD + '''class Sift(EvictionMethod):
    query_window = 1

    def select(self, view: LayerView) -> Keep:
        a = view.attention()[:, -1]
        return Keep.same_for_all_heads(a.sum(dim=0).topk(min(view.budget, view.n_tokens)).indices, view.n_kv_heads)
'''
PORT_OF_FILTER = _desc("A port of GemFilter (arXiv 2409.17422) to one-shot eviction.",
                       "- GemFilter (arXiv 2409.17422): the selection rule and the filter layer")
KEEPS_TOVAS = [BehaviourMatch(reference="baseline:tova", member="tova", jaccard=0.99, rank_corr=0.99)]


def _flags(code: str, desc: str) -> list[str]:
    c = computation(code)
    computed = computation_matches(c.features, desc, c.paths)
    return [f.flag for f in computation_flags(computed, KEEPS_TOVAS, code)
            + prior_art_flags(KEEPS_TOVAS, [], {}, desc, code, ("class", 1), computed=computed)]


def test_a_credited_filter_layer_port_is_not_flagged_for_the_baseline_rule_its_selection_computes() -> None:
    assert "layer_reuse" in computation(REUSE_ATTR).features
    assert _flags(REUSE_ATTR, PORT_OF_FILTER) == []


def test_the_baseline_rule_alone_crediting_the_filter_layer_paper_is_still_flagged() -> None:
    # no layer reuse: the credited paper's own operation is absent, so its credit covers nothing of the code
    assert "UNDISCLOSED_PRIOR_ART" in _flags(NO_REUSE, PORT_OF_FILTER)


def test_a_selection_kept_in_a_dict_on_the_module_is_layer_reuse_too() -> None:
    assert "layer_reuse" in computation(REUSE_DICT).features
    assert _flags(REUSE_DICT, PORT_OF_FILTER) == []


# --- 4. "on par" needs a narrow CI over enough items; credit is a statement of use -------------------------------

from reviewbench.evidence.facts import BoardFact, BudgetGain  # noqa: E402
from reviewbench.evidence.judge import effectiveness  # noqa: E402
from reviewbench.overall import BoardMeasurement  # noqa: E402


def _board(n_items: int, gains: list[tuple[float, float, float]]) -> BoardFact:
    m = BoardMeasurement.model_construct(method="x", overall=0.50, n_items=n_items, per_budget=[], errors=[])
    return BoardFact(measurement=m, best_id="baseline:snapkv", best_overall=0.51, random_overall=0.2,
                     weakest_overall=0.35, gains=[BudgetGain(budget=b, gain=g, lower=lo, upper=hi)
                                                  for b, (g, lo, hi) in zip((0.05, 0.2), gains)], margin=0.005)


@pytest.mark.parametrize("n,ci,score", [
    (10, (-0.01, -0.04, 0.02), 3),     # half-width 0.03, 10 items: on par
    (10, (-0.01, -0.042, 0.02), 2),    # half-width 0.031: too wide to tell
    (9, (-0.01, -0.02, 0.0), 2),       # narrow, but 9 items
    (60, (-0.03, -0.2, 0.14), 2),      # many items, a CI of +-0.17: too wide
    (60, (-0.06, -0.08, -0.04), 2),    # clearly below: never on par
])
def test_on_par_only_with_a_ci_that_spans_zero_and_is_narrow(n: int, ci: tuple[float, float, float],
                                                             score: int) -> None:
    e = effectiveness(EvidenceFacts(board=_board(n, [ci])), _rubric().evidence)
    assert e.score == score, e.rationale
    assert ("on par with the best" in e.rationale) == (score == 3)


def test_the_rubric_anchor_for_on_par_says_the_ci_must_be_narrow() -> None:
    anchors = next(c for c in _rubric().criteria if c.id == "effectiveness").anchors
    assert "narrow" in anchors[3] or "within" in anchors[3]


CREDITS = [
    ("We build on H2O: the accumulated attention is H2O's, decayed per round.", "H2O"),
    ("The observation window and pooling are adapted from SnapKV (arXiv 2404.14469).", "SnapKV"),
    ("Our per-head allocation follows Ada-KV.", "Ada-KV"),
    ("The scoring is TOVA's, applied to a window of 4 queries.", "TOVA"),
    ("Sinks are kept as in StreamingLLM.", "StreamingLLM"),
    ("The layer schedule is PyramidKV.", "PyramidKV"),
    ("We reuse KVzip's reconstruction pass for the queries.", "KVzip"),
    ("This rule is derived from Keyformer's Gumbel-softmax score.", "Keyformer"),
]
NOT_CREDITS = [
    ("Unlike TOVA, the score looks at a window of queries.", "TOVA"),
    ("Accumulated-attention eviction exists: H2O.", "H2O"),
    ("Related methods include SnapKV and PyramidKV.", "SnapKV"),
    ("We do not use SnapKV's pooling.", "SnapKV"),
    ("Ada-KV allocates budgets across heads; ours is fixed per head.", "Ada-KV"),
    ("The score outperforms StreamingLLM at 10 %.", "StreamingLLM"),
    ("Methods such as KVzip need a second pass, which this avoids.", "KVzip"),
    ("Keyformer has been evaluated on longer prompts than ours.", "Keyformer"),
]


@pytest.mark.parametrize("sentence,paper", CREDITS)
def test_a_sentence_stating_use_or_derivation_credits(sentence: str, paper: str) -> None:
    p = load_index().by_name(paper)
    assert credit(_desc("A score per token.") + f"\n## Relation to prior work\n{sentence}\n", p).credited, sentence


@pytest.mark.parametrize("sentence,paper", NOT_CREDITS)
def test_a_contrast_a_mention_an_exists_sentence_or_a_negation_is_no_credit(sentence: str, paper: str) -> None:
    p = load_index().by_name(paper)
    assert not credit(_desc("A score per token.") + f"\n## Relation to prior work\n{sentence}\n", p).credited, sentence


# --- a title's own words are the paper's: no contrast, no negation of the author's ------------------------------

def _paper(name: str):
    return next(x for x in load_index().papers if x.short_name == name)


@pytest.mark.parametrize("builds_on,paper", [
    ("- HeadKV (Not All Heads Matter: A Head-Level KV Cache Compression Method with Integrated Retrieval and "
     "Reasoning): we take its head-level budget split.", "HeadKV"),
    ("- We port the selection of CDPruner (Beyond Attention or Similarity: Maximizing Conditional Diversity for Token "
     "Pruning in MLLMs) to the layer view.", "CDPruner"),
    ("- VATP ('Attention Score is not All You Need for Token Importance Indicator in KV Cache Reduction: Value Also "
     "Matters'): the value-norm weighting.", "VATP"),
])
def test_a_quoted_title_with_contrast_or_negation_words_still_credits(builds_on: str, paper: str) -> None:
    p = _paper(paper)
    assert credit(_desc("A score per token.", builds_on), p).credited


@pytest.mark.parametrize("idea,paper", [
    ("Unlike HeadKV (Not All Heads Matter: A Head-Level KV Cache Compression Method with Integrated Retrieval and "
     "Reasoning), no head is profiled offline.", "HeadKV"),
    ("CDPruner (Beyond Attention or Similarity: Maximizing Conditional Diversity for Token Pruning in MLLMs) is not "
     "used: our score has no diversity term.", "CDPruner"),
])
def test_a_contrast_outside_the_quoted_title_is_still_no_credit(idea: str, paper: str) -> None:
    p = _paper(paper)
    assert not credit(_desc(idea), p).credited


# --- a work named beside the author's stated addition is what the addition is added to ----------------------------

def _relation(relation: str) -> str:
    return (f"# Some eviction rule\n\n## Idea\nA score per token.\n\n## Method summary\n- A score per token.\n\n"
            f"## Relation to prior work\n{relation}\n\n## Limitations\nNone measured.\n")


@pytest.mark.parametrize("relation,paper", [
    ("TOVA (arXiv 2401.06104), at every decoding step. The decay of old scores is our only addition.", "TOVA"),
    ("H2O (Zhang et al., 2023) with a recent window. We add a per-head temperature.", "H2O"),
    ("K-norm (arXiv 2406.11430) on the keys. Our small addition is a recency bonus.", "K-norm"),
])
def test_a_work_named_beside_a_stated_addition_is_credited(relation: str, paper: str) -> None:
    p = _paper(paper)
    assert credit(_relation(relation), p).credited


@pytest.mark.parametrize("relation,paper", [
    ("TOVA (arXiv 2401.06104) is related.", "TOVA"),  # a mention, no addition stated
    ("Unlike TOVA (arXiv 2401.06104), scores are decayed. The decay is our addition.", "TOVA"),  # a contrast
    ("Related methods include H2O (Zhang et al., 2023). We add a per-head temperature.", "H2O"),  # a mention only
    ("H2O (Zhang et al., 2023) sums attention. Replacing the sum by a peak is the contribution.", "H2O"),  # set aside
])
def test_a_mention_or_contrast_beside_an_addition_is_still_no_credit(relation: str, paper: str) -> None:
    p = _paper(paper)
    assert not credit(_relation(relation), p).credited



def test_the_opening_paragraph_and_the_authors_own_headings_are_read_for_credit() -> None:
    """A description under headings of its own (no "Builds on"): the opening paragraph that states the port, and a
    section named by the author, credit as the arena's sections do; a contrast there is still none."""
    opening = ("# A cache for board C\n\nA training-free port of BigBird (Zaheer et al., 2020, arXiv 2007.14062) to "
               "decode-time eviction.\n\n## What it keeps\nOpening tokens, a window, random runs.\n\n## Evidence\nNone.\n")
    assert credit(opening, _paper("BigBird")).credited
    own = ("# A cache\n\n## Lineage\nWe build on H2O (Zhang et al., 2023) for the running sum.\n\n## Evidence\nNone.\n")
    assert credit(own, _paper("H2O")).credited
    contrast = ("# A cache\n\nUnlike BigBird (arXiv 2007.14062), nothing is drawn at random.\n\n## Evidence\nNone.\n")
    assert not credit(contrast, _paper("BigBird")).credited
