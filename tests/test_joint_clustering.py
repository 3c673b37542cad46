"""Issue 23: keys clustered together with the queries (one set of points, as routing attention does) are keys
clustered; a weighted mean of the keys by attention is not. The index's own prose of a clustering paper states the
clustering, so crediting it covers a rule that clusters keys.

Code and descriptions written fresh for these tests (not a held-out case).
"""

from __future__ import annotations

from reviewbench.evidence.computation import computation
from reviewbench.evidence.priorart_evidence import prior_art
from reviewbench.evidence.stated import implied_features
from reviewbench.priorart import load_index

HEAD = "import torch\nimport torch.nn.functional as F\n\nfrom harness.api import EvictionMethod, Keep, LayerView\n\n\n"

# keys and the question's queries as one point set, Lloyd iterations with a masked mean per centre; a key scores by
# the attention of the queries that share its centre
JOINT = HEAD + '''class Tidepool(EvictionMethod):
    question_queries = True
    rounds = 5

    def select(self, view: LayerView) -> Keep:
        g = view.model.group_size
        rows = []
        for h in range(view.n_kv_heads):
            keys = view.keys[h].float()
            qs = view.queries[h * g:(h + 1) * g].float().flatten(0, 1)
            cloud = torch.cat((keys, qs), dim=0)
            k = max(2, int(keys.shape[0] ** 0.5))
            centres = cloud[torch.randperm(cloud.shape[0])[:k]]
            for _ in range(self.rounds):
                owner = (cloud @ centres.t()).argmax(dim=1)
                centres = torch.stack([cloud[owner == c].mean(0) if (owner == c).any() else centres[c]
                                       for c in range(k)])
            mine = (keys @ centres.t()).argmax(dim=1)
            theirs = (qs @ centres.t()).argmax(dim=1)
            att = torch.softmax(qs @ keys.t() * view.model.scale, dim=-1)
            same = (theirs[:, None] == mine[None, :]).float()
            rows.append((att * same).sum(0))
        return Keep.from_topk(torch.stack(rows), view.budget, view.valid)
'''

# attention-weighted keys joined with the queries: a summary, not a clustering (no assignment to centres)
WEIGHTED = HEAD + '''class Lantern(EvictionMethod):
    question_queries = True

    def select(self, view: LayerView) -> Keep:
        g = view.model.group_size
        rows = []
        for h in range(view.n_kv_heads):
            keys = view.keys[h].float()
            qs = view.queries[h * g:(h + 1) * g].float().flatten(0, 1)
            att = torch.softmax(qs @ keys.t() * view.model.scale, dim=-1)
            summary = att @ keys
            both = torch.cat((summary, qs), dim=0)
            rows.append((both @ keys.t()).amax(dim=0))
        return Keep.from_topk(torch.stack(rows), view.budget, view.valid)
'''


def test_keys_clustered_with_the_queries_are_clustered_keys() -> None:
    assert "key_clustering" in computation(JOINT).features


def test_a_weighted_key_summary_beside_the_queries_is_no_clustering() -> None:
    assert "key_clustering" not in computation(WEIGHTED).features


def test_clustering_papers_state_the_clustering_in_their_own_entry() -> None:
    index = load_index()
    for name in ("ClusterKV", "Routing Transformer", "Clustered Attention"):
        p = index.by_name(name)
        assert p is not None
        text = ". ".join([p.title, p.key_idea, "; ".join(p.keywords)])
        assert "key_clustering" in implied_features(text), name
    for name in ("SnapKV", "H2O", "StreamingLLM"):
        p = index.by_name(name)
        assert p is not None
        assert "key_clustering" not in implied_features(". ".join([p.title, p.key_idea, "; ".join(p.keywords)]))


def _desc(relation: str) -> str:
    return ("# Tidepool\n\n## Idea\nRoute tokens to shared centres.\n\n## Method summary\nKeys and question queries "
            "are clustered together; keys that share a centre with the question keep their attention.\n\n"
            f"## Relation to prior work\n{relation}\n\n## Evidence\nNone.\n\n## Limitations\nSome.\n\n"
            "## Builds on\nNone.\n")


def test_crediting_a_clustering_paper_covers_a_clustering_rule_and_silence_does_not() -> None:
    credited = _desc("A training-free port of the Routing Transformer (Roy et al., arXiv 2003.05997): we use its "
                     "content-based routing as an eviction score.")
    silent = _desc("Nothing close that we know of.")
    got = prior_art(JOINT, "", "", credited, board="A").computed
    clustering = [c for c in got if "key_clustering" in c.matched]
    assert clustering and all(c.credited for c in clustering)
    assert "Routing Transformer" in clustering[0].credit.reason
    bare = [c for c in prior_art(JOINT, "", "", silent, board="A").computed if "key_clustering" in c.matched]
    assert bare and not any(c.credited for c in bare)
