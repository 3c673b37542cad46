"""Thread settings of the processes the harness starts: OpenMP threads sleep at barriers (a review beside a busy
neighbour must not spin away its share of the cores; harness.sandbox.thread_env has the measurements)."""

import subprocess
import sys

from harness.sandbox import run_worker, thread_env


def test_thread_env_defaults_to_passive_waits(monkeypatch):
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    assert thread_env(2) == {"OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2", "OMP_WAIT_POLICY": "PASSIVE"}
    assert thread_env(0)["OMP_NUM_THREADS"] == "1"


def test_a_policy_the_user_set_wins(monkeypatch):
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    assert thread_env(1)["OMP_WAIT_POLICY"] == "ACTIVE"


def test_importing_reviewbench_sets_passive_before_torch_loads():
    code = ("import os; os.environ.pop('OMP_WAIT_POLICY', None); import reviewbench, sys; "
            "assert 'torch' not in sys.modules; print(os.environ['OMP_WAIT_POLICY'])")
    env = {"PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "PASSIVE"


def test_a_worker_process_gets_the_setting(tmp_path, monkeypatch):
    """The trusted worker's environment is built from scratch: the policy must be in it."""
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    mod = tmp_path / "envdump.py"
    mod.write_text("import json, os, sys\n"
                   "json.dump({'policy': os.environ.get('OMP_WAIT_POLICY')}, open(sys.argv[2], 'w'))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import harness.sandbox as sb

    monkeypatch.setattr(sb, "HARNESS_DIR", tmp_path / "harness")  # PYTHONPATH = tmp_path: envdump importable
    assert run_worker({}, module="envdump", wall_s=60)["policy"] == "PASSIVE"
