"""Issue 23: the queries' mean alone, scored against the keys or their centroids, is the mean of those queries'
logits (q̄·k = mean of q·k): a choice of queries and an aggregation of them, not a statistic of their distribution.
A rule of attention that names no query statistics explains it; a rule that names them (Expected Attention's mean and
covariance) still reads it; a spread of the queries stays an operation of its own.

Code written fresh for these tests (no held-out case).
"""

from __future__ import annotations

from reviewbench.evidence.computation import computation
from reviewbench.evidence.priorart_evidence import computation_matches

HEAD = "import torch\nimport torch.nn.functional as F\n\nfrom harness.api import EvictionMethod, Keep, LayerView\n\n\n"

# keys clustered (Lloyd, cosine), clusters ranked by their centroid against the window's mean query, whole clusters
# kept by that rank
CENTROID_PROBE = HEAD + '''class Harbour(EvictionMethod):
    query_window = 32

    def select(self, view: LayerView) -> Keep:
        probe = view.group(view.queries.float().mean(dim=1), "mean")
        out = []
        for h in range(view.n_kv_heads):
            unit = F.normalize(view.keys[h].float(), dim=-1)
            n = max(1, unit.shape[0] // 16)
            centre = unit[torch.linspace(0, unit.shape[0] - 1, n).long()]
            for _ in range(4):
                owner = (unit @ centre.T).argmax(-1)
                centre = F.normalize(torch.zeros_like(centre).index_add_(0, owner, unit) + 1e-6, dim=-1)
            rank = centre @ probe[h]
            out.append(rank[owner])
        return Keep.from_topk(torch.stack(out), view.budget, view.valid)
'''

# the same probe with the spread of the queries: a statistic of their distribution
WITH_SPREAD = CENTROID_PROBE.replace(
    '            rank = centre @ probe[h]\n',
    '            spread = view.queries.float().var(dim=1).mean(dim=0)\n'
    '            rank = centre @ probe[h] + 0.5 * (centre * centre * spread).sum(-1)\n')


def _same(src: str) -> set[str]:
    c = computation(src)
    desc = "# Harbour\n\n## Method summary\n- Harbours of related keys, ranked.\n"
    return {m.short_name for m in computation_matches(c.features, desc, c.paths, "B_online")
            if m.level == "same" and not m.credited}


def test_a_mean_query_against_centroids_is_a_choice_of_queries() -> None:
    assert "query_statistics" in computation(CENTROID_PROBE).features
    assert "ClusterKV" in _same(CENTROID_PROBE)


def test_a_spread_of_the_queries_stays_an_operation_of_its_own() -> None:
    assert "ClusterKV" not in _same(WITH_SPREAD)
