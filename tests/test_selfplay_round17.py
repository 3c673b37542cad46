"""Self-play round 17 (issue 23): twelve papers not drawn before, ported blind to the reader by a helper as a capable
cheating agent writes them (tests/selfplay_ports.py, "(round 17)" keys, each with the board it was written for). Read
as their rule: 1 of 12 at the code before the round, 12 after (G-Prune's once its rule stated the paper's initial
scores, each node's L2 norm). Each change is an equivalence of operations, never a paper's name,
and each comes with an honest near-neighbour written fresh here.
"""

from __future__ import annotations

from reviewbench.evidence.computation import computation
from reviewbench.evidence.priorart_evidence import computation_matches
from tests.selfplay_ports import BOARDS, PORTS

HEAD = ("import math\n\nimport numpy as np\nimport torch\nimport torch.nn.functional as F\n\n"
        "from harness.api import EvictionMethod, Keep, LayerView\n\n\n")


def _f(body: str, attrs: str = "") -> set[str]:
    return set(computation(HEAD + "class M(EvictionMethod):\n    name = 'm'\n" + attrs + "\n" + body).features)


def _port(paper: str) -> set[str]:
    return set(computation(PORTS[f"{paper} (round 17)"]).features)


def test_draws_of_a_numpy_generator_are_random_and_an_even_spread_is_not() -> None:
    assert "random" in _port("BigBird")
    drawn = _f('''    def select(self, view: LayerView) -> Keep:
        out = []
        for h in range(view.n_kv_heads):
            rng = np.random.default_rng(view.layer * 31 + h)
            pick = rng.choice(view.n_tokens, size=view.budget, replace=False)
            out.append(torch.as_tensor(np.sort(pick)))
        return Keep(tuple(out))
''')
    assert "random" in drawn
    even = _f('''    def select(self, view: LayerView) -> Keep:
        pick = np.linspace(0, view.n_tokens - 1, view.budget).round().astype(np.int64)
        return Keep(tuple(torch.as_tensor(pick) for _ in range(view.n_kv_heads)))
''')
    assert "random" not in even


def test_keys_over_the_root_of_their_own_squared_sum_are_unit_keys() -> None:
    assert {"key_norm", "key_similarity"} <= _port("DART")
    cosine = _f('''    def select(self, view: LayerView) -> Keep:
        k = view.keys.float()
        size = torch.sqrt(torch.einsum("htd,htd->ht", k, k))
        unit = k / size.clamp_min(1e-6)[..., None]
        return Keep.from_topk(-(unit @ unit.mean(dim=1, keepdim=True).transpose(1, 2))[..., 0] * 0 - (
            unit[:, :, None, :] * unit[:, None, :, :]).sum(-1).amax(-1), view.budget, view.valid)
''')
    assert "key_similarity" in cosine
    loud = _f('''    def select(self, view: LayerView) -> Keep:
        k = view.keys.float()
        return Keep.from_topk(torch.sqrt(torch.einsum("htd,htd->ht", k, k)), view.budget, view.valid)
''')
    assert "key_norm" in loud and "key_similarity" not in loud


TILED = '''    def select(self, view: LayerView) -> Keep:
        out = []
        for h in range(view.n_kv_heads):
            unit = F.normalize(view.keys[h].float(), dim=-1)
            n = unit.shape[0]
            step = 64
            far = torch.empty(n)
            for lo in range(0, n, step):
                sim = unit[lo:lo + step] @ unit.T
                far[lo:lo + step] = REDUCE
            out.append(far)
        return Keep.from_topk(torch.stack(out), view.budget, view.valid)
'''


def test_a_matrix_computed_in_row_tiles_gives_each_token_its_own_value() -> None:
    assert "block_scores" not in _port("DivPrune") and "block_scores" not in _port("Token Pooling")
    rows = _f(TILED.replace("REDUCE", "sim.kthvalue(2, dim=1).values"))
    assert "block_scores" not in rows and "key_similarity" in rows
    # the tile's tokens reduced together (over the tile's own axis): one value for the block
    block = _f(TILED.replace("REDUCE", "sim.amax(dim=0).mean()"))
    assert "block_scores" in block


def test_a_product_summed_tile_by_tile_into_the_carried_vector_is_a_walk() -> None:
    assert "attention_propagation" in _port("G-Prune")
    body = '''    def select(self, view: LayerView) -> Keep:
        out = []
        for h in range(view.n_kv_heads):
            unit = F.normalize(view.keys[h].float(), dim=-1)
            n = unit.shape[0]
            tiles = [(lo, torch.softmax(unit[lo:lo + 32] @ unit.T / 0.1, dim=1)) for lo in range(0, n, 32)]
            x = torch.ones(n) / n
            for _ in range(4):
                y = torch.zeros(n)
                for lo, part in tiles:
                    y += TERM
                x = y
            out.append(x)
        return Keep.from_topk(torch.stack(out), view.budget, view.valid)
'''
    assert "attention_propagation" in _f(body.replace("TERM", "x[lo:lo + part.shape[0]] @ part"))
    # the tiles' column sums added up, the carried vector not in them: an in-degree, no walk
    assert "attention_propagation" not in _f(body.replace("TERM", "part.sum(dim=0)"))


def test_a_transform_along_one_heads_tokens_in_numpy_is_a_spectrum_and_along_its_channels_is_not() -> None:
    assert "token_spectrum" in _port("FlashCache")
    body = '''    def select(self, view: LayerView) -> Keep:
        keys = view.keys.float().cpu().numpy()
        out = []
        for h in range(view.n_kv_heads):
            spec = np.fft.rfft(keys[h], axis=AXIS)
            out.append(torch.from_numpy(np.abs(spec[1:]).sum(-1) if AXIS == 1 else np.abs(spec).sum(0)[:1].repeat(
                keys.shape[1])))
        return Keep.from_topk(torch.stack(out).float(), view.budget, view.valid)
'''
    assert "token_spectrum" in _f(body.replace("AXIS", "0"))
    assert "token_spectrum" not in _f(body.replace("AXIS", "1"))


def test_evenly_spaced_levels_shifted_by_the_curves_first_step_are_quantiles() -> None:
    assert "importance_sampling" in _port("ATS")
    body = '''    def select(self, view: LayerView) -> Keep:
        s = view.group(view.attention(reduce="sum"), "mean") * view.values.float().norm(dim=-1)
        out = []
        for h in range(view.n_kv_heads):
            curve = np.cumsum(s[h].double().numpy())
            curve = curve / curve[-1]
            start = curve[0]
            levels = LEVELS
            out.append(torch.as_tensor(np.unique(np.searchsorted(curve, levels))))
        return Keep(tuple(out))
'''
    assert "importance_sampling" in _f(body.replace("LEVELS", "start + (1 - start) * np.arange(view.budget) / view.budget"),
                                       "    query_window = 16\n")
    # one share of the mass located on the curve: how many tokens reach it, a coverage, no draws
    one = _f(body.replace("LEVELS", "np.array([0.9])"), "    query_window = 16\n")
    assert "importance_sampling" not in one and "attention_coverage" in one


def test_a_name_bound_in_both_arms_of_an_if_holds_what_either_bound() -> None:
    assert "entropy" in _port("MEDA")
    body = '''    def select(self, view: LayerView) -> Keep:
        if view.queries is not None:
            read = view.group(view.attention(reduce="mean"), "mean")
        else:
            read = view.positions.float()
            LEAVE
        p = read / read.sum(-1, keepdim=True)
        h = -(p * torch.log(p.clamp_min(1e-9))).sum(-1, keepdim=True)
        return Keep.from_topk(read * h, view.budget, view.valid)
'''
    assert "entropy" in _f(body.replace("LEAVE", "pass"), "    query_window = 8\n")
    # an arm that returns binds nothing past the if: only what the other arm bound reaches the entropy
    left = _f(body.replace("LEAVE", "return Keep.from_topk(read, view.budget, view.valid)"), "    query_window = 8\n")
    assert "entropy" in left


def test_indices_a_mask_gave_cast_to_long_are_no_quantiser() -> None:
    assert "quantised" not in _port("DART")
    body = '''    def select(self, view: LayerView) -> Keep:
        k = view.keys.float()
        out = []
        for h in range(view.n_kv_heads):
            CODE
        return Keep(tuple(out))
'''
    cast = _f(body.replace("CODE", "taken = k[h].norm(dim=-1) > k[h].norm(dim=-1).median()\n"
                                   "            out.append(taken.nonzero().flatten().long())"))
    assert "quantised" not in cast
    rounded = _f(body.replace("CODE", "q = (k[h] / 0.25).round().long()\n"
                                      "            out.append((q.float() - k[h]).norm(dim=-1).topk(view.budget).indices)"))
    assert "quantised" in rounded


def test_squared_norms_held_by_names_in_an_expanded_distance_are_no_key_norm() -> None:
    body = '''    def select(self, view: LayerView) -> Keep:
        k = view.keys[0].float().numpy()
        c = k[:: max(1, k.shape[0] // 8)]
        kk = np.einsum("nd,nd->n", k, k)[:, None]
        cc = np.einsum("md,md->m", c, c)[None, :]
        d = np.maximum(kk - 2.0 * (k @ c.T) + cc, 0.0)
        s = torch.from_numpy(SCORE).float()
        return Keep.from_topk(s[None].expand(view.n_kv_heads, -1), view.budget, view.valid)
'''
    assert "key_norm" not in _f(body.replace("SCORE", "d.min(axis=1)"))
    assert "key_norm" in _f(body.replace("SCORE", "kk[:, 0]"))  # the squared norms bound the same way, as the score


def test_a_coverage_cut_head_by_head_is_the_coverage_rule() -> None:
    c = computation(PORTS["ZipVL (round 17)"])
    ms = {m.short_name: m for m in computation_matches(c.features, "", c.paths, BOARDS["ZipVL (round 17)"])}
    assert "head_budget" in c.features and ms["ZipVL"].level == "same"


FOLD = '''    def select(self, view: LayerView) -> Keep:
        out = []
        for h in range(view.n_kv_heads):
            k = view.keys[h].float()
            unit = F.normalize(k, dim=-1)
            linked = (unit @ unit.T) > 0.9
            linked.fill_diagonal_(False)
            alive = torch.ones(k.shape[0], dtype=torch.bool)
            score = k.norm(dim=-1)
            left = k.shape[0]
            while left > view.budget:
                hub = int(torch.argmax(linked.sum(1).masked_fill(~alive, -1)))
                mates = torch.nonzero(linked[hub] & alive).flatten()
                if mates.numel() == 0:
                    break
                MERGE
                alive[mates] = False
                left -= int(mates.numel())
            out.append(torch.nonzero(alive).flatten())
        return Keep(tuple(out))
'''


def test_keys_linked_above_a_bar_and_averaged_into_their_hub_are_a_clustering() -> None:
    assert "key_clustering" in _port("SpindleKV")
    folded = _f(FOLD.replace("MERGE", "members = torch.cat([mates, mates.new_tensor([hub])])\n"
                                      "                k[hub] = k[members].mean(0)"))
    assert "key_clustering" in folded and "chunked_refill" not in folded
    dropped = _f(FOLD.replace("MERGE", "pass"))  # the linked keys only dropped: a redundancy, no clustering
    assert "key_clustering" not in dropped and "key_similarity" in dropped


def test_a_log_sum_exp_bound_to_a_name_makes_a_softmax_and_an_index_is_no_carried_vector() -> None:
    f = _port("SpindleKV")
    assert "attention" in f and "exp_logit" not in f and "attention_propagation" not in f
    by_name = _f('''    def select(self, view: LayerView) -> Keep:
        k = view.keys.float().repeat_interleave(view.model.group_size, 0)
        z = torch.einsum("hnd,htd->hnt", view.queries.float(), k) * view.model.scale
        lse = torch.logsumexp(z, dim=-1, keepdim=True)
        p = torch.exp(z - lse)
        return Keep.from_topk(view.group(p.sum(1), "mean"), view.budget, view.valid)
''', "    query_window = 8\n")
    assert "attention" in by_name and "exp_logit" not in by_name
    raw = _f('''    def select(self, view: LayerView) -> Keep:
        k = view.keys.float().repeat_interleave(view.model.group_size, 0)
        z = torch.einsum("hnd,htd->hnt", view.queries.float(), k) * view.model.scale
        shift = z.amax(dim=(1, 2), keepdim=True)
        return Keep.from_topk(view.group(torch.exp(z - shift).sum(1), "mean"), view.budget, view.valid)
''', "    query_window = 8\n")
    assert "exp_logit" in raw  # shifted by one number, never normalised: an exponential logit


def test_a_while_loop_that_reads_chunks_refills_a_pot() -> None:
    streamed = _f('''    def select(self, view: LayerView) -> Keep:
        s = view.group(view.attention(reduce="sum"), "mean")
        out = []
        for h in range(view.n_kv_heads):
            pot = torch.arange(0)
            pos = 0
            while pos < view.n_tokens:
                pot = torch.cat([pot, torch.arange(pos, min(view.n_tokens, pos + 64))])
                pot = pot[s[h, pot].argsort(descending=True)[: view.budget]]
                pos += 64
            out.append(pot.sort().values)
        return Keep(tuple(out))
''', "    query_window = 8\n")
    assert "chunked_refill" in streamed
