"""Where trusted harness workers run: here, as a subprocess (the default), or as Ray tasks on a cluster.

Every harness run of a review — the board benchmark, the claim ledger's re-runs, ``review harness baselines`` —
goes through :func:`run_harness`, which hands it to the active executor. Both executors start the same trusted
worker with :func:`harness.sandbox.run_worker` (the Ray one does it on a cluster node, as a task holding one GPU
when the cluster has GPUs); untrusted methods are still started by that worker in their own bubblewrap sandbox.
So a run gives the same numbers wherever it runs, and the executor is no part of any stage's input hash.

Ray is optional (``pip install 'reviewbench[ray]'``); nothing here imports it until a Ray executor is asked for.
Every node must see the arena (its test splits, submissions and full-cache references) at the same path, and
run the same installation.

A board's full-cache reference is a file that the first run computes and later runs read. Runs that go side
by side would each compute it, so an executor that runs them concurrently computes it first, once, in a run of
the full cache alone, and only then starts the runs that read it (:meth:`Executor.ensure_reference`).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from harness.results import MethodLimits, Result, RunConfig
from reviewbench.errors import UserError

if TYPE_CHECKING:
    from reviewbench.arena import Arena, HarnessSettings

Progress = Callable[[str], None]
CONNECT_TIMEOUT_S = 5.0  # Ray itself retries an unreachable address for minutes: check it answers first
POLL_S = 0.5  # how often the driver forwards a Ray task's progress lines


class Executor:
    """Runs trusted harness workers as subprocesses of this process (:class:`RayExecutor`: as Ray tasks). The
    sandbox of each untrusted method is the worker's own business either way."""

    name = "local (subprocesses on this machine)"

    def __init__(self, concurrent: bool = False) -> None:
        # runs may go side by side: compute each full-cache reference once, before the runs that read it
        self.concurrent = concurrent
        self._lock = threading.Lock()
        self._ref_locks: dict[str, threading.Lock] = {}
        self.references: dict[str, str | None] = {}  # gate key -> what the reference run did ("computed", ...)
        self.cancelled = threading.Event()

    @property
    def slots(self) -> int:
        """How many runs this executor can usefully run at once."""
        return 1

    def run_harness(self, cfg: RunConfig, wall_s: float, progress: Progress | None = None,
                    label: str = "harness") -> Result:
        """One harness run of ``cfg``; progress lines as plain text."""
        if self.concurrent and cfg.reference and any(m != "full" for m in cfg.methods):
            self.ensure_reference(cfg, wall_s, progress, label)
        return self._run(cfg, wall_s, progress, label)

    def run_methods(self, cfg: RunConfig, wall_s: float, progress: Progress | None = None,
                    label: str = "harness") -> Result:
        """All of ``cfg``'s methods. Where runs go side by side, one run per method (the full-cache reference
        first), merged into the result one run of them all gives (:func:`merge_results`)."""
        methods = [m for m in cfg.methods if m != "full"]
        if self.slots < 2 or len(methods) < 2:
            return self.run_harness(cfg, wall_s, progress, label)
        t0 = time.perf_counter()
        state = self.ensure_reference(cfg, wall_s, progress, label) if cfg.reference else None
        with ThreadPoolExecutor(max_workers=min(len(methods), self.slots)) as pool:
            futures = [pool.submit(self._run, replace(cfg, methods=[m]), wall_s, progress, f"{label} [{m}]")
                       for m in methods]
            parts = [f.result() for f in futures]
        return merge_results(cfg, parts, state, time.perf_counter() - t0)

    def ensure_reference(self, cfg: RunConfig, wall_s: float, progress: Progress | None = None,
                         label: str = "harness") -> str | None:
        """Compute (or check) ``cfg``'s full-cache reference once in this executor, in a run of the full cache
        alone, before any run that reads it; concurrent callers for the same file wait for that run."""
        assert cfg.reference is not None
        ref_cfg = replace(cfg, methods=["full"])
        key = json.dumps(asdict(replace(ref_cfg, threads=None, limits=MethodLimits())), sort_keys=True)
        with self._lock:
            lock = self._ref_locks.setdefault(cfg.reference, threading.Lock())
        with lock:
            if key not in self.references:
                self.references[key] = self._run(ref_cfg, wall_s, progress, f"{label}: full-cache reference").reference
            return self.references[key]

    def _run(self, cfg: RunConfig, wall_s: float, progress: Progress | None, label: str) -> Result:
        from harness.sandbox import SandboxError, run_worker

        if self.cancelled.is_set():
            raise SandboxError("cancelled: the command was interrupted")
        return Result.from_json(run_worker(asdict(cfg), wall_s=wall_s, progress=_item_lines(progress, label),
                                           threads=cfg.threads))

    def cancel(self) -> None:
        """Start no more runs (a Ray executor also cancels those in flight; a local one lets the run of the
        calling thread finish: its worker is that thread's child)."""
        self.cancelled.set()


def _item_lines(progress: Progress | None, label: str,
                clock: Callable[[], float] = time.monotonic) -> Callable[[dict[str, Any]], None]:
    """The worker's progress dicts as lines: the item, items and tokens per second since the first, an ETA."""
    first: list[tuple[float, int]] = []
    last_done: list[tuple[int, float]] = [(0, 0.0)]  # (items done, elapsed when the latest of them finished)

    def on_progress(p: dict[str, Any]) -> None:
        if progress is None or p["item"] == "done":
            return
        now, tokens = clock(), int(p.get("tokens") or 0)
        if not first:
            first.append((now, tokens))
        t0, tok0 = first[0]
        if p["progress"] != last_done[0][0]:
            last_done[0] = (p["progress"], now - t0)
        progress(progress_text(label, p["progress"], p["total"], tokens - tok0, now - t0, last_done[0][1]))

    return on_progress


def progress_text(label: str, done: int, total: int, tokens: int, elapsed: float,
                  done_at: float | None = None) -> str:
    """``label: item 3/8, 41 s/item, 120 tok/s, ETA 3 min 25 s``: tokens per second over ``elapsed`` seconds; the
    time per item from ``done_at`` (the elapsed time when the ``done``-th item finished; default ``elapsed``), so
    a heartbeat inside an item counts the ETA down instead of stretching the rate (none before one is done)."""
    parts = [f"{label}: item {min(done + 1, total)}/{total}"]
    spent = elapsed if done_at is None else done_at
    if spent > 0 and done:
        rate = done / spent
        parts.append(f"{rate:.1f} items/s" if rate >= 1 else f"{spent / done:.0f} s/item")
    if elapsed > 0 and tokens:
        parts.append(f"{tokens / elapsed:.0f} tok/s")
    if spent > 0 and done:
        parts.append(f"ETA {duration(max(0.0, spent / done * total - elapsed))}")
    return ", ".join(parts)


def duration(seconds: float) -> str:
    s = max(0, round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def merge_results(cfg: RunConfig, parts: list[Result], reference: str | None, seconds: float) -> Result:
    """One result from runs of one method each on the same items: rows in the order one run of all the methods
    writes them (per seed and item: the full cache, then each method), aggregates and spreads recomputed from
    them, so the document is the one a single run gives (timings aside)."""
    from harness.evaluate import aggregate, seed_spread
    from harness.sandbox import SandboxError

    first = parts[0]
    if len({p.data_hash for p in parts}) > 1:
        raise SandboxError("the stored items changed between the runs of one fan-out (content hash differs)")
    keys = list(dict.fromkeys((r.seed, r.item) for r in first.rows))
    full = {k: [r for r in first.rows if r.method == "full" and (r.seed, r.item) == k] for k in keys}
    own = [{k: [r for r in p.rows if r.method != "full" and (r.seed, r.item) == k] for k in keys} for p in parts]
    rows = [r for k in keys for r in [*full[k], *(x for by_key in own for x in by_key[k])]]
    aggregates = aggregate(rows, first.config.board)
    spread = None
    if cfg.seeds > 1:
        spread = seed_spread([[r for r in rows if r.seed == s] for s in range(cfg.seeds)], aggregates,
                             first.config.board)
    isolation = next((p.environment.sandbox for p in parts if p.environment.sandbox != "in-process"),
                     first.environment.sandbox)
    states = {p.reference for p in parts}
    return Result(
        config=replace(first.config, methods=list(cfg.methods)), model=first.model,
        code_hashes={k: v for p in parts for k, v in p.code_hashes.items()},
        method_errors={k: v for p in parts for k, v in p.method_errors.items()},
        rows=rows, aggregates=aggregates, seed_spread=spread,
        environment=replace(first.environment, sandbox=isolation, seconds=round(seconds, 1),
                            peak_rss_bytes=max(p.environment.peak_rss_bytes for p in parts)),
        caps=first.caps, data_hash=first.data_hash,
        reference=reference if reference is not None else (states.pop() if len(states) == 1 else "partly reused"),
        harness_version=first.harness_version)


# --- Ray ----------------------------------------------------------------------------------------------------------
def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise UserError(None, "running harness workers on Ray needs Ray: pip install 'reviewbench[ray]'") from None
    return ray


def check_address(address: str) -> tuple[str, int]:
    """``HOST:PORT`` or ``ray://HOST:PORT`` that accepts a TCP connection, else a one-line error naming it."""
    parts = urlsplit(address if "://" in address else f"//{address}")
    try:
        host, port = parts.hostname, parts.port
    except ValueError:
        host, port = None, None
    if parts.scheme not in ("", "ray") or not host or port is None:
        raise UserError(None, f"Ray address {address!r}: expected auto, HOST:PORT or ray://HOST:PORT")
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError as e:
        why = "timed out" if isinstance(e, TimeoutError) else (e.strerror or str(e))
        raise UserError(None, f"Ray at {address}: no Ray cluster answers there ({why})") from None
    return host, port


def _ray_task(config: dict[str, Any], wall_s: float, threads: int | None, queue: Any) -> dict[str, Any]:
    """On a Ray node: the trusted worker, started exactly as a local run starts it."""
    from harness.sandbox import SandboxError, run_worker

    needed = [config.get("data"), *(m for m in config.get("methods", []) if os.sep in m)]
    missing = next((p for p in needed if p and not Path(p).exists()), None)
    if missing:
        raise SandboxError(f"{missing} is not visible on Ray node {socket.gethostname()}: every node must see the "
                           "arena at the same path (a shared file system)")

    def on_progress(p: dict[str, Any]) -> None:
        try:
            queue.put_nowait(p)
        except Exception:  # noqa: BLE001 - a full or lost progress queue must not lose the run
            pass

    return run_worker(config, wall_s=wall_s, progress=on_progress, threads=threads)


class RayExecutor(Executor):
    """Harness runs as Ray tasks: one GPU each when the cluster has GPUs, else ``[harness] threads`` CPUs (1 by
    default). Ray schedules them; this class only submits, forwards progress and unwraps errors."""

    def __init__(self, address: str = "auto") -> None:
        super().__init__(concurrent=True)
        target = address if address != "auto" else os.environ.get("RAY_ADDRESS") or None
        if target is not None and target not in ("auto", "local"):
            check_address(target)  # before importing Ray: a typo is told in a second
        self.ray = _import_ray()
        self.address = address
        self._connect(target)
        nodes = [n.get("Resources", {}) for n in self.ray.nodes() if n.get("Alive")]
        self.node_cpus = max((int(r.get("CPU", 0)) for r in nodes), default=0)
        total = self.ray.cluster_resources()
        self.cpus, self.gpus = int(total.get("CPU", 0)), int(total.get("GPU", 0))
        where = getattr(self.ray.get_runtime_context(), "gcs_address", None) or address
        self.name = (f"Ray at {where} ({len(nodes)} node{'s' if len(nodes) != 1 else ''}, {self.cpus} CPUs, "
                     f"{self.gpus} GPUs)")
        self._remote = self.ray.remote(_ray_task)
        import ray.util.queue  # noqa: F401  (imported here, once: not first from several threads at once)

    def _connect(self, target: str | None) -> None:
        ray = self.ray
        if ray.is_initialized():  # this process already holds a Ray connection (a test's cluster, say)
            return
        quiet = {"logging_level": logging.ERROR, "log_to_driver": False}
        try:
            if target is None:  # a cluster already running on this machine, else a new local one
                ray.init(**quiet)
            else:
                ray.init(address=target, **quiet)
        except Exception as e:  # noqa: BLE001 - Ray raises ConnectionError, RuntimeError, ValueError, ...
            raise UserError(None, f"Ray at {self.address}: {' '.join(str(e).split())[:300]}") from None

    @property
    def slots(self) -> int:
        return self.gpus or max(1, self.cpus)

    def _resources(self, cfg: RunConfig) -> dict[str, float]:
        cpus = cfg.threads or 1
        if cpus > self.node_cpus:
            raise UserError(None, f"[harness] threads = {cpus}, but no node of the Ray cluster has more than "
                                  f"{self.node_cpus} CPUs")
        return {"num_cpus": cpus, "num_gpus": 1 if self.gpus else 0}

    def _run(self, cfg: RunConfig, wall_s: float, progress: Progress | None, label: str) -> Result:
        from harness.sandbox import SandboxError
        from ray.util.queue import Queue

        ray = self.ray
        if self.cancelled.is_set():
            raise SandboxError("cancelled: the command was interrupted")
        resources = self._resources(cfg)
        queue = Queue(maxsize=1000, actor_options={"num_cpus": 0})  # no CPU: it must start beside busy tasks
        lines = _item_lines(progress, label)
        ref: Any = None
        try:
            ref = self._remote.options(**resources).remote(asdict(cfg), wall_s, cfg.threads, queue)
            if progress is not None:
                progress(f"{label}: queued on {self.name}")
            while True:
                ready, _ = ray.wait([ref], timeout=POLL_S)
                n = queue.qsize()
                for p in queue.get_nowait_batch(n) if n else []:
                    lines(p)
                if ready:
                    break
                if self.cancelled.is_set():
                    ray.cancel(ref)  # a KeyboardInterrupt in the task: run_worker kills its worker's process group
                    raise SandboxError("cancelled: the command was interrupted")
            data = ray.get(ref)
        except ray.exceptions.RayTaskError as e:  # the task raised: the worker's own error, as a local run gives it
            cause = getattr(e, "cause", None)
            if isinstance(cause, (SandboxError, FileNotFoundError, ValueError, PermissionError)):
                raise cause from None
            raise SandboxError(f"the Ray task failed: {type(cause or e).__name__}: {cause or e}") from None
        except ray.exceptions.RayError as e:  # a node or worker died, the task was cancelled, ...
            raise SandboxError(f"the Ray task failed: {' '.join(str(e).split())[:300]}") from None
        except KeyboardInterrupt:
            if ref is not None:
                ray.cancel(ref)
            raise
        finally:
            ray.kill(queue.actor)
        return Result.from_json(data)


# --- which executor runs ------------------------------------------------------------------------------------------
_pinned: Executor | None = None  # chosen on the command line (--ray): wins over arena.toml
_selected: Executor = Executor()
_ray: RayExecutor | None = None
_ray_lock = threading.Lock()


def ray_executor(address: str = "auto") -> RayExecutor:
    """The process's Ray executor: Ray connects once per process, so a second, different address is refused."""
    global _ray
    with _ray_lock:
        if _ray is None:
            _ray = RayExecutor(address)
        elif address not in ("auto", _ray.address):
            raise UserError(None, f"Ray at {address}: this process is already connected to Ray at {_ray.address}")
        return _ray


def executor_for(settings: "HarnessSettings", ray: str | None = None, config_file: Path | None = None) -> Executor:
    """``--ray ADDRESS`` when given, else ``[harness] executor`` (and ``ray_address``) of arena.toml."""
    if ray is not None:
        return ray_executor(ray)
    if settings.executor == "ray":
        try:
            return ray_executor(settings.ray_address or "auto")
        except UserError as e:
            raise UserError(config_file, f"[harness] executor = \"ray\": {e.message}") from None
    return Executor()


def current() -> Executor:
    return _pinned or _selected


def select_for(arena: "Arena") -> Executor:
    """The arena's executor (arena.toml), unless the command line pinned one; it serves :func:`run_harness`."""
    global _selected
    if _pinned is None:
        _selected = executor_for(arena.config.harness, config_file=arena.root / "arena.toml")
    return current()


@contextmanager
def use_executor(ex: Executor) -> Iterator[Executor]:
    """Pin ``ex`` for every harness run of this process inside the block (the CLI's ``--ray``)."""
    global _pinned
    previous, _pinned = _pinned, ex
    try:
        yield ex
    finally:
        _pinned = previous


def run_harness(cfg: RunConfig, wall_s: float, progress: Progress | None = None, label: str = "harness") -> Result:
    """A harness run in a trusted worker, on the active executor; progress lines as plain text."""
    return current().run_harness(cfg, wall_s, progress, label)
