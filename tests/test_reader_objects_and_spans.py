"""Issue 23: the reader follows what a method computes through the shapes ported code takes.

- A helper object (a class of the module built inside ``select``) keeps the data its ``__init__`` stores: its
  methods and the caller's ``obj.attr`` read those tensors, so attention computed in its ``__call__`` over
  ``self.keys`` is attention, and a clustering done in its ``__init__`` is a clustering.
- Lloyd iterations written with a mask (``x[assign == c].mean(0)``) and per-cluster tables read at each key's code
  (``table[:, codes]``) are a clustering; a key's nearest other key is not.
- A loop over tuples (``for score, a, b in sorted(worth)``) binds each name its own element: the bounds of a
  segment carry no score; ``x[a:b]`` with ``a, b`` taken from one tuple of positions is a segment of the tokens.
- A comparison with an infinity is the sentinel a greedy loop writes over what it took, no bar.

Every snippet is written fresh for these tests (no held-out case, no self-play port).
"""

from __future__ import annotations

from reviewbench.evidence.computation import computation
from reviewbench.evidence.priorart_evidence import computation_matches

HEAD = ("import math\n\nimport numpy as np\nimport torch\nimport torch.nn.functional as F\n\n"
        "from harness.api import EvictionMethod, Keep, LayerView\n\n\n")

# a scorer object: keys stored at construction, softmax of the queries against them in __call__
SCORER_OBJECT = HEAD + '''class _Lens:
    def __init__(self, keys: torch.Tensor, scale: float) -> None:
        self.keys = keys.float()
        self.scale = scale

    def __call__(self, q: torch.Tensor) -> torch.Tensor:
        return torch.softmax(q.float() @ self.keys.T * self.scale, dim=-1)


class Loupe(EvictionMethod):
    query_window = 8

    def select(self, view: LayerView) -> Keep:
        g = view.model.group_size
        rows = []
        for h in range(view.n_kv_heads):
            lens = _Lens(view.keys[h], view.model.scale)
            rows.append(lens(view.queries[h * g:(h + 1) * g]).sum(dim=(0, 1)))
        return Keep.from_topk(torch.stack(rows), view.budget, view.valid)
'''

# the same shape holding positions only: the newest tokens, no data read through the object
POSITION_OBJECT = HEAD + '''class _Clock:
    def __init__(self, positions: torch.Tensor) -> None:
        self.age = positions.max() - positions

    def __call__(self) -> torch.Tensor:
        return -self.age.float()


class Hourglass(EvictionMethod):
    def select(self, view: LayerView) -> Keep:
        clock = _Clock(view.positions)
        return Keep.from_topk(clock(), view.budget, view.valid)
'''

# spherical k-means inside an object's __init__; the caller reads its centres and labels
CLUSTER_OBJECT = HEAD + '''class _Groups:
    def __init__(self, keys: torch.Tensor, n: int) -> None:
        unit = F.normalize(keys.float(), dim=-1)
        centre = unit[torch.linspace(0, unit.shape[0] - 1, n).long()].clone()
        for _ in range(4):
            owner = (unit @ centre.T).argmax(-1)
            total = torch.zeros_like(centre).index_add_(0, owner, unit)
            centre = F.normalize(total + 1e-6, dim=-1)
        self.centre, self.owner = centre, (unit @ centre.T).argmax(-1)


class Archipelago(EvictionMethod):
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        g = view.model.group_size
        rows = []
        for h in range(view.n_kv_heads):
            groups = _Groups(view.keys[h], max(1, view.n_tokens // 32))
            q = view.queries[h * g:(h + 1) * g].float().flatten(0, 1)
            fit = torch.softmax(q @ groups.centre.T, dim=-1).sum(0)
            rows.append(fit[groups.owner])
        return Keep.from_topk(torch.stack(rows), view.budget, view.valid)
'''

# an object that only keeps the keys' mean norm: no clustering
NORM_OBJECT = HEAD + '''class _Scale:
    def __init__(self, keys: torch.Tensor) -> None:
        self.level = keys.float().norm(dim=-1).mean()


class Plumb(EvictionMethod):
    def select(self, view: LayerView) -> Keep:
        scale = _Scale(view.keys)
        return Keep.from_topk(view.keys.float().norm(dim=-1) / scale.level, view.budget, view.valid)
'''

# numpy Lloyd iterations with masked members; the queries scored against the centres, read at each key's code
NUMPY_LLOYD = HEAD + '''def _lloyd(x: np.ndarray, n: int, rounds: int = 5) -> tuple[np.ndarray, np.ndarray]:
    centres = x[np.linspace(0, len(x) - 1, n).astype(int)].copy()
    for _ in range(rounds):
        dist = ((x[:, None, :] - centres[None, :, :]) ** 2).sum(-1)
        label = dist.argmin(1)
        for c in range(n):
            part = x[label == c]
            if len(part):
                centres[c] = part.mean(0)
    return centres, ((x[:, None, :] - centres[None, :, :]) ** 2).sum(-1).argmin(1)


class Lattice(EvictionMethod):
    query_window = 8

    def select(self, view: LayerView) -> Keep:
        g = view.model.group_size
        out = torch.zeros(view.keys.shape[:2])
        for h in range(view.n_kv_heads):
            k = view.keys[h].float().cpu().numpy()
            q = view.queries[h * g:(h + 1) * g].float().cpu().numpy().reshape(-1, k.shape[-1])
            centres, label = _lloyd(k, 12)
            table = q @ centres.T
            out[h] = torch.from_numpy(table[:, label].sum(0))
        return Keep.from_topk(out, view.budget, view.valid)
'''

# each key's nearest other key (a redundancy), its similarity subtracted: no clustering
NEAREST_KEY = HEAD + '''class Twins(EvictionMethod):
    def select(self, view: LayerView) -> Keep:
        out = []
        for h in range(view.n_kv_heads):
            k = F.normalize(view.keys[h].float(), dim=-1)
            sim = k @ k.T - 2 * torch.eye(k.shape[0])
            nearest = sim.argmax(-1)
            out.append(-(k * k[nearest]).sum(-1))
        return Keep.from_topk(torch.stack(out), view.budget, view.valid)
'''

# segments from a helper (fixed pieces of 24), a segment's mean attention from the question, whole segments kept
SEGMENTS = HEAD + '''def _pieces(n: int, width: int) -> list[tuple[int, int]]:
    cuts = []
    start = 0
    while start < n:
        cuts.append((start, min(n, start + width)))
        start += width
    return cuts


class Paragraphs(EvictionMethod):
    query_window = 8
    question_queries = True

    def select(self, view: LayerView) -> Keep:
        att = view.group(view.attention(reduce="sum"), "mean")
        picks = []
        for h in range(view.n_kv_heads):
            take = torch.zeros(view.n_tokens, dtype=torch.bool)
            room = view.budget
            ranked = sorted(((float(att[h, a:b].mean()), a, b) for a, b in _pieces(view.n_tokens, 24)), reverse=True)
            for _, a, b in ranked:
                if b - a <= room:
                    take[a:b] = True
                    room -= b - a
            picks.append(take.nonzero().flatten())
        return Keep(tuple(picks))
'''

# the same loop comparing the score element against a bar: a threshold
SEGMENTS_BAR = SEGMENTS.replace("            for _, a, b in ranked:\n                if b - a <= room:",
                                "            for s, a, b in ranked:\n                if s > 0.01 and b - a <= room:")

# greedy picks that damp neighbours; a taken entry is written -inf and the loop stops when only those remain
GREEDY = HEAD + '''class Spacer(EvictionMethod):
    query_window = 8

    def select(self, view: LayerView) -> Keep:
        score = view.group(view.attention(reduce="sum"), "mean")
        out = []
        for h in range(view.n_kv_heads):
            s = score[h].clone()
            taken = torch.zeros_like(s, dtype=torch.bool)
            for _ in range(view.budget):
                i = int(s.argmax())
                if s[i] == -math.inf:
                    break
                taken[i] = True
                s[i] = -math.inf
                s[max(0, i - 1):i + 2] *= 0.5
            out.append(taken.nonzero().flatten())
        return Keep(tuple(out))
'''
GREEDY_BAR = GREEDY.replace("if s[i] == -math.inf:", "if s[i] < 1e-3:")


def test_attention_in_a_helper_objects_call_over_the_keys_it_stored() -> None:
    assert "attention" in computation(SCORER_OBJECT).features


def test_an_object_holding_positions_reads_no_data() -> None:
    f = computation(POSITION_OBJECT).features
    assert not set(f) & {"attention", "key_norm", "key_clustering"}


def test_a_clustering_in_an_objects_init_is_a_clustering() -> None:
    assert "key_clustering" in computation(CLUSTER_OBJECT).features


def test_an_object_keeping_a_mean_norm_clusters_nothing() -> None:
    f = computation(NORM_OBJECT).features
    assert "key_clustering" not in f and "key_norm" in f


def test_masked_lloyd_members_and_a_code_lookup_are_a_clustering() -> None:
    f = computation(NUMPY_LLOYD).features
    assert {"key_clustering", "attention"} <= set(f)


def test_a_keys_nearest_other_key_is_no_clustering() -> None:
    assert "key_clustering" not in computation(NEAREST_KEY).features


def test_segment_bounds_from_tuples_carry_no_score_and_their_means_are_block_scores() -> None:
    f = computation(SEGMENTS).features
    assert "block_scores" in f and "attention_threshold" not in f
    assert "attention_threshold" in computation(SEGMENTS_BAR).features


def test_segment_means_of_the_questions_attention_compute_shotkvs_rule() -> None:
    c = computation(SEGMENTS)
    desc = "# Paragraphs\n\n## Method summary\nWhole paragraphs are kept by their attention.\n"
    m = {x.short_name: x for x in computation_matches(c.features, desc, c.paths, "A")}
    assert "ShotKV" in m and m["ShotKV"].level == "same" and not m["ShotKV"].credited


def test_an_infinity_sentinel_is_no_bar_and_a_small_constant_is() -> None:
    assert "attention_threshold" not in computation(GREEDY).features
    assert "attention_threshold" in computation(GREEDY_BAR).features


# keys padded to whole chunks and viewed as (ceil(n / c), c, d): blocks; their means read against the window's rows
CHUNKED = HEAD + '''class Beads(EvictionMethod):
    query_window = 8
    width = 8

    def select(self, view: LayerView) -> Keep:
        out = []
        g = view.model.group_size
        for h in range(view.n_kv_heads):
            k = view.keys[h].float()
            n = k.shape[0]
            m = math.ceil(n / self.width)
            pad = m * self.width - n
            k = torch.cat([k, k[-1:].expand(pad, -1)]) if pad else k
            SHAPE
            mean = tiles.mean(dim=1)
            q = view.queries[h * g:(h + 1) * g].float()
            score = (q @ mean.T).softmax(-1).sum(dim=(0, 1))
            out.append(score.repeat_interleave(self.width)[:n])
        return Keep.from_topk(torch.stack(out), view.budget, view.valid)
'''


def test_keys_viewed_as_ceil_sized_chunks_are_blocks_and_channel_pairs_are_not() -> None:
    f = computation(CHUNKED.replace("SHAPE", "tiles = k.view(m, self.width, -1)")).features
    assert "block_keys" in f
    pairs = CHUNKED.replace("SHAPE", "tiles = k.view(k.shape[0], math.ceil(k.shape[1] / 2), 2).flatten(1)[None]")
    assert "block_keys" not in computation(pairs).features
