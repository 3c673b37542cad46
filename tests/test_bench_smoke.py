"""Every script under bench/ runs at a tiny size (issue 26: two of them had crashed unnoticed at HEAD).

The scripts are run by hand for the README's figures; here each runs end to end as a subprocess on the embedded
model with tiny arguments, so an API change in the harness breaks a test, not a maintainer's evening. kvpress
needs its own venv (``bench/_kvpress.py``); without it the scripts run their own side (``--ours-only``) and the
kvpress side's tests skip, saying why.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
sys.path.insert(0, str(BENCH))

from _kvpress import kvpress_python  # noqa: E402

NO_KVPRESS = ("kvpress side skipped: bench/.venv-kvpress has no kvpress 0.5.5 (it needs transformers < 5.3, so it "
              "cannot live in .venv; `python bench/harness_overhead.py` builds it once); the harness's side of the "
              "same script ran in the --ours-only smoke test")

# script -> tiny arguments ({tmp} is a fresh folder)
SMOKE: dict[str, list[str]] = {
    "audit_throughput.py": ["--gb", "0.002", "--tool-gb", "0.001", "--repeat", "1"],
    "benchmark_stage.py": ["--items", "1", "--length", "256"],
    "boundary_overhead.py": ["--smoke"],
    "contention.py": ["--tokens", "3", "--context", "32", "--rounds", "1", "--threads", "1"],
    "context_sweep.py": ["--lengths", "160", "--threads", "1", "--json", "{tmp}/sweep.json"],
    "gpu_check.py": ["--device", "cpu", "--size", "tiny", "--context", "128", "--families", "llama", "--model",
                     "embedded", "--model-context", "96", "--pairs", "1", "--no-kvpress", "--out", "{tmp}"],
    "harness_overhead.py": ["--smoke", "--ours-only"],
    "kvpress_parity.py": ["--smoke", "--ours-only"],
}
SLOW = {"benchmark_stage.py": "five full `review` runs of the benchmark stage, minutes even at one item",
        # ~30 s even at its tiniest (it starts busy workers on purpose); the decode-cap tests cover board C's loop
        "contention.py": "board C's decode loop beside deliberately busy cores: half a minute at its tiniest"}


def run(script: str, args: list[str], tmp: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, str(BENCH / script), *[a.format(tmp=tmp) for a in args]], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout, env=env)


def test_every_bench_script_has_a_smoke_run():
    scripts = {p.name for p in BENCH.glob("*.py") if not p.name.startswith("_")}
    assert scripts == set(SMOKE), f"bench scripts without a smoke entry: {sorted(scripts - set(SMOKE))}"


@pytest.mark.parametrize("script", [pytest.param(s, marks=pytest.mark.heavy) if s in SLOW else s for s in SMOKE])
def test_bench_script_runs_at_a_tiny_size(script, tmp_path):
    r = run(script, SMOKE[script], tmp_path)
    assert r.returncode == 0, f"{script} failed:\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    assert "Traceback" not in r.stderr
    out = r.stdout
    if script in ("harness_overhead.py", "kvpress_parity.py"):
        assert "kvpress side skipped (--ours-only)" in out
    if script == "harness_overhead.py":
        assert "SnapKV compression: ours" in out and "Ada-KV compression: ours" in out
    if script == "kvpress_parity.py":
        assert "adakv" in out and "snapkv" in out
    if script == "boundary_overhead.py":
        assert "sandboxed CPU from" in out and "/proc" not in out.split("sandboxed CPU from")[1].splitlines()[0]
        assert out.count("| ") >= 3
    if script == "context_sweep.py":
        assert "peak / (model + KV)" in out
    if script == "gpu_check.py":
        assert "Trained checkpoint" in out and "kvpress side skipped" in out
        assert (tmp_path / "gpu_check.md").is_file()


def test_gpu_check_fails_loudly_without_cuda(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("CUDA is available here: the check would run")
    r = run("gpu_check.py", ["--out", str(tmp_path)], tmp_path, timeout=600)
    assert r.returncode == 1
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: gpu_check needs a CUDA build of torch"), r.stderr
    assert "skipped" not in r.stdout and not list(tmp_path.iterdir())


def test_a_missing_kvpress_fails_loudly(tmp_path):
    r = run("harness_overhead.py", ["--smoke", "--kvpress-python", str(tmp_path / "python")], tmp_path, timeout=600)
    assert r.returncode == 1
    lines = [ln for ln in r.stderr.splitlines() if ln.strip() and not ln.startswith("Loading")]
    assert lines and lines[-1].startswith("error:") and "kvpress does not import" in lines[-1], r.stderr


@pytest.mark.parametrize("script, expect", [("harness_overhead.py", "ours / kvpress"), ("kvpress_parity.py", "Jaccard")])
def test_kvpress_side_at_a_tiny_size(script, expect, tmp_path):
    if kvpress_python() is None:
        pytest.skip(NO_KVPRESS)
    r = run(script, ["--smoke"], tmp_path, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    assert expect in r.stdout
