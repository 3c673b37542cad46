"""Where harness workers run: locally by default (no Ray needed), or as Ray tasks on a cluster with the same
numbers; a full-cache reference computed once before runs that go side by side; bad Ray addresses refused in
one line."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from dataclasses import replace

import pytest

from harness.results import Environment, ModelFacts, Result, Row, RunConfig
from harness.sandbox import SandboxError
from reviewbench import executor as ex_mod
from reviewbench.arena import HarnessSettings, load_arena
from reviewbench.errors import UserError
from reviewbench.executor import Executor, executor_for, merge_results, run_harness, use_executor

from conftest import EXAMPLE_ARENA, ROOT

TIMING = ("model_cpu_s", "compress_s", "compress_cpu_s", "offline_s", "decode_tok_s")
AGG_TIMING = ("compress_s", "offline_s", "decode_tok_s", "decode_speed_ratio")


def untimed(rows: list[Row]) -> list[Row]:
    """Rows without what a clock measures (CPU and wall seconds, tokens/s): the rest must be equal."""
    return [replace(r, **{k: None for k in TIMING}) for r in rows]


# --- merging one-method runs into one result ------------------------------------------------------------------------
MODEL = ModelFacts(name="m", n_layers=2, n_heads=2, n_kv_heads=1, head_dim=8)
ENV = Environment(python="3", torch="t", transformers="x", device="cpu", dtype="float32", threads=2, platform="p",
                  sandbox="bubblewrap", seconds=3.0, peak_rss_bytes=10)


def rows_of(method: str, items: list[str], seeds: int, budgets: list[float]) -> dict[tuple[int, str], list[Row]]:
    out = {}
    for s in range(seeds):
        for k, item in enumerate(items):
            if method == "full":
                out[(s, item)] = [Row(item=item, task="niah_single", question=0, method="full", budget=0, seed=s,
                                      score=1.0, kl=0.0, kv_bytes=1000)]
            else:
                h = sum(map(ord, method))
                out[(s, item)] = [Row(item=item, task="niah_single", question=0, method=method, budget=b, seed=s,
                                      score=float((h + k + s + int(b * 100)) % 2), kl=(h % 7 + k) / 10,
                                      kv_bytes=int(1000 * b)) for b in budgets]
    return out


def part(method: str, items: list[str], seeds: int, budgets: list[float], data_hash: str = "d") -> Result:
    from harness.evaluate import aggregate

    full, own = rows_of("full", items, seeds, budgets), rows_of(method, items, seeds, budgets)
    rows = [r for key in full for r in [*full[key], *own[key]]]
    cfg = RunConfig(board="A", methods=[method], budgets=budgets, items=len(items), seeds=seeds, tasks=["niah_single"])
    return Result(config=cfg, model=MODEL, code_hashes={method: f"h-{method}"}, method_errors={}, rows=rows,
                  aggregates=aggregate(rows, "A"), seed_spread=None, environment=ENV, data_hash=data_hash,
                  reference="reused")


def test_merged_runs_have_the_rows_one_run_of_all_methods_writes():
    from harness.evaluate import aggregate, seed_spread

    items, budgets, methods = ["b7", "a1", "c3"], [0.05, 0.1], ["tova", "snapkv", "knorm"]
    cfg = RunConfig(board="A", methods=["full", *methods], budgets=budgets, items=3, seeds=2, tasks=["niah_single"])
    merged = merge_results(cfg, [part(m, items, 2, budgets) for m in methods], "computed", 7.25)
    # one run writes per seed and item (in its item order): the full cache, then each method in the given order
    full, own = rows_of("full", items, 2, budgets), {m: rows_of(m, items, 2, budgets) for m in methods}
    expected = [r for key in full for r in [*full[key], *(x for m in methods for x in own[m][key])]]
    assert merged.rows == expected
    assert merged.aggregates == aggregate(expected, "A")  # the bootstrap CIs depend on the row order too
    assert merged.seed_spread == seed_spread([[r for r in expected if r.seed == s] for s in (0, 1)],
                                             merged.aggregates, "A")
    assert list(merged.code_hashes) == methods and merged.config.methods == cfg.methods
    assert merged.reference == "computed" and merged.environment.seconds == 7.2
    with pytest.raises(SandboxError, match="content hash differs"):
        merge_results(cfg, [part("tova", items, 1, budgets), part("knorm", items, 1, budgets, "other")], None, 1.0)


# --- the default needs no Ray ------------------------------------------------------------------------------------
NO_RAY = """
import sys
sys.modules["ray"] = None  # import ray fails, as on a machine without the extra
from reviewbench.arena import HarnessSettings
from reviewbench.errors import UserError
from reviewbench.executor import Executor, current, executor_for
assert type(current()) is Executor and type(executor_for(HarnessSettings())) is Executor
try:
    executor_for(HarnessSettings(executor="ray"))
except UserError as e:
    print(e.one_line())
"""


def test_local_execution_is_the_default_and_ray_is_only_needed_when_asked_for():
    r = subprocess.run([sys.executable, "-c", NO_RAY], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == ("[harness] executor = \"ray\": running harness workers on Ray needs Ray: "
                                "pip install 'reviewbench[ray]'")


def test_arena_toml_executor_settings_are_checked_and_in_no_input_hash():
    hs = HarnessSettings(executor="ray", ray_address="10.0.0.5:6379")
    assert "executor" not in hs.model_dump() and "ray_address" not in hs.model_dump()
    with pytest.raises(ValueError, match="ray_address needs executor"):
        HarnessSettings(ray_address="10.0.0.5:6379")
    with pytest.raises(ValueError):
        HarnessSettings(executor="dask")


@pytest.mark.parametrize("address, why", [("127.0.0.1:1", "no Ray cluster answers there (Connection refused)"),
                                          ("no-such-host.invalid:6379", "no Ray cluster answers there"),
                                          ("localhost", "expected auto, HOST:PORT or ray://HOST:PORT"),
                                          ("http://h:1", "expected auto, HOST:PORT or ray://HOST:PORT")])
def test_a_bad_ray_address_is_one_line_and_exit_2(address, why):
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "reviewbench", "arena", "run", "--arena", str(EXAMPLE_ARENA),
                        "--ray", address], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and address in lines[0] and why in lines[0]
    assert time.monotonic() - t0 < 60  # Ray itself would retry an unreachable address for minutes


def test_an_unreachable_ray_address_in_arena_toml_refuses_the_review_before_writing(tmp_path):
    from live_arena import make_small_arena

    arena = make_small_arena(tmp_path / "arena", port=9, harness='executor = "ray"\nray_address = "127.0.0.1:1"')
    toml = arena / "arena.toml"
    r = subprocess.run([sys.executable, "-m", "reviewbench", "submit/agent1-002"], capture_output=True, text=True,
                       timeout=300, cwd=arena)
    assert r.returncode == 2
    assert r.stderr.strip() == (f"error: {toml}: [harness] executor = \"ray\": Ray at 127.0.0.1:1: no Ray cluster "
                                "answers there (Connection refused)")
    assert not (arena / "reviews" / "reviewbench.sqlite").exists()


# --- the stages' harness runs go through the active executor ----------------------------------------------------
class Refusing(Executor):
    """Records every run it is given and refuses it (no worker is started)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[RunConfig] = []

    def _run(self, cfg, wall_s, progress, label):
        self.seen.append(cfg)
        raise SandboxError("refused by the test executor")


def test_the_claim_ledger_runs_on_the_active_executor():
    from reviewbench.evidence.claims import LedgerClaim
    from reviewbench.evidence.ledger import run_claims

    claim = LedgerClaim(source="claims.json", text="0.8 at 10 %", metric="normalized_accuracy", value=0.8, board="A",
                        budget=0.1)
    arena = load_arena(EXAMPLE_ARENA)
    with use_executor(Refusing()) as refusing:
        entries = run_claims([claim], EXAMPLE_ARENA / "submit" / "agent1-002", arena)
    assert [(c.split, c.budgets, c.seeds) for c in refusing.seen] == [("dev", [0.1], 2)]
    assert entries[0].status == "unverifiable" and "refused by the test executor" in entries[0].reason


def test_pinned_executor_wins_over_arena_toml_and_is_released():
    arena = load_arena(EXAMPLE_ARENA)
    pinned = Refusing()
    with use_executor(pinned):
        assert ex_mod.select_for(arena) is pinned and ex_mod.current() is pinned
        with pytest.raises(SandboxError):
            run_harness(RunConfig(), 60)
    assert ex_mod.select_for(arena) is not pinned and type(ex_mod.current()) is Executor


def test_concurrent_runs_compute_a_reference_once(tmp_path):
    """Runs that read the same reference file and go side by side: one reference run first, the others wait."""
    calls: list[list[str]] = []
    lock = threading.Lock()

    class Recording(Executor):
        def _run(self, cfg, wall_s, progress, label):
            with lock:
                calls.append(list(cfg.methods))
            time.sleep(0.2)
            return part(cfg.methods[0], ["i"], 1, [0.1])

    ex = Recording(concurrent=True)
    cfgs = [RunConfig(methods=[m], reference=str(tmp_path / "ref.pt")) for m in ("snapkv", "tova", "knorm")]
    threads = [threading.Thread(target=ex.run_harness, args=(c, 60)) for c in cfgs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls[0] == ["full"] and sorted(map(tuple, calls[1:])) == [("knorm",), ("snapkv",), ("tova",)]
    assert Recording().run_harness(cfgs[0], 60) and len(calls) == 5  # one at a time: no reference run first


# --- on a real local Ray cluster (CPU only) -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray")
    import logging

    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.mark.heavy  # minutes: `make test-all` runs it, `make test` (CI) does not
@pytest.mark.slow
def test_ray_runs_equal_a_local_run_and_share_one_reference(ray_cluster, tmp_path, monkeypatch):
    """Two methods on board A's stored test items: one local run of both vs one Ray task per method (after one
    reference task); same rows and aggregates, timings aside; the reference computed once and read twice."""
    from live_arena import make_small_arena

    arena_dir = make_small_arena(tmp_path / "arena", port=9)  # the judges are never asked here
    arena = load_arena(arena_dir)
    from reviewbench.benchmark import run_config, split_manifest

    board = arena.config.board("A")
    manifest = split_manifest(arena, board)
    cfg = run_config(arena, board, manifest, ["snapkv", "window"])
    local = Executor().run_harness(replace(cfg, reference=str(tmp_path / "local-ref.pt")), 1800)
    assert local.reference == "computed"

    monkeypatch.setattr(ex_mod, "_ray", None)
    ray_ex = executor_for(HarnessSettings(), ray="auto")  # the cluster this process started
    assert isinstance(ray_ex, ex_mod.RayExecutor) and ray_ex.cpus == 2 and ray_ex.slots == 2
    parts: list[Result] = []
    real_run = ex_mod.RayExecutor._run

    def recording_run(self, c, wall_s, progress, label):
        r = real_run(self, c, wall_s, progress, label)
        parts.append(r)
        return r

    monkeypatch.setattr(ex_mod.RayExecutor, "_run", recording_run)
    lines: list[str] = []
    merged = ray_ex.run_methods(replace(cfg, reference=str(tmp_path / "ray-ref.pt")), 1800, lines.append, "t")
    assert [p.config.methods for p in parts][0] == ["full"] and parts[0].reference == "computed"
    assert sorted(p.config.methods[0] for p in parts[1:]) == ["snapkv", "window"]
    assert all(p.reference == "reused" for p in parts[1:])
    assert list(ray_ex.references.values()) == ["computed"]
    assert untimed(merged.rows) == untimed(local.rows)
    strip = {k: None for k in AGG_TIMING}
    assert [replace(a, **strip) for a in merged.aggregates] == [replace(a, **strip) for a in local.aggregates]
    assert merged.code_hashes == local.code_hashes and merged.data_hash == local.data_hash
    assert any("item 1/1" in x for x in lines)  # the tasks' progress reached the driver


@pytest.mark.slow
def test_a_ray_task_failure_is_the_workers_own_error(ray_cluster, tmp_path, monkeypatch):
    monkeypatch.setattr(ex_mod, "_ray", None)
    ray_ex = executor_for(HarnessSettings(), ray="auto")
    with pytest.raises(SandboxError, match="is not visible on Ray node"):
        ray_ex.run_harness(RunConfig(methods=[str(tmp_path / "gone")], data=str(tmp_path / "gone")), 60)
    with pytest.raises(UserError, match="no node of the Ray cluster has more than 2 CPUs"):
        ray_ex.run_harness(RunConfig(threads=64), 60)
