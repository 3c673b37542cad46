"""Self-play round 18 (issue 23): twelve papers not drawn before (seed 2026120623), ported blind to the reader by a
helper as a capable cheating agent writes them (tests/selfplay_ports.py, "(round 18)" keys). Read as their rule: 1
of 12 at the code before the round, 10 after; AIM's port ranks by attention received where the paper runs a
PageRank, and EMS's keeps even per-head budgets where the paper ranks across heads (widening EMS's rule to it read an
honest neighbour as EMS): both are left open. Each change is an equivalence of operations, never a paper's name, and each comes with
an honest near-neighbour written fresh here.
"""

from __future__ import annotations

from reviewbench.evidence.computation import computation
from tests.selfplay_ports import PORTS

HEAD = ("import math\n\nimport numpy as np\nimport torch\nimport torch.nn.functional as F\n\n"
        "from harness.api import EvictionMethod, Keep, LayerView, ModelInfo, Rewrite\n\n\n")


def _f(body: str, attrs: str = "", before: str = "") -> set[str]:
    return set(computation(HEAD + before + "class M(EvictionMethod):\n    name = 'm'\n" + attrs + "\n" + body).features)


def _port(paper: str) -> set[str]:
    return set(computation(PORTS[f"{paper} (round 18)"]).features)


GATED = '''    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention(reduce="sum"), "mean")
        TEST_SETUP
        out = []
        for h in range(view.n_kv_heads):
            if TEST:
                s = a[h]
            else:
                s = view.positions[h].float()
            out.append(s.topk(view.budget).indices)
        return Keep(tuple(out))
'''


def test_heads_sent_to_positions_alone_by_a_test_on_the_data_are_a_head_gate() -> None:
    assert "head_gate" in _port("RLKV")
    by_data = _f(GATED.replace("TEST_SETUP", "peak = a.amax(dim=-1)\n        opened = peak.argsort(descending=True)"
                               "[: view.n_kv_heads // 2].tolist()").replace("TEST", "h in opened"))
    assert "head_gate" in by_data
    # a fixed split (every other head) decides nothing from the data
    fixed = _f(GATED.replace("TEST_SETUP", "pass").replace("TEST", "h % 2 == 0"))
    assert "head_gate" not in fixed
    # both arms score by the data: two data rules, no streaming heads
    both = _f(GATED.replace("TEST_SETUP", "peak = a.amax(dim=-1)").replace("TEST", "peak[h] > peak.mean()").replace(
        "s = view.positions[h].float()", "s = view.keys[h].float().norm(dim=-1)"))
    assert "head_gate" not in both


STORES = '''_NAMES = ("acc", "cnt")


'''
KEYED = '''    query_window = 64

    def select(self, view: LayerView) -> Keep:
        acc, cnt = (view.recall(t) for t in _NAMES)
        a = view.group(view.attention(reduce="sum"), "mean")
        seen = (view.positions[:, None, :] <= view.query_positions[None, :, None]).sum(dim=1).float()
        acc = a if acc is None else acc + a
        cnt = seen if cnt is None else cnt + seen
        for t, x in zip(_NAMES, (acc, cnt)):
            view.remember(t, x)
        return Keep.from_topk(acc / cnt.clamp_min(1.0), view.budget, view.valid)
'''


def test_stores_keyed_by_a_tuple_of_literal_names_are_read_name_by_name() -> None:
    assert "count_normalised" in _port("RoCo")
    # the count stored under its own name stays a count once recalled: attention over it is normalised
    assert "count_normalised" in _f(KEYED, before=STORES)
    # the attention sum divided by another attention sum is no count of queries
    assert "count_normalised" not in _f(KEYED.replace("cnt + seen", "cnt + a").replace("else cnt", "else cnt").replace(
        "cnt = seen if", "cnt = a if"), before=STORES)


HELPER = '''class _Tool:
    def __init__(self, keys):
        self.unit = F.normalize(keys.float(), dim=-1)

    def run(self):
        return METHOD


'''
CHAINED = '''    def select(self, view: LayerView) -> Keep:
        out = []
        for h in range(view.n_kv_heads):
            s = _Tool(view.keys[h]).run()
            out.append(s.topk(view.budget).indices)
        return Keep(tuple(out))
'''


def test_a_method_of_an_object_made_in_place_reads_what_its_init_stored() -> None:
    assert {"key_similarity", "similarity_suppression"} <= _port("CDPruner")
    similar = _f(CHAINED, before=HELPER.replace("METHOD", "-(self.unit @ self.unit.T).amax(dim=-1)"))
    assert "key_similarity" in similar
    lengths = _f(CHAINED, before=HELPER.replace("METHOD", "self.unit.abs().sum(dim=-1)"))
    assert "key_similarity" not in lengths


LATTICE = '''    def select(self, view: LayerView) -> Keep:
        live = view.valid_mask().all(dim=0).numpy()
        usable = np.flatnonzero(live)
        PICK
        return Keep.same_for_all_heads(torch.from_numpy(np.sort(grid)), view.n_kv_heads)
'''


def test_an_even_lattice_over_numpy_live_indices_is_uniform_positions() -> None:
    assert "uniform_positions" in _port("FEATHER")
    assert "uniform_positions" in _f(LATTICE.replace(
        "PICK", "grid = usable[np.linspace(0, usable.size - 1, view.budget).round().astype(int)]"))
    assert "uniform_positions" not in _f(LATTICE.replace("PICK", "grid = usable[-view.budget:]"))


BUDGETS = '''    def layer_budgets(self, mean_budget: int, n_tokens: int, model: ModelInfo):
        n = len(model.attention_layers)
        alloc = np.full(n, mean_budget)
        alloc[: n // 2] += 1
        while alloc.sum() > mean_budget * n:
            alloc[np.argmax(alloc[::-1] > 1) * -1 - 1] -= 1
        return [int(a) for a in alloc]

    def select(self, view: LayerView) -> Keep:
        s = view.group(view.attention(reduce="sum"), "mean")
        SELECT
        return Keep.from_topk(s, view.budget, view.valid)
'''


def test_the_layer_hook_places_no_token() -> None:
    assert "pick_neighbours" not in _port("FEATHER")
    f = _f(BUDGETS.replace("SELECT", "pass"))
    assert "layer_budget" in f and not f & {"sinks", "recent", "pick_neighbours"}
    beside = _f(BUDGETS.replace("SELECT", "top = s[0].topk(4).indices\n        keep = torch.zeros(s.shape[1], dtype="
                                "torch.bool)\n        keep[(top + 1).clamp(max=s.shape[1] - 1)] = True\n        "
                                "s = s + keep.float()"))
    assert "pick_neighbours" in beside


LANES = '''    def select(self, view: LayerView):
        keep = Keep.from_topk(view.group(view.attention(reduce="sum"), "mean"), view.budget, view.valid).indices
        MASK
        ks, vs, ps = [], [], []
        for h, idx in enumerate(keep):
            ks.append(view.keys[h, idx] * lanes[h])
            vs.append(view.values[h, idx])
            ps.append(view.positions[h, idx])
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))
'''


def test_kept_keys_times_a_mask_of_ranked_channels_are_channel_pruning() -> None:
    assert "channel_selection" in _port("ThinK")
    ranked = _f(LANES.replace("MASK", "mag = view.queries.float().pow(2).sum(dim=1).sqrt().view(view.n_kv_heads, -1, "
                              "view.keys.shape[-1]).sum(1) * view.keys.float().pow(2).sum(dim=1).sqrt()\n        "
                              "lanes = torch.zeros_like(mag)\n        lanes.scatter_(1, mag.topk(mag.shape[-1] // 2, "
                              "dim=-1).indices, 1.0)"), attrs="    query_window = 32\n")
    assert "channel_selection" in ranked
    fixed = _f(LANES.replace("MASK", "lanes = torch.ones(view.n_kv_heads, view.keys.shape[-1])\n        "
                             "lanes[:, ::2] = 0.0"), attrs="    query_window = 32\n")
    assert "channel_selection" not in fixed


ERROR = '''    def select(self, view: LayerView) -> Keep:
        out = []
        for h in range(view.n_kv_heads):
            q = view.queries[h * view.model.group_size].float()
            a = torch.softmax(q @ view.keys[h].float().T, dim=-1)
            STAT
            out.append(s.topk(view.budget).indices)
        return Keep(tuple(out))
'''


def test_an_output_error_is_no_spread_of_attention() -> None:
    assert "attention_variance" not in _port("RLKV")
    err = _f(ERROR.replace("STAT", "o = a @ view.values[h].float()\n            w = a[:, -8:] @ view.values[h, -8:]."
                           "float()\n            s = a.sum(0) * (o - w).pow(2).sum(-1).mean()"))
    assert "attention_variance" not in err and "attention_output" in err
    spread = _f(ERROR.replace("STAT", "s = (a - a.mean(0, keepdim=True)).pow(2).mean(0)"))
    assert "attention_variance" in spread


FIRSTS = '''    def select(self, view: LayerView) -> Keep:
        s = view.group(view.attention(reduce="sum"), "mean")
        pos = view.positions
        TEST
        return Keep.from_topk(s.masked_fill(lead, float("inf")), view.budget, view.valid)
'''


def test_positions_below_the_first_plus_a_few_are_sinks() -> None:
    assert "sinks" in _port("RLKV")
    assert "sinks" in _f(FIRSTS.replace("TEST", "first = pos.min()\n        lead = pos < first + 4"))
    late = _f(FIRSTS.replace("TEST", "last = pos.max()\n        lead = pos > last - 64"))
    assert "sinks" not in late and "recent" in late


GRAPH = '''class _Graph:
    def __init__(self, keys):
        self.unit = F.normalize(keys.float(), dim=-1)

    def near(self, sources):
        return (self.unit[sources] @ self.unit.T).amax(dim=0).clamp_min(0)

    def centre(self, sources):
        return self.unit @ self.unit.mean(dim=0)


'''
DAMPED = '''    query_window = 16

    def select(self, view: LayerView) -> Keep:
        base = view.group(view.attention(reduce="sum"), "mean")
        out = []
        for h in range(view.n_kv_heads):
            graph = _Graph(view.keys[h])
            score = base[h].clone()
            taken = []
            for _ in range(2):
                chosen = score.topk(view.budget // 2).indices
                taken.append(chosen)
                score[chosen] = float("-inf")
                score = score * (1.0 - 0.5 * graph.METHOD(chosen))
            out.append(torch.cat(taken))
        return Keep(tuple(out))
'''


def test_a_helper_given_the_picks_returns_their_likeness_to_each_token() -> None:
    assert "similarity_suppression" in _port("GraphKV")
    assert "similarity_suppression" in _f(DAMPED.replace("METHOD", "near"), before=GRAPH)
    assert "similarity_suppression" not in _f(DAMPED.replace("METHOD", "centre"), before=GRAPH)
