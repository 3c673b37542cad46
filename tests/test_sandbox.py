"""Hostile methods against the trust boundary. Each attack runs as a real submission in the real sandbox, next to
an honest twin that keeps exactly the same tokens: every attack must end as an error (or change nothing), and
the twin's numbers must be the same as in a run where no attacker was present."""

import json
import textwrap
import time
from dataclasses import asdict

import pytest

from harness.results import RunConfig
from harness.sandbox import SandboxError, run_worker, sandbox_kind
from tests.conftest import run_review
from tests.sandbox_attacks import ATTACKS, FIRST, HEADER, load

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(sandbox_kind() != "bubblewrap", reason="bubblewrap not installed (make installs it)")]

@pytest.fixture(scope="module")
def attacked(_background):
    """Written by ``tests.sandbox_attacks`` in the background since the session started (``tests/conftest.py``)."""
    return load(_background.wait("attacks"))


def _errors(result):
    return {k.split("/")[-1]: v for k, v in result.method_errors.items()}


@pytest.mark.parametrize("method, expected", [
    ("net", "net=blocked"),
    ("read_split", "test_split=denied"),
    ("read_model", "model=denied"),
    ("env", "key=None home=/tmp"),
    ("spin", "did not answer select within 4 s"),
    ("sleep", "did not answer select within 4 s"),
    ("no_alarm", "did not answer select within 4 s"),
    ("malformed", "for each of 3 KV heads"),
    ("nan_rewrite", "must be finite"),
    ("regenerate", "regenerate=refused"),
])
def test_attacks_end_as_errors(attacked, method, expected):
    hostile = attacked[0]
    assert expected in _errors(hostile)[method]


def test_fork_bomb_hits_the_process_limit(attacked):
    err = _errors(attacked[0])["forks"]
    assert err.startswith("RuntimeError: forks=") and int(err.split("=")[1].split()[0]) < 64


def test_memory_and_file_size_limits_hold(attacked):
    errors = _errors(attacked[0])
    assert "alloc" in errors["oom"].lower() or "memory" in errors["oom"].lower()
    assert "wrote 1 GiB" not in errors["big_file"] and ("File too large" in errors["big_file"]
                                                        or "No space" in errors["big_file"])


def test_hangs_end_within_their_limit(attacked):
    # 3 hanging methods at 4 s each, 16 methods started; far below the run's 900 s watchdog
    assert attacked[2] < 300


def test_unloadable_method_is_reported_and_the_rest_still_runs(attacked):
    hostile = attacked[0]
    assert "SyntaxError" in _errors(hostile)["broken"]
    assert hostile.environment.sandbox == "bubblewrap"


def test_tampering_changes_no_score(attacked):
    """The tamperer patched every scoring function it could import and keeps the honest twin's tokens: its
    numbers equal the twin's, and the twin's equal a run without any attacker."""
    hostile, clean = attacked[0], attacked[1]
    assert "tamper" not in hostile.method_errors

    def metrics(result, method):
        rows = [r for r in result.rows if r.method == method]
        assert rows, method
        return [(r.score, r.kl, r.top1, r.eviction_cost, r.kv_bytes) for r in rows]

    assert metrics(hostile, "tamper") == metrics(hostile, "honest") == metrics(clean, "honest")
    assert metrics(hostile, "honest")[0][0] < 1.0 or metrics(hostile, "honest")[0][1] > 0  # a real, imperfect score
    assert {a.method for a in hostile.aggregates} >= {"full", "honest", "tamper"}


def test_a_stderr_flood_costs_the_trusted_side_no_memory(attacked):
    """200 MB of stderr in one line and a forged progress line: drained in bounded chunks, never parsed, never
    held; the method is stopped by the watchdog when the flood outlasts its call limit."""
    _, clean, _, flood = attacked
    rows = [r for r in flood.rows if r.method == "stderr_flood"]
    assert rows and (rows[0].error is None or "did not answer" in rows[0].error)
    assert flood.environment.peak_rss_bytes < clean.environment.peak_rss_bytes + 50 * 1024**2


def test_wall_clock_watchdog_kills_a_worker_that_prints_nothing():
    cfg = RunConfig(board="A", methods=["window"], items=1, length=200, tasks=["niah_single"])
    t0 = time.monotonic()
    with pytest.raises(SandboxError, match="wall-clock limit"):
        run_worker(asdict(cfg), wall_s=1)
    assert time.monotonic() - t0 < 30


def test_a_candidate_cannot_poison_the_baselines_fingerprints(tmp_path):
    """The fingerprint worker runs baselines itself and each candidate in its own sandbox: a candidate that
    patches the baselines' classes leaves their kept sets as they are without it."""
    from harness.fingerprint import build_bank

    bank = build_bank()
    d = tmp_path / "poison"
    d.mkdir()
    (d / "method.py").write_text(HEADER + textwrap.dedent("""
        import harness.methods.snapkv as s
        s.SnapKV.select = lambda self, view: Keep(tuple(torch.arange(1) for _ in range(view.n_kv_heads)))
        try:  # the fingerprint module is not even in the sandbox (only the interface is)
            import harness.fingerprint as f
            f.run = lambda *a, **k: {}
        except ImportError:
            pass
        class Poison(EvictionMethod):
            def select(self, view):
                return """ + FIRST + "\n"))
    alone = run_worker({"methods": ["snapkv"], "bank": str(bank), "budgets": [0.1]}, module="harness.fingerprint")
    mixed = run_worker({"methods": [str(d), "snapkv"], "bank": str(bank), "budgets": [0.1]},
                       module="harness.fingerprint")
    assert mixed["kept"]["snapkv"] == alone["kept"]["snapkv"]
    assert str(d) in mixed["kept"]


@pytest.mark.heavy  # two CLI harness runs (40 s): `make test-all`, as do the README's commands in order
def test_cli_check_and_run(tmp_path, arena):
    ok = run_review("harness", "check", str(arena / "submit" / "agent1-003"), "--json")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["ok"] and json.loads(ok.stdout)["sandbox"] == "bubblewrap"
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "method.py").write_text(HEADER + textwrap.dedent(ATTACKS["malformed"]))
    r = run_review("harness", "check", str(bad))
    assert r.returncode == 1 and "FAIL" in r.stdout
    hang = tmp_path / "hang"
    hang.mkdir()
    (hang / "method.py").write_text(HEADER + textwrap.dedent(ATTACKS["no_alarm"]))
    t0 = time.monotonic()
    r = run_review("harness", "check", str(hang), "--timeout", "2")
    assert r.returncode == 1 and "did not answer" in r.stdout and time.monotonic() - t0 < 60
    r = run_review("harness", "run", "snapkv", "--items", "1", "--length", "200", "--budgets", "0.5", "--json",
                   timeout=300)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["schema"] == "harness.result/2" and {a["method"] for a in res["aggregates"]} == {"full", "snapkv"}
    assert run_review("harness", "run", "snapkv", "--board", "Z").returncode == 2
    assert run_review("harness", "run", "snapkv", "--split", "test").returncode == 2
