"""Shared memory between the trusted side and a method: a method that shrinks, grows or rewrites every descriptor
it holds (reopened read-write where it can) must end, at worst, as its own one-line error; the trusted process
survives, and a method beside it in the same run keeps its results (the run worker, which the benchmark and the
ledger also use; the check worker; the fingerprint worker)."""

import fcntl
import mmap
import os
import subprocess
import sys
import textwrap
from dataclasses import asdict

import pytest

from harness.results import MethodLimits, Result, RunConfig
from harness.sandbox import run_worker, sandbox_kind
from harness.wire import SealedRegion

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(sandbox_kind() != "bubblewrap", reason="bubblewrap not installed (make installs it)")]

# written for these tests: every descriptor, every way (a reopen through /proc gets a read-write one on a memfd)
SHRINKER = """
import mmap, os, torch
from harness import EvictionMethod, Keep

def _wreck():
    done = []
    for fd in range(3, 256):
        cands = [fd]
        try:
            cands.append(os.open(f"/proc/self/fd/{fd}", os.O_RDWR))
        except OSError:
            pass
        for c in cands:
            for how in (lambda: os.ftruncate(c, 0), lambda: os.ftruncate(c, 1 << 20),
                        lambda: os.pwrite(c, b"\\xff" * 4096, 0),
                        lambda: mmap.mmap(c, 4096, mmap.MAP_SHARED, mmap.PROT_WRITE).write(b"\\xff" * 4096)):
                try:
                    how()
                    done.append(fd)
                except (OSError, ValueError):
                    pass
    return done

class Shrinker(EvictionMethod):
    name = "shrinker"
    def select(self, view):
        _wreck()
        keep = Keep(tuple(torch.arange(view.budget) for _ in range(view.n_kv_heads)))
        return keep
    def on_decode(self, view):
        return self.select(view)
"""
HONEST = """
import torch
from harness import EvictionMethod, Keep
class Plain(EvictionMethod):
    name = "plain"
    def select(self, view):
        return Keep(tuple(torch.arange(view.budget) for _ in range(view.n_kv_heads)))
"""
LIMITS = MethodLimits(call_timeout_s=30, start_timeout_s=120)


@pytest.fixture
def methods(tmp_path):
    out = {}
    for name, body in (("shrinker", SHRINKER), ("plain", HONEST)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "method.py").write_text(textwrap.dedent(body))
        out[name] = str(tmp_path / name)
    return out


def test_the_request_region_is_sealed_against_every_writer_but_its_own_mapping():
    r = SealedRegion(1 << 16)
    try:
        want = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL | 0x10  # 0x10: F_SEAL_FUTURE_WRITE
        assert r.seals() & want == want
        r.map[:4] = b"abcd"  # the trusted side's own mapping still writes
        rw = os.open(f"/proc/self/fd/{r.fd}", os.O_RDWR)  # what a method could do with its descriptor
        try:
            for attack in (lambda: os.ftruncate(rw, 0), lambda: os.ftruncate(rw, 1 << 20),
                           lambda: os.pwrite(rw, b"x", 0), lambda: mmap.mmap(rw, 4096)):
                with pytest.raises(PermissionError):
                    attack()
            assert os.pread(rw, 4, 0) == b"abcd"
            mmap.mmap(rw, 4096, access=mmap.ACCESS_COPY)  # copy-on-write, as the method's process maps it
        finally:
            os.close(rw)
    finally:
        r.close()


SCRIPT = """
import sys, torch
from harness.api import LayerView, ModelInfo
from harness.boundary import MethodError, SandboxedMethod
from harness.results import MethodLimits
info = ModelInfo(name="t", n_layers=2, n_heads=6, n_kv_heads=2, head_dim=8)
lim = MethodLimits(call_timeout_s=30, start_timeout_s=120)
handles = [SandboxedMethod(p, lim) for p in sys.argv[1:]]
for n in (64, 64, 700, 3000, 64):  # the region is replaced twice on the way
    for h in handles:
        view = LayerView(layer=0, keys=torch.randn(2, n, 8), values=torch.randn(2, n, 8),
                         positions=torch.arange(n).expand(2, n).contiguous(), queries=None, budget=8, board="C",
                         phase="prefill", model=info)
        try:
            got = h.call_layers("select", [view, view])
            print(h.name, n, "ok", [i.tolist()[:3] for i in got[1].indices])
        except MethodError as e:
            print(h.name, n, "error", str(e).replace(chr(10), " "))
for h in handles:
    h.close()
print("trusted side alive")
"""


def test_a_shrinking_method_cannot_crash_the_trusted_side_beside_an_honest_one(methods):
    r = subprocess.run([sys.executable, "-c", SCRIPT, methods["shrinker"], methods["plain"]], capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
    lines = r.stdout.splitlines()
    assert lines[-1] == "trusted side alive"
    plain = [ln for ln in lines if ln.startswith("plain ")]
    assert len(plain) == 5 and all(" ok [[0, 1, 2], [0, 1, 2]]" in ln for ln in plain), plain
    for ln in (ln for ln in lines if ln.startswith("shrinker ")):  # its own answers: right, or its own error
        assert " ok [[0, 1, 2], [0, 1, 2]]" in ln or " error " in ln, ln


@pytest.mark.parametrize("board", [pytest.param("A", marks=pytest.mark.heavy), "C"])
def test_run_worker_keeps_the_honest_methods_results(methods, board):
    """The worker of `harness run`, and the executor entry the benchmark and the ledger stages run it through
    (board C: batched round trips before every decoded token; board A, heavy: one compression per budget)."""
    from reviewbench.executor import run_harness  # what the benchmark and the ledger stages call

    cfg = RunConfig(board=board, methods=[methods["shrinker"], methods["plain"]], items=1, length=200,
                    tasks=["niah_single"], budgets=[0.5], limits=LIMITS, threads=2)
    res = run_harness(cfg, 600) if board == "C" else Result.from_json(run_worker(asdict(cfg), wall_s=600, threads=2))
    rows = [r for r in res.rows if r.method == "plain"]
    assert rows and all(r.error is None for r in rows), (board, rows)
    assert "plain" not in res.method_errors


def test_check_worker_survives(methods):
    for spec in (methods["shrinker"], methods["plain"]):
        out = run_worker({"method": spec, "limits": asdict(LIMITS)}, module="harness.check", wall_s=300)
        assert out["checks"], out
        assert all(c["ok"] or "shorter than it declared" in c.get("error", "") for c in out["checks"]), out


def test_fingerprint_worker_keeps_the_baselines_kept_sets(methods):
    from harness.fingerprint import build_bank

    bank = build_bank()
    alone = run_worker({"methods": ["snapkv", methods["plain"]], "bank": str(bank), "budgets": [0.1]},
                       module="harness.fingerprint")
    mixed = run_worker({"methods": [methods["shrinker"], "snapkv", methods["plain"]], "bank": str(bank),
                        "budgets": [0.1]}, module="harness.fingerprint")
    assert mixed["kept"]["snapkv"] == alone["kept"]["snapkv"]
    assert mixed["kept"][methods["plain"]] == alone["kept"][methods["plain"]]
