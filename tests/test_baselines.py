"""Each baseline's defining behaviour on small synthetic tensors."""

import torch

from harness.api import LayerView, ModelInfo
from harness.kv import HeadKV, KVRuntime
from harness.methods import H2O, TOVA, AdaKV, KNorm, PyramidKV
from harness.runner import apply_result

INFO = ModelInfo(name="t", n_layers=10, n_heads=6, n_kv_heads=2, head_dim=8)


def make_view(keys, budget, queries=None, qpos=None, state=None, phase="prefill"):
    h, t, _ = keys.shape
    return LayerView(layer=0, keys=keys, values=torch.randn_like(keys), positions=torch.arange(t).expand(h, t),
                     queries=queries, budget=budget, board="A", phase=phase, model=INFO,
                     query_positions=qpos, state=state if state is not None else {})


def test_knorm_keeps_the_lowest_norm_keys():
    keys = torch.randn(2, 20, 8)
    norms = keys.norm(dim=-1)
    keep = KNorm().select(make_view(keys, 5))
    for h in range(2):
        assert set(keep.indices[h].tolist()) == set(norms[h].argsort()[:5].tolist())


def test_tova_keeps_one_set_for_all_heads_by_the_last_query():
    keys = torch.randn(2, 16, 8)
    q = torch.randn(6, 3, 8)
    keep = TOVA().select(make_view(keys, 4, q, torch.arange(13, 16)))
    assert torch.equal(keep.indices[0], keep.indices[1])
    attn = torch.softmax(torch.einsum("hd,htd->ht", q[:, -1], keys.repeat_interleave(3, 0)) / 8**0.5, -1).mean(0)
    assert set(keep.indices[0].tolist()) == set(attn.topk(4).indices.tolist())


def test_h2o_scores_accumulate_over_decode_steps_and_keep_the_recent_half():
    keys = torch.randn(2, 30, 8)
    state: dict = {}
    m = H2O()
    q1, q2 = torch.randn(6, 1, 8), torch.randn(6, 1, 8)
    m.select(make_view(keys, 10, q1, torch.tensor([30]), state, "decode"))
    first = state["h2o"][1].clone()
    keep = m.select(make_view(keys, 10, torch.cat([q1, q2], 1), torch.tensor([30, 31]), state, "decode"))
    second = state["h2o"][1]
    a2 = torch.softmax(torch.einsum("hd,htd->ht", q2[:, 0], keys.repeat_interleave(3, 0)) / 8**0.5, -1)
    added = a2.reshape(2, 3, 30).sum(1)
    assert torch.allclose(second, first + added, atol=1e-5)  # only the new query was added, once
    for h in range(2):
        assert set(range(25, 30)) <= set(keep.indices[h].tolist()) and len(keep.indices[h]) == 10


def test_pyramidkv_budgets_fall_with_depth_and_keep_the_mean():
    b = PyramidKV().layer_budgets(200, 2000, INFO)
    assert b[0] > b[-1] and all(x >= y for x, y in zip(b, b[1:]))
    assert 200 * 10 - 10 <= sum(b) <= 200 * 10


def test_adakv_per_head_budgets_differ_sum_to_the_layer_and_respect_the_safeguard():
    torch.manual_seed(0)
    keys = torch.randn(2, 200, 8)
    keys[0, 50] *= 30  # head 0 concentrates on one token, head 1 stays diffuse
    q = keys[0, 50].expand(6, 8, 8).clone() * 0.2
    q[3:] = torch.randn(3, 8, 8) * 0.01
    method = AdaKV()
    method.query_window = 8
    view = make_view(keys, 40, q, torch.arange(192, 200))
    keep = method.select(view)
    sizes = [len(i) for i in keep.indices]
    assert sum(sizes) == 80 and sizes[0] != sizes[1]
    assert min(sizes) >= 8 + int(0.2 * 40)  # window + alpha x budget
    rt = KVRuntime(1, 3)
    rt.layers[0].heads = [HeadKV(keys[h], torch.randn(200, 8), torch.arange(200), 200) for h in range(2)]
    apply_result(rt, 0, keep, 40)  # accepted by the harness, stored ragged
    assert rt.layers[0].lengths() == sizes


def test_rkv_evicts_the_older_of_two_duplicate_keys():
    from harness.methods import RKV

    torch.manual_seed(1)
    keys = torch.randn(2, 24, 64)  # the model's head size: unrelated keys are rarely similar
    keys[:, 5] = keys[:, 6] = keys[:, 7] = torch.randn(2, 64) * 3  # three copies of one key
    q = torch.randn(6, 8, 64) * 0.01  # flat attention: redundancy decides
    keep = RKV().select(make_view(keys, 18, q, torch.arange(16, 24)))
    for h in range(2):
        kept = set(keep.indices[h].tolist())
        assert set(range(16, 24)) <= kept  # the last 8 tokens
        assert 7 in kept and not {5, 6} <= kept  # the newest copy survives, an older one goes


def test_kvzip_scores_the_max_over_queries_and_group_and_keeps_sinks():
    from harness.methods import KVzip

    keys = torch.randn(2, 30, 8)
    q = torch.zeros(6, 2, 8)
    q[4, 1] = keys[1, 20] * 10  # one query of one head of KV head 1 looks hard at token 20
    keep = KVzip().select(make_view(keys, 6, q, torch.tensor([40, 41])))
    assert 20 in keep.indices[1].tolist()
    for h in range(2):
        assert {0, 1, 2, 3} <= set(keep.indices[h].tolist())


def _rope_matrix(p: int, d: int, theta: float) -> torch.Tensor:
    """RoPE at position p as an explicit (D, D) rotation (pairs i and i + D/2), built independently."""
    r = torch.zeros(d, d, dtype=torch.float64)
    for i in range(d // 2):
        a = p * theta ** (-2 * i / d)
        c, s = torch.cos(torch.tensor(a, dtype=torch.float64)), torch.sin(torch.tensor(a, dtype=torch.float64))
        r[i, i], r[i, i + d // 2], r[i + d // 2, i], r[i + d // 2, i + d // 2] = c, -s, s, c
    return r


def test_rotate_undoes_rope_and_matches_the_rotation_matrix():
    from harness.api import apply_rope

    x = torch.randn(3, 5, 8)
    pos = torch.tensor([0, 3, 7, 100, 2047])
    y = apply_rope(x, pos, 10000.0)
    assert torch.allclose(apply_rope(y, -pos, 10000.0), x, atol=1e-5)
    for j, p in enumerate(pos.tolist()):
        assert torch.allclose(y[:, j].double(), x[:, j].double() @ _rope_matrix(p, 8, 10000.0).T, atol=1e-4)


def test_expected_attention_scores_the_gaussian_future_query_times_value_norm():
    from harness.api import apply_rope
    from harness.methods import ExpectedAttention

    torch.manual_seed(2)
    info = ModelInfo(name="t", n_layers=1, n_heads=6, n_kv_heads=2, head_dim=8, rope_theta=10000.0)
    t, d = 40, 8
    keys, values = torch.randn(2, t, d), torch.randn(2, t, d)
    pre = torch.randn(6, t, d) + torch.tensor([2.0, 0, 0, 0, -1, 0, 0, 0])  # pre-RoPE context queries
    qpos = torch.arange(t)
    post = apply_rope(pre, qpos, 10000.0)
    m = ExpectedAttention()
    m.n_future = 16
    view = LayerView(layer=0, keys=keys, values=values, positions=qpos.expand(2, t), queries=post, budget=10,
                     board="B_online", phase="prefill", model=info, query_positions=qpos)
    got = m.scores(view)
    # independent computation with explicit rotation matrices
    q = pre[:, 4:].double()
    mu, cov = q.mean(1), torch.stack([torch.cov(q[h].T, correction=0) for h in range(6)])
    rbar = torch.stack([_rope_matrix(p, d, 10000.0) for p in range(t, t + 16)]).mean(0)
    k = keys.double().repeat_interleave(3, 0)
    logit = torch.einsum("hd,htd->ht", mu @ rbar.T, k) / d**0.5 + \
        torch.einsum("hti,hij,htj->ht", k, rbar @ cov @ rbar.T, k) / (2 * d)
    logit[:, :4] = float("-inf")  # sinks: out of the softmax
    want = logit.softmax(-1).reshape(2, 3, t).mean(1) * values.double().norm(dim=-1)
    assert torch.allclose(got[:, 4:].double(), want[:, 4:], rtol=1e-3)
    assert torch.isinf(got[:, :4]).all()  # sinks always kept
    keep = m.select(view)
    for h in range(2):
        assert set(keep.indices[h].tolist()) == set(want[h].masked_fill(torch.arange(t) < 4, 1e9).topk(10).indices.tolist())
    values[1, 30] *= 1e4  # a huge value vector makes its token worth keeping
    assert 30 in m.select(view).indices[1].tolist()
