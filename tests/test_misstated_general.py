"""Issue 23: MISSTATED_METHOD from a general vocabulary of mechanism concepts, each with the operations it needs.

Every snippet and sentence here is written fresh for these tests (none is a held-out case or a sentence of the
issue). The mechanisms claimed are phrased otherwise than the issue's examples (a Count-Min table, SimHash
buckets, principal directions, a fitted regressor, Lloyd iterations, a codebook, Shannon entropy, a Bayesian
filter, Fisher information, PMI, Sinkhorn, a Fourier spectrum...), over code that computes something else; the
honest descriptions paraphrase what their code does, or name a mechanism only to negate it, contrast it, give it
to another work, leave it to future work, or use it as an interpretation.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reviewbench.evidence.stated import CONCEPTS, mentions, stated
from reviewbench.flags.misstated import misstated_flags, misstatements
from reviewbench.rubric import load_rubric
from reviewbench.verdict import decide

HEAD = "import torch\nimport torch.nn.functional as F\n\nfrom harness.api import EvictionMethod, Keep, LayerView\n\n\n"

# pooled window attention, per head (a SnapKV-like rule; names say nothing)
POOLED = HEAD + '''class Alder(EvictionMethod):
    query_window = 32

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention().sum(dim=1), "mean")
        a = F.max_pool1d(a.unsqueeze(1), 7, stride=1, padding=3).squeeze(1)
        return Keep.from_topk(a, view.budget, view.valid)
'''
# the lowest key norms
LOWNORM = HEAD + '''class Birch(EvictionMethod):
    def select(self, view: LayerView) -> Keep:
        return Keep.from_topk(-view.keys.norm(dim=-1), view.budget, view.valid)
'''
# per-head entropy of the window attention scales the pooled score
ENTROPIC = HEAD + '''class Cedar(EvictionMethod):
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        p = view.group(view.attention().mean(dim=1), "mean")
        h = -(p * torch.log(p + 1e-9)).sum(dim=-1, keepdim=True)
        return Keep.from_topk(p * h, view.budget, view.valid)
'''
# residual of each key after projection on the top singular directions of the head's keys
RESIDUAL = HEAD + '''class Dogwood(EvictionMethod):
    def select(self, view: LayerView) -> Keep:
        k = view.keys.float()
        u, s, vh = torch.linalg.svd(k, full_matrices=False)
        basis = vh[:, :4, :]
        recon = (k @ basis.transpose(1, 2)) @ basis
        return Keep.from_topk((k - recon).norm(dim=-1), view.budget, view.valid)
'''
# sign bits of a random projection of the keys, tokens with rare codes kept
SIGNS = HEAD + '''class Elm(EvictionMethod):
    def select(self, view: LayerView) -> Keep:
        g = torch.Generator().manual_seed(0)
        r = torch.randn(view.keys.shape[-1], 8, generator=g)
        bits = torch.sign(view.keys.float() @ r)
        agree = (bits @ bits.transpose(1, 2)).mean(dim=-1)
        return Keep.from_topk(-agree, view.budget, view.valid)
'''
# a few Lloyd steps: keys against centroids, each token scored by its distance to its centroid
LLOYD = HEAD + '''class Fir(EvictionMethod):
    def select(self, view: LayerView) -> Keep:
        k = view.keys.float()
        c = k[:, :8, :].clone()
        for _ in range(3):
            d = torch.cdist(k, c)
            a = d.argmin(dim=-1)
            c = c + 0.5 * (torch.stack([k[h][a[h] == j].mean(0) if (a[h] == j).any() else c[h, j]
                                       for h in range(k.shape[0]) for j in range(8)]).view_as(c) - c)
        return Keep.from_topk(torch.cdist(k, c).min(dim=-1).values, view.budget, view.valid)
'''


def _desc(summary: str, idea: str = "Some tokens matter more than others.") -> str:
    return (f"# Grove\n\n## Idea\n{idea}\n\n## Method summary\n{summary}\n\n## Relation to prior work\nNone.\n\n"
            f"## Evidence\nNone.\n\n## Limitations\nSome.\n\n## Builds on\nNone.\n")


def _rubric():
    return load_rubric(Path(__file__).resolve().parent.parent / "rubrics" / "default.toml")


def _standing(desc: str, src: str) -> list[str]:
    flags = misstated_flags(desc, src, [], _rubric().evidence)
    return [f.flag for f in decide([], _rubric(), "other", flags).standing_flags]


# --- claims the code does not back ---------------------------------------------------------------------

MISSTATED = [
    ("Attention mass per token is tracked in a Count-Min table with four hash rows.", "a sketch / hashing"),
    ("Keys are bucketed by SimHash signatures and one token per bucket survives.", "a sketch / hashing"),
    ("Tokens whose keys lie far from the principal directions of the head are kept.", "a low-rank approximation"),
    ("A rank-8 reconstruction of the key matrix is computed, and the worst-reconstructed tokens stay.",
     "a low-rank approximation"),
    ("A lightweight regressor, fitted offline on dev traces, predicts each key's future attention.",
     "learned weights"),
    ("Keys are grouped by Lloyd-style k-means into 16 centroids and one representative per centroid is kept.",
     "clustering"),
    ("Each key is vector-quantised against a 64-entry codebook; rare codewords are kept.",
     "a codebook / vector quantisation"),
    ("The per-head budget follows the Shannon entropy of that head's attention.", "entropy"),
    ("Scores are smoothed over decoding steps by a Bayesian filter with a per-token posterior.",
     "a Kalman / Bayesian filter"),
    ("Importance is the diagonal Fisher information of the attention output with respect to each key.",
     "second-order / curvature"),
    ("Each token's second-order saliency, as in optimal brain surgery, decides what stays.",
     "second-order / curvature"),
    ("We score each token by the pointwise mutual information between the question and the token.",
     "mutual information"),
    ("Sinkhorn iterations give a transport plan from queries to keys, and each key's received mass is its score.",
     "optimal transport"),
    ("The Fourier spectrum of each key decides: tokens with high-frequency energy stay.",
     "a frequency-domain transform"),
    ("Tokens are chosen by a determinantal point process over key similarities.", "submodular / diversity selection"),
    ("Each step adds the token with the largest log-det gain of the kernel restricted to the kept set.",
     "submodular / diversity selection"),
    ("A greedy pass maximises the log determinant of the kept keys' Gram matrix.",
     "submodular / diversity selection"),
    ("A token's weight is its attention times the deviation of its value from the window's readout.",
     "the values / the attention output"),
    ("Value-weighted attention: each column is scaled by how far its value vector sits from the others.",
     "the values / the attention output"),
    ("Every layer after the first reuses the kept set inherited from the preceding layer.", "cross-layer reuse"),
    ("Keys are un-rotated to their pre-RoPE frame before they are compared.", "rotary un-rotation"),
    ("The smallest set of tokens whose cumulative attention mass reaches 0.9 is kept per head.",
     "attention-mass coverage (top-p)"),
    ("The context is split by recursive spectral bisection of the keys' nearest-neighbour graph, and each part "
     "keeps its best tokens.", "a similarity graph / spectral partition"),
]


@pytest.mark.parametrize("summary,label", MISSTATED)
def test_a_claimed_mechanism_the_code_lacks_is_misstated_with_proof(summary, label):
    for src in (POOLED, LOWNORM):
        flags = misstated_flags(_desc(summary), src)
        assert flags and flags[0].flag == "MISSTATED_METHOD" and flags[0].strength == "proof", (summary, src[:0])
        f = flags[0]
        assert f.quote == summary and f.location.startswith("DESCRIPTION.md:")
        assert label in f.explanation and "it requires" in f.explanation and "method.py:" in f.explanation
        assert _standing(_desc(summary), src) == ["MISSTATED_METHOD"]


def test_inflection_and_hyphenation_do_not_hide_a_claim():
    for summary in ["Keys are K-Means-clustered per head.", "Tokens are sketched into a low rank summary first.",
                    "A small trained MLP scores each key.", "We hash every key into 32 buckets.",
                    "Scores come from a count sketch, which we found robust."]:
        assert _standing(_desc(summary), POOLED) == ["MISSTATED_METHOD"], summary


def test_a_claim_after_naming_another_work_but_stated_as_ours_still_counts():
    assert _standing(_desc("Like ClusterKV, we run k-means over the keys and keep the centroids' neighbours."),
                     POOLED) == ["MISSTATED_METHOD"]
    assert _standing(_desc("Unlike SnapKV, we score tokens with a Kalman filter over their attention."),
                     POOLED) == ["MISSTATED_METHOD"]


def test_a_claim_in_the_idea_alone_is_an_indication_not_a_proof():
    d = _desc("Window attention, max-pooled over seven tokens, ranks the tokens of each head.",
              idea="Keys live near a low-rank subspace, so a few directions explain the cache.")
    flags = misstated_flags(d, POOLED)
    assert all(f.strength == "indication" for f in flags)
    assert _standing(d, POOLED) == []


# --- honest descriptions ---------------------------------------------------------------------------------

HONEST = [
    # paraphrases of what the code computes
    (POOLED, "The last 32 queries vote: their attention is summed, max-pooled over seven neighbours, and each "
             "head keeps its top tokens."),
    (POOLED, "Attention accumulated over the observation window, smoothed along the sequence, ranks the tokens."),
    (LOWNORM, "Keys with a small L2 norm draw the most attention, so the lowest-norm keys are kept."),
    (ENTROPIC, "Each head's Shannon entropy over the window scales its attention scores."),
    (RESIDUAL, "Tokens with the largest residual after projecting onto the top four singular vectors are kept."),
    (RESIDUAL, "A rank-4 SVD basis of each head's keys is computed; what it cannot reconstruct stays."),
    (SIGNS, "Keys are hashed to 8 sign bits by a random Gaussian projection (SimHash); rare codes are kept."),
    # mentions that are not claims about this method
    (POOLED, "Unlike clustering-based methods, no centroids are computed: pooled window attention decides."),
    (POOLED, "Nothing is trained: there is no learned scorer and no fitted table."),
    (POOLED, "Training-free and learning-free, the rule is pooled window attention."),
    (POOLED, "A learned scorer could replace the pooled attention in future work."),
    (POOLED, "ClusterKV groups keys by k-means; we instead rank them by pooled window attention."),
    (POOLED, "Prior methods that rely on low-rank projections or hashing cost more; ours pools window attention."),
    (POOLED, "The pooled score acts as a cheap proxy for the mutual information between question and token."),
    (POOLED, "Because attention is often approximately low-rank, a short window of queries suffices."),
    (POOLED, "Compared with Kalman-style smoothing, the pooling is stateless."),
    (POOLED, "The score is not an entropy and uses no codebook; it is window attention, max-pooled."),
    (POOLED, "Pooling is used instead of a Fourier filter to smooth the scores."),
    (POOLED, "No log-det or DPP selection is needed: pooled window attention ranks the tokens."),
    (LOWNORM, "We keep low-norm keys; a Sinkhorn or transport-based variant is left for later."),
    (LOWNORM, "The key norm serves as a surrogate for the curvature of the loss around each token."),
    # "saliency" alone is the field's word for an importance score (second-order only as "second-order saliency")
    (POOLED, "Each token's saliency is its pooled window attention, and the most salient tokens are kept."),
]


@pytest.mark.parametrize("src,summary", HONEST)
def test_honest_paraphrases_and_mentions_are_not_flagged(src, summary):
    assert _standing(_desc(summary), src) == [], summary


def test_iterated_clustering_with_distance_calls_is_never_a_proof():
    """k-means written out by hand shows no reader feature, but its distance calls could compute it."""
    d = _desc("Keys are grouped into 8 centroids by three Lloyd iterations; distance to the centroid ranks them.")
    assert _standing(d, LLOYD) == []


# --- the vocabulary ---------------------------------------------------------------------------------------

def test_every_concept_names_what_it_needs_and_phrasings_are_many():
    assert len(CONCEPTS) >= 20
    for c in CONCEPTS:
        assert c.needs and c.phrases
    labels = {m.concept.label for m in mentions("a Count-Min sketch, Lloyd k-means, a codebook and a Kalman filter")}
    assert {"a sketch / hashing", "clustering", "a codebook / vector quantisation",
            "a Kalman / Bayesian filter"} <= labels


def test_sketch_alone_is_any_compressed_summary_and_a_random_hashed_or_counting_one_is_hashing():
    """"Sketch" names a quantised or low-rank copy as often as a hash: only a qualified sketch claims hashing."""
    def labels(s: str) -> set[str]:
        return {m.concept.label for m in mentions(s)}

    for loose in ["Our sketch of each key is a 3-bit grid with a rank-2 residual.", "A rough sketch of the idea follows.",
                  "The score reads a compact sketch of the keys kept per head."]:
        assert "a sketch / hashing" not in labels(loose), loose
    for hashed in ["Keys are sketched with a seeded Gaussian matrix.", "A streaming sketch counts attention mass.",
                   "Each key's sign sketch is compared with the query's.", "We keep a CountSketch of the scores."]:
        assert "a sketch / hashing" in labels(hashed), hashed


def test_folded_into_is_merging_only_where_tokens_are_what_is_folded_or_what_they_join():
    """"Folded into" / "merged into" says merging when tokens (or what they join) are its subject or its target; a
    score folded into a running average is an update."""
    def labels(s: str) -> set[str]:
        return {m.concept.label for m in mentions(s)}

    for update in ["Each round's attention is folded into two per-token running averages.",
                   "The new evidence is merged into a decayed score per position.",
                   "Both signals are folded into one ranking after rescaling."]:
        assert "token merging" not in labels(update), update
    for merge in ["Dropped tokens are folded into their nearest kept neighbour.",
                  "Keys that leave the cache are merged into the closest retained entry.",
                  "Everything outside the window is folded into one summary entry per head.",
                  "A token whose key is near a survivor's is merged into it."]:
        assert "token merging" in labels(merge), merge


def test_stated_reads_negation_after_the_mention_and_connectors_after_an_interpretation():
    s = "Clustering is not used; the scores are pooled."
    m = next(x for x in mentions(s) if x.concept.label == "clustering")
    assert stated(s, m)[0] is False
    s = "We approximate the entropy of each head by a count sketch of its attention."
    got = {x.concept.label: stated(s, x)[0] for x in mentions(s)}
    assert got["entropy"] is False and got["a sketch / hashing"] is True


def test_misstatements_name_the_phrase_and_the_missing_operation():
    ms = misstatements(_desc("Each key's Hessian diagonal decides what stays."), LOWNORM)
    assert ms and ms[0].mechanism == "second-order / curvature" and ms[0].strict
    assert "derivatives" in ms[0].needs and ms[0].phrase.lower() == "hessian"


# the values read: the distance of each value from the head's mean value, times the pooled window attention
VALUED = HEAD + '''class Hazel(EvictionMethod):
    query_window = 32

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention().sum(dim=1), "mean")
        v = view.values.float()
        spread = (v - v.mean(dim=1, keepdim=True)).norm(dim=-1)
        return Keep.from_topk(a * spread, view.budget, view.valid)
'''


def test_a_value_claim_stands_only_where_the_code_never_reads_the_values():
    claim = _desc("Each token is scored by its attention times the distance between its value vector and the mean.")
    assert _standing(claim, POOLED) == ["MISSTATED_METHOD"]
    assert _standing(claim, VALUED) == []  # the values are read: words alone cannot say how, no proof
    # a read thrown away is no read: the score still never sees a value
    thrown = POOLED.replace("        a = view.group(", "        unused = view.values.norm(dim=-1)\n        a = view.group(")
    assert "unused" in thrown and _standing(claim, thrown) == ["MISSTATED_METHOD"]
    for honest in ["The cache holds keys and values; the tokens the window attends to most are kept.",
                   "Value vectors are never read: the score is pooled window attention alone.",
                   "Unlike VATP, which weights attention by value norms, the score is attention alone.",
                   "The value of each score is pooled over seven neighbours before the top tokens are kept."]:
        assert _standing(_desc(honest), POOLED) == [], honest


# a selection carried to the next layer in a module-level table; keys un-rotated; the top-p set of the attention
CARRIED = HEAD + '''CHOSEN = {}


class Ivy(EvictionMethod):
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention().sum(dim=1), "mean")
        prev = CHOSEN.get(view.layer - 1)
        if prev is not None and prev.shape == a.shape:
            a = a + prev
        CHOSEN[view.layer] = a
        return Keep.from_topk(a, view.budget, view.valid)
'''
UNROTATED = HEAD + '''class Juniper(EvictionMethod):
    def select(self, view: LayerView) -> Keep:
        k = view.rotate(view.keys.float(), -view.positions)
        return Keep.from_topk(k.norm(dim=-1), view.budget, view.valid)
'''
NUCLEUS = HEAD + '''class Kapok(EvictionMethod):
    query_window = 8

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention().mean(dim=1), "mean")
        p, order = a.sort(dim=-1, descending=True)
        inside = (p.cumsum(dim=-1) - p) < 0.9
        score = torch.zeros_like(a).scatter(-1, order, inside.float() + p)
        return Keep.from_topk(score, view.budget, view.valid)
'''


@pytest.mark.parametrize("src,summary", [
    (CARRIED, "Each layer adds the preceding layer's selection scores to its own window attention."),
    (UNROTATED, "Keys are un-rotated to their pre-RoPE frame, and their norms rank the tokens."),
    (NUCLEUS, "The smallest set of tokens whose cumulative attention mass reaches 0.9 is kept first."),
    (POOLED, "Unlike methods that reuse the previous layer's selection, every layer chooses its own."),
    (POOLED, "Budgets are shared across layers evenly; pooled window attention ranks the tokens."),
    (POOLED, "Cumulative attention over the window, max-pooled, ranks the tokens."),
])
def test_memory_rotation_and_mass_claims_stand_only_where_the_code_cannot_do_them(src, summary):
    assert _standing(_desc(summary), src) == [], summary


# keys handed to view.attention as probes: attention of the keys over the keys, no query read
PROBED = HEAD + '''class Larch(EvictionMethod):
    def select(self, view: LayerView) -> Keep:
        probe = view.keys.float().repeat_interleave(view.model.group_size, dim=0)
        got = view.group(view.attention(probe, reduce="sum"), "mean")
        return Keep.from_topk(got, view.budget, view.valid)
'''


def test_a_claim_that_the_question_s_queries_score_stands_only_where_the_code_reads_no_query():
    for claim in ["Each context token is weighted by the attention paid to it by the question's queries.",
                  "A density of the question-span queries is evaluated at every key; the densest keys stay.",
                  "The queries of the question rank the context; the top tokens are kept."]:
        for src in (LOWNORM, PROBED):
            assert _standing(_desc(claim), src) == ["MISSTATED_METHOD"], (claim, src[:60])
        assert _standing(_desc(claim), POOLED) == [], claim  # the queries are read: how, words cannot say
    for honest in ["The question's tokens are always kept; the lowest key norms fill the rest.",
                   "Unlike SnapKV, no question query is read: key norms alone rank the tokens.",
                   "The question span is protected by position, and keys rank everything else."]:
        assert _standing(_desc(honest), LOWNORM) == [], honest


def test_keeping_a_baseline_s_tokens_proves_a_mechanism_absent_only_where_the_code_could_not_compute_it():
    """A value-weighted SnapKV keeps nearly SnapKV's tokens (a small modulation moves few of them) and does read the
    values: behaving as SnapKV (whose rule reads none) at the "same" bar is no proof that the stated value term is
    absent; at the "identical" bar it is. Code that never reads a value gets the proof at the "same" bar."""
    from reviewbench.evidence.behaviour import BehaviourMatch

    claim = _desc("Each token's window score is scaled by how far its value vector sits from its neighbours'.")
    alike = [BehaviourMatch(reference="baseline:snapkv", member="snapkv", jaccard=0.95, rank_corr=0.9)]
    rules = _rubric().evidence
    [f] = misstated_flags(claim, VALUED, alike, rules)
    assert f.strength == "indication", f.explanation
    [g] = misstated_flags(claim, POOLED, alike, rules)
    assert g.strength == "proof"
    # at the rubric's "identical" bar the values change nothing it keeps: a proof even where the code reads them
    same = [alike[0].model_copy(update={"jaccard": rules.behaviour_identical})]
    assert misstated_flags(claim, VALUED, same, rules)[0].strength == "proof"


def test_an_index_paper_named_in_the_title_is_another_work_in_the_sentences():
    """A credited port titled after its source ("a port of MoBA's block gate"): "MoBA models are trained with the
    gate" is MoBA's training, not a claim that this method learns; the method's own invented name still is its own."""
    desc = ("# Block-gated retention - a port of MoBA's block gate\n\n## Idea\nSome tokens matter.\n\n"
            "## Method summary\nMoBA models are trained with the gate in place; here the gate is applied untrained."
            "\n\n## Builds on\nMoBA (arXiv 2502.13189).\n")
    assert misstatements(desc, POOLED) == []
    own = desc.replace("MoBA models are trained", "Block-gated models are trained")
    assert [m.mechanism for m in misstatements(own, POOLED)] == ["learned weights"]


def test_a_norm_written_as_a_formula_is_a_stated_mechanism():
    # a value norm in notation, over code that never reads the values: misstated, with the formula as the quote
    summary = "Each token's score is its pooled attention times (1 + ||v_j||_2 / mean ||v||)."
    flags = misstated_flags(_desc(summary), POOLED)
    assert flags and flags[0].strength == "proof" and "value norms" in flags[0].explanation
    # a key norm in notation over code that ranks by the key norm: nothing misstated
    assert misstated_flags(_desc("Tokens with the smallest ‖k_i‖ are kept."), LOWNORM) == []
    # bars that are not a norm of a key or a value (a logical or, an absolute value of a score) name nothing
    assert [m.concept.label for m in mentions("We keep a token if a || b holds, and |s_i| is the score.")] == []
