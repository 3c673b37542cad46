"""Readings added after held-out set 31's key (not held out; every snippet and sentence written fresh for these tests,
none a bundle of the set), each with a neighbour that must read otherwise:

- a step stamped where attention is strong, written ``steps.masked_fill(~strong, -1)`` and carried by a running max,
  is the last time a token was attended (LazyEviction's and RaaS' clock), as ``where(strong, step, old)`` is;
- a run of token indices cut in steps is the members of one block, and the keys at a ranking of a block's members
  are its representatives: the query against them scores the block (InfLLM);
- each head's own top-k weights written into zeros and summed is a soft vote per head (TokenSelect), not attention;
- a description that says the number of clusters is searched (an elbow test, splitting until the spread stops
  falling) over code that clusters at one count misstates it;
- behaving like a reference whose rule a credit covers (FINCH's question attention is SnapKV's rule on board A) is
  what the credited rule does, no flag.
"""

from __future__ import annotations

from pathlib import Path

from reviewbench.evidence.behaviour import BehaviourMatch
from reviewbench.evidence.computation import computation
from reviewbench.evidence.priorart_evidence import computation_matches
from reviewbench.flags.misstated import misstatements
from reviewbench.flags.prior_art import prior_art_flags

HEAD = "import torch\nimport torch.nn.functional as F\n\nfrom harness.api import EvictionMethod, Keep, LayerView\n\n\n"

CLOCK = HEAD + '''class Clock(EvictionMethod):
    query_window = 32

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention(), "max")                          # (H_kv, n, T)
        strong = a * view.n_tokens > 2.0
        steps = view.query_positions.float()[None, :, None].expand_as(a)
        seen = steps.masked_fill(~strong, -1.0).amax(dim=1)
        old = view.recall("seen", fill=-1.0)
        seen = torch.maximum(seen, old)
        view.remember("seen", seen)
        return Keep.from_topk(seen, view.budget, view.valid)
'''


def test_a_step_stamped_where_attention_is_strong_is_the_last_attended_clock() -> None:
    assert "last_attended" in computation(CLOCK).features
    # the step filled where attention is weak with the attention itself is no clock: attention where it is strong
    other = CLOCK.replace("steps.masked_fill(~strong, -1.0)", "a.masked_fill(~strong, 0.0)")
    assert "last_attended" not in computation(other).features


BLOCKS = HEAD + '''class Shelves(EvictionMethod):
    query_window = 8
    width = 32
    picks = 2

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention().sum(dim=1), "mean")
        q = view.queries[:, -1].float()
        g = view.model.group_size
        out = []
        for h in range(view.n_kv_heads):
            ids = torch.arange(view.n_tokens)
            shelves = [ids[s:s + self.width] for s in range(0, ids.numel(), self.width)]
            worth = []
            for shelf in shelves:
                best = a[h, shelf].topk(min(self.picks, shelf.numel())).indices
                worth.append((q[h * g:(h + 1) * g] @ view.keys[h, shelf[best]].float().T).mean())
            order = torch.stack(worth).argsort(descending=True).tolist()
            chosen = torch.cat([shelves[i] for i in order])[: view.budget]
            out.append(chosen.sort().values)
        return Keep(tuple(out))
'''


def test_blocks_of_token_indices_and_their_ranked_representatives_score_blocks_by_keys() -> None:
    f = computation(BLOCKS).features
    assert "block_keys" in f, sorted(f)
    # the query against every key of the block (no representative picked) scores no representative keys
    plain = BLOCKS.replace("view.keys[h, shelf[best]]", "view.keys[h, shelf]")
    assert "block_keys" not in computation(plain).features


VOTES = HEAD + '''class Hands(EvictionMethod):
    query_window = 1

    def select(self, view: LayerView) -> Keep:
        p = view.attention(view.queries[:, -1:], reduce="sum")          # (H_q, T)
        best = p.topk(min(view.budget, p.shape[-1]), dim=-1)
        ballots = torch.zeros_like(p).scatter_(-1, best.indices, best.values)
        return Keep.from_topk(view.group(ballots, "sum"), view.budget, view.valid)
'''


def test_each_head_s_own_top_weights_summed_are_votes() -> None:
    f = computation(VOTES).features
    assert "query_votes" in f, sorted(f)
    same = [m.short_name for m in computation_matches(f, "# Hands\n", computation(VOTES).paths, "C")
            if m.level == "same"]
    assert "TokenSelect" in same, same
    # the attention written back whole (no top-k of its own) is attention, no vote
    whole = VOTES.replace("scatter_(-1, best.indices, best.values)", "add_(p)")
    assert "query_votes" not in computation(whole).features
    # the weights unpacked by name vote the same
    unpacked = VOTES.replace("        best = p.topk(min(view.budget, p.shape[-1]), dim=-1)\n",
                             "        w, at = p.topk(min(view.budget, p.shape[-1]), dim=-1)\n").replace(
        "scatter_(-1, best.indices, best.values)", "scatter_(-1, at, w)")
    assert "query_votes" in computation(unpacked).features
    # a mask of each row's leading set written in sorted order is a coverage mask, no vote
    mask = VOTES.replace("        best = p.topk(min(view.budget, p.shape[-1]), dim=-1)\n",
                         "        srt, order = p.sort(dim=-1, descending=True)\n"
                         "        lead = (srt.cumsum(-1) - srt) < 0.9\n").replace(
        "torch.zeros_like(p).scatter_(-1, best.indices, best.values)",
        "torch.zeros_like(lead).scatter(-1, order, lead).float() * p")
    assert "query_votes" not in computation(mask).features


def _summary(text: str) -> str:
    return (f"# Groups\n\n## Idea\nKeys form groups.\n\n## Method summary\n{text}\n\n## Relation to prior work\n"
            "None.\n\n## Evidence\nNone.\n\n## Limitations\nSome.\n")


FIXED_K = HEAD + '''def lloyd(x: torch.Tensor, k: int, rounds: int = 4) -> torch.Tensor:
    c = x[torch.linspace(0, x.shape[0] - 1, k).long()]
    for _ in range(rounds):
        lab = (x @ c.T).argmax(-1)
        c = F.normalize(torch.zeros_like(c).index_add_(0, lab, x), dim=-1)
    return (x @ c.T).argmax(-1)


class Groups(EvictionMethod):
    groups = 12

    def select(self, view: LayerView) -> Keep:
        out = []
        for h in range(view.n_kv_heads):
            x = F.normalize(view.keys[h].float(), dim=-1)
            lab = lloyd(x, self.groups)
            size = torch.bincount(lab, minlength=self.groups).float()
            out.append(size[lab])
        return Keep.from_topk(-torch.stack(out), view.budget, view.valid)
'''
SEARCHED_K = FIXED_K.replace('''            lab = lloyd(x, self.groups)''', '''            best, lab = None, None
            for k in (6, 12, 24):
                cand = lloyd(x, k)
                spread = sum(float((x[cand == j] - x[cand == j].mean(0)).pow(2).sum()) for j in range(k))
                if best is None or spread < 0.8 * best:
                    best, lab = spread, cand''')

SEARCH_CLAIMS = [
    "Keys are grouped by spherical k-means; each head picks its number of groups with an elbow test on the spread.",
    "Groups start as one per head and the loosest group is split until the within-group spread stops falling.",
]


def test_a_searched_cluster_count_over_one_fixed_count_is_misstated() -> None:
    for text in SEARCH_CLAIMS:
        found = [m for m in misstatements(_summary(text), FIXED_K) if m.mechanism == "a searched number of clusters"]
        assert found and found[0].strict, text
        # code that clusters at several counts and keeps the best could do it: no proof
        assert not [m for m in misstatements(_summary(text), SEARCHED_K)
                    if m.mechanism == "a searched number of clusters" and m.strict], text
    # a count set from the length is a formula, not a search: no claim of one
    formula = "Keys are grouped by spherical k-means, one group per 16 tokens of the head."
    assert not [m for m in misstatements(_summary(formula), FIXED_K) if m.mechanism == "a searched number of clusters"]


QUESTION = HEAD + '''class Halves(EvictionMethod):
    question_queries = True
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        a = view.attention()                                             # (H_q, rows, T): the question's rows
        half = a.shape[1] // 2
        early = view.group(a[:, :half].sum(dim=1), "mean").clamp_min(1e-6)
        late = view.group(a[:, half:].sum(dim=1), "mean").clamp_min(1e-6)
        return Keep.from_topk((early * late).sqrt(), view.budget, view.valid)
'''
CREDITS_SNAPKV = ("# Halves\n\n## Idea\nTwo halves of the question must agree.\n\n## Method summary\nThe question rows' "
                  "attention as in SnapKV, split in two halves; a token scores the geometric mean of both.\n\n"
                  "## Relation to prior work\nSnapKV (Li et al., 2024, arXiv 2404.14469) gives the attention score; "
                  "the agreement of the halves is ours.\n")
LIKE_FINCH = [BehaviourMatch(reference="priorart:FINCH", member="pa_finch", jaccard=0.93, rank_corr=0.95,
                             source="benchmark")]


def test_behaving_like_a_reference_a_credit_covers_is_no_flag() -> None:
    c = computation(QUESTION)
    computed = computation_matches(c.features, CREDITS_SNAPKV, c.paths, "A")
    assert any(m.short_name == "FINCH" and m.credited for m in computed), [(m.short_name, m.credited) for m in computed]
    flags = prior_art_flags(LIKE_FINCH, [], {}, CREDITS_SNAPKV, QUESTION, ("class Halves", 6), computed=computed,
                            features=c.features)
    assert flags == []
    # crediting nothing, the same behaviour is a flag
    bare = CREDITS_SNAPKV.replace(" as in SnapKV", "").replace(
        "SnapKV (Li et al., 2024, arXiv 2404.14469) gives the attention score; the", "The")
    computed = computation_matches(c.features, bare, c.paths, "A")
    flags = prior_art_flags(LIKE_FINCH, [], {}, bare, QUESTION, ("class Halves", 6), computed=computed,
                            features=c.features)
    assert [f.flag for f in flags] == ["UNDISCLOSED_PRIOR_ART"]


def test_the_tests_use_the_real_harness_interface() -> None:
    api = (Path(__file__).resolve().parent.parent / "harness" / "api.py").read_text()
    for name in ("def remember", "def recall", "def group", "def from_topk", "query_positions"):
        assert name in api


def test_novelty_of_keeping_what_a_credited_rule_keeps_is_at_most_one_not_zero() -> None:
    from reviewbench.evidence.facts import ComputedFact, EvidenceFacts, SimilarityFact
    from reviewbench.evidence.judge import novelty
    from reviewbench.rubric import load_rubric

    rubric = load_rubric(Path(__file__).resolve().parent.parent / "rubrics" / "default.toml")

    def facts(credited: bool) -> EvidenceFacts:
        comp = [ComputedFact(short_name="FINCH", title="t", arxiv=None, level="same",
                             ops=["attention", "question_queries"], extra=[], credited=credited)]
        beh = [SimilarityFact(reference="priorart:FINCH", implements=None, via="behaviour", score=0.95,
                              credited=False, credit_reason="not attributed")]
        return EvidenceFacts(computed=comp, behaviour=beh, behaviour_measured=True)

    got = novelty(facts(True), rubric)
    assert got.score == 1 and "credits" in got.rationale
    assert novelty(facts(False), rubric).score == 0
