"""Memory near the KV cache (issue 26): the full cache's answer and its teacher-forced pass append into the
prompt's spare rows and give them back, so no second copy of the prompt's cache is ever made (before, each
reference pass held the prompt's cache twice: peak 146 KiB per context token against 45 KiB of KV)."""

import pytest
import torch

import harness.kv as kv
from harness.boundary import InProcessMethod
from harness.kv import PREFILL_SPARE, KVRuntime, compact_head
from harness.methods import SnapKV
from harness.model import load_model
from harness.runner import Engine, MethodRun, run_prefill_item
from harness.tasks import generate


def runtime(n=16, spare=8, d=4):
    rt = KVRuntime(1, 1)
    rt.layers[0].heads = [compact_head(torch.randn(n, d), torch.randn(n, d), torch.arange(n), spare)]
    return rt


def row(d=4, p=0):
    return torch.randn(1, d), torch.randn(1, d), torch.tensor([p])


def test_a_released_copy_gives_its_rows_back_to_the_next_copy():
    rt = runtime()
    base = rt.layers[0].heads[0]
    a = rt.copy()
    a.layers[0].heads[0].append(*row(p=16))
    assert a.layers[0].heads[0].k.data_ptr() == base.k.data_ptr()  # in place, at the frontier
    a.release()
    b = rt.copy()
    k, v, p = row(p=16)
    b.layers[0].heads[0].append(k, v, p)
    hb = b.layers[0].heads[0]
    assert hb.k.data_ptr() == base.k.data_ptr() and torch.equal(hb.keys()[-1], k[0])  # no copy of the head
    assert base.length == 16 and torch.equal(rt.layers[0].heads[0].keys(), base.k[:16])


def test_without_release_the_next_copy_copies_the_head():
    rt = runtime()
    a = rt.copy()
    a.layers[0].heads[0].append(*row(p=16))
    b = rt.copy()
    b.layers[0].heads[0].append(*row(p=16))
    assert b.layers[0].heads[0].k.data_ptr() != rt.layers[0].heads[0].k.data_ptr()
    assert torch.equal(a.layers[0].heads[0].keys()[:16], rt.layers[0].heads[0].keys())


def test_release_never_takes_rows_that_a_later_copy_still_reads():
    rt = runtime()
    a = rt.copy()
    a.layers[0].heads[0].append(*row(p=16))
    b = a.copy()
    kb, vb, pb = row(p=17)
    b.layers[0].heads[0].append(kb, vb, pb)  # b wrote past a: a's rows are b's too
    a.release()
    c = rt.copy()
    c.layers[0].heads[0].append(*row(p=16))
    assert c.layers[0].heads[0].k.data_ptr() != rt.layers[0].heads[0].k.data_ptr()  # c had to copy
    assert torch.equal(b.layers[0].heads[0].keys()[-1], kb[0])


@pytest.fixture(scope="module")
def eng():
    return Engine(load_model())


def test_the_full_cache_reference_never_copies_the_prompts_cache(eng, monkeypatch):
    """A board-A item with SnapKV: every copy of the prompt's cache that decodes (the full cache's answer, its
    teacher-forced pass, each method's) appends in place; no head is ever re-allocated at the prompt's size."""
    item = generate("niah_single", "dev", 1, eng.n_tokens, 300, offset=0)[0]
    n = sum(len(x) for x in eng.segments(item, item.questions[0]))
    big: list[int] = []
    real = kv.compact_head

    def counting(k, v, pos, spare=kv.SPARE):
        if k.shape[0] >= n:
            big.append(int(k.shape[0]))
        return real(k, v, pos, spare)

    monkeypatch.setattr(kv, "compact_head", counting)
    rows, ref = run_prefill_item(eng, item, [MethodRun("snapkv", InProcessMethod(SnapKV(), "snapkv"))], "A",
                                 "fraction", [0.5])
    heads = len(eng.info.attention_layers) * eng.info.n_kv_heads
    assert len(big) == heads  # the prefill's own buffers, once per head, and nothing else at that size
    assert ref.questions[0].gen and all(r.error is None for r in rows)
    assert len(ref.questions[0].gen) + 1 < PREFILL_SPARE  # the answer fitted in the spare rows
