"""After held-out set 24 was measured and its key read (issue 23): the changes its misses and false flag showed, each
general, each with a neighbour written here (none of the set's bundles is used). Set 24 does not measure them."""

from __future__ import annotations

from reviewbench.evidence.computation import computation
from reviewbench.evidence.priorart_evidence import computation_matches
from tests.selfplay_ports import HEAD


def _f(body: str, attrs: str = "    query_window = 16\n") -> set[str]:
    return set(computation(HEAD + "class M(EvictionMethod):\n    name = 'm'\n" + attrs + "\n" + body).features)


def _level(features: set[str], paper: str, board: str | None = None) -> str | None:
    ms = computation_matches({f: 1 for f in features}, "", board=board)
    return next((m.level for m in ms if m.short_name == paper), None)


def test_the_queries_repeated_along_their_rows_are_copies_not_blocks() -> None:
    probes = _f('''    def select(self, view: LayerView) -> Keep:
        rows = view.queries.repeat_interleave(4, dim=1)
        a = view.group(view.attention(rows).sum(1), "mean")
        return Keep.from_topk(a, view.budget, view.valid)
''')
    assert "block_scores" not in probes
    blocks = _f('''    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention().sum(1), "mean")
        T = a.shape[-1] // 8 * 8
        b = a[:, :T].reshape(a.shape[0], -1, 8).sum(-1).repeat_interleave(8, dim=1)
        return Keep.from_topk(b, view.budget, view.valid)
''')
    assert "block_scores" in blocks  # one sum per block of tokens spread back over them


def test_a_merge_rule_s_raters_may_be_pooled_a_scoring_rule_s_attention_may_not() -> None:
    assert _level({"attention", "window_queries", "pooling", "key_similarity", "merge"}, "KVMerger") == "same"
    assert _level({"attention", "last_query", "head_average", "pooling"}, "TOVA") != "same"


def test_a_bar_on_the_sinks_and_window_s_attention_gates_and_the_rest_is_filler() -> None:
    gated = {"attention", "attention_threshold", "head_average", "sinks", "recent", "window_queries", "pooling"}
    assert _level(gated, "SimLayerKV") == "same"
    no_bar = gated - {"attention_threshold"}
    assert _level(no_bar, "SimLayerKV") is None  # no gate: a window's pooled attention beside sinks is SnapKV's


def _misstated(summary: str, body: str) -> list[str]:
    from reviewbench.flags.misstated import misstated_flags
    src = HEAD + "import numpy as np\n\n\nclass M(EvictionMethod):\n    name = 'm'\n\n" + body
    desc = f"# M\n\n## Idea\nSee below.\n\n## Method summary\n- {summary}\n\n## Limitations\nOne model.\n"
    return [f.strength for f in misstated_flags(desc, src) if f.flag == "MISSTATED_METHOD"]


def test_numpy_generator_draws_are_random_draws() -> None:
    body = '''    def select(self, view: LayerView) -> Keep:
        rng = np.random.default_rng(7 + view.layer)
        k = view.keys.float().numpy()
        proj = k @ rng.standard_normal((k.shape[-1], 16))
        return Keep.from_topk(torch.from_numpy((proj ** 2).sum(-1)), view.budget, view.valid)
'''
    assert "proof" not in _misstated("Keys are compressed by a random sketch before scoring.", body)
    assert "random" in _f(body)


def test_a_matrix_against_its_own_transpose_is_a_covariance() -> None:
    body = '''    def select(self, view: LayerView) -> Keep:
        k = view.keys[0].float()
        cov = k.T @ k / k.shape[0]
        w = torch.linalg.eigh(cov).eigenvectors[:, -8:]
        s = ((view.keys.float() @ w) ** 2).sum(-1)
        return Keep.from_topk(s, view.budget, view.valid)
'''
    assert _misstated("The key covariance's leading axes score each token.", body) == []
    plain = '''    def select(self, view: LayerView) -> Keep:
        return Keep.from_topk(view.keys.float().norm(dim=-1), view.budget, view.valid)
'''
    assert "proof" in _misstated("The key covariance's leading axes score each token.", plain)
