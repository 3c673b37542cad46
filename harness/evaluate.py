"""A harness run: configuration in, one ``harness.result/2`` document out (``harness.results.Result``).

This is a trusted worker: it owns the model, the items (the hidden test split too), the cache, decoding and
scoring. Every method it evaluates that is not one of the harness's own reference methods runs in its own
sandboxed process (``harness.boundary``), so nothing a submission does can reach this process, its numbers
or its result file.

Accuracy is reported normalised to the full cache on the same items (with a bootstrap CI), beside the
fidelity metrics (KL, top-1 agreement), the KVP eviction cost, exact KV bytes, compression time and decode
speed. ``seeds`` > 1 repeats the run on disjoint item sets and reports the seed-to-seed spread. With
``reference`` set, the full cache's results on these items are read from that file when it matches (same
model, items, board and harness version) and written there otherwise, so every later method on the same
items skips the full cache's decoding.
"""

from __future__ import annotations

import hashlib
import os
import platform
import random
import resource
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from statistics import fmean, pstdev
from typing import Any

from harness.io import read_json, write_json_atomic
from harness.results import (BOARDS, Aggregate, Environment, ModelFacts, Result, Row, RunConfig,
                             SeedSpread, build, harness_version)

REFERENCE_FORMAT = "harness.reference/1"


def data_hash(folder: Path, tasks: list[str]) -> str:
    """Content hash of the stored items a run reads (the split's identity in every result)."""
    h = hashlib.sha256()
    for task in sorted(tasks):
        for name in (f"{task}.jsonl", "data.json", "test.jsonl") if task in ("longbench_v2", "math500") else (
                f"{task}.jsonl",):
            p = folder / name
            if p.is_file():
                h.update(name.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def _items(cfg: RunConfig, eng: Any, seed_idx: int) -> list[Any]:
    from harness.tasks import generate, load_items, load_longbench_v2, load_math500

    out = []
    for task in cfg.resolved_tasks():
        if cfg.data:
            folder = Path(cfg.data)
            if task == "longbench_v2":
                out += load_longbench_v2(folder / "data.json", cfg.items)
            elif task == "math500":
                out += load_math500(folder / "test.jsonl", cfg.items, max_new_tokens=cfg.resolved_length())
            else:
                path = folder / f"{task}.jsonl"
                if not path.is_file():
                    raise FileNotFoundError(f"{path}: no stored items for task {task}")
                out += load_items(path)[seed_idx * cfg.items: (seed_idx + 1) * cfg.items]
        else:
            out += generate(task, cfg.split, cfg.items, eng.n_tokens, cfg.resolved_length(), offset=seed_idx * cfg.items)
    from harness.boundary import item_texts, protect

    protect(item_texts(out))  # no method's error may carry these items' text out (harness.boundary.redact)
    return out


def bootstrap_ci(values: list[float], level: float = 0.95, n: int = 1000, seed: int = 0) -> tuple[float, float]:
    if not values:
        return float("nan"), float("nan")
    rng = random.Random(seed)
    means = sorted(fmean(rng.choices(values, k=len(values))) for _ in range(n))
    lo, hi = int((1 - level) / 2 * n), int((1 + level) / 2 * n) - 1
    return means[lo], means[hi]


def _mean(xs: list[float | int | None]) -> float | None:
    ys = [float(x) for x in xs if x is not None]
    return fmean(ys) if ys else None


def aggregate(rows: list[Row], board: str) -> list[Aggregate]:
    """Per (method, budget, task) and per (method, budget) over all tasks."""
    full = {(r.item, r.question): r for r in rows if r.method == "full"}
    groups: dict[tuple[str, float, str], list[Row]] = {}
    for r in rows:
        key_budget = r.budget if r.method != "full" else (1.0 if board != "C" else 0.0)
        groups.setdefault((r.method, key_budget, r.task), []).append(r)
        groups.setdefault((r.method, key_budget, "*"), []).append(r)
    out = []
    for (method, budget, task), rs in sorted(groups.items(), key=lambda kv: kv[0]):
        errors = [r.error for r in rs if r.error]
        ok = [r for r in rs if not r.error]
        pairs = [(r.score, full[(r.item, r.question)].score) for r in ok
                 if r.score is not None and (r.item, r.question) in full]
        pairs_f = [(float(s), float(f)) for s, f in pairs if f is not None]
        full_mean = fmean(f for _, f in pairs_f) if pairs_f else None
        norm = (fmean(s for s, _ in pairs_f) / full_mean) if pairs_f and full_mean else None
        ci = bootstrap_ci([s / full_mean for s, _ in pairs_f]) if pairs_f and full_mean else None
        refs = [full[(r.item, r.question)] for r in ok if (r.item, r.question) in full]
        full_bytes = _mean([f.kv_bytes for f in refs])
        full_speed = _mean([f.decode_tok_s for f in refs])
        kvb = _mean([r.kv_bytes for r in ok])
        speed = _mean([r.decode_tok_s for r in ok])
        layer_max = [r.kv_tokens_layer_max for r in ok if r.kv_tokens_layer_max is not None]
        out.append(Aggregate(
            method=method, budget=budget, task=task, n=len(ok), errors=len(errors),
            error=errors[0] if errors else None, accuracy=_mean([r.score for r in ok]), full_accuracy=full_mean,
            normalized_accuracy=norm, normalized_ci95=list(ci) if ci is not None else None,
            kl=_mean([r.kl for r in ok]), top1=_mean([r.top1 for r in ok]),
            eviction_cost=_mean([r.eviction_cost for r in ok]),
            eviction_cost_oracle=_mean([r.eviction_cost_oracle for r in ok]),
            kept_tokens=_mean([r.kept_tokens for r in ok]), kv_bytes=kvb,
            kv_bytes_ratio=(kvb / full_bytes) if kvb and full_bytes else None,
            kv_bytes_peak=_mean([r.kv_bytes_peak for r in ok]),
            kv_tokens_layer_max=max(layer_max) if layer_max else None,
            compress_s=_mean([r.compress_s for r in ok]), offline_s=_mean([r.offline_s for r in ok]),
            decode_tok_s=speed, decode_speed_ratio=(speed / full_speed) if speed and full_speed else None,
            generated_tokens=_mean([r.generated_tokens for r in ok])))
    return out


def seed_spread(per_seed: list[list[Row]], aggregates: list[Aggregate], board: str) -> list[SeedSpread]:
    per = [aggregate(rs, board) for rs in per_seed]
    out = []
    for a in aggregates:
        same = [x for p in per for x in p if (x.method, x.budget, x.task) == (a.method, a.budget, a.task)]
        vals = [x.normalized_accuracy for x in same if x.normalized_accuracy is not None]
        kls = [x.kl for x in same if x.kl is not None]
        out.append(SeedSpread(method=a.method, budget=a.budget, task=a.task,
                              normalized_accuracy_std=pstdev(vals) if len(vals) > 1 else None,
                              kl_std=pstdev(kls) if len(kls) > 1 else None, seeds=len(vals) or len(kls)))
    return out


# --- the shared full-cache reference --------------------------------------------------------------------------------
def model_identity(path: Path) -> str:
    """A model folder's identity: its config and the sizes of its weight files (cheap, and changes when the
    checkpoint does)."""
    h = hashlib.sha256()
    for f in sorted(path.iterdir()):
        if f.name == "config.json":
            h.update(f.read_bytes())
        elif f.suffix in (".safetensors", ".bin", ".gguf"):
            h.update(f"{f.name}:{f.stat().st_size}".encode())
    return h.hexdigest()[:16]


def reference_key(cfg: RunConfig, model_name: str, model_id: str, data: str | None) -> dict[str, Any]:
    return {"format": REFERENCE_FORMAT, "harness": harness_version(cfg.board),
            "board_kind": "decode" if cfg.board == "C" else
            ("query_aware" if cfg.board == "A" else "query_agnostic"), "model": model_name, "model_id": model_id,
            "data": data,
            "split": cfg.split, "tasks": cfg.resolved_tasks(), "length": cfg.resolved_length(),
            "device": cfg.device, "dtype": cfg.dtype}


def load_reference(path: Path, key: dict[str, Any]) -> dict[str, Any]:
    """The stored references of a matching key (item id -> state), else an empty map."""
    import torch

    if not path.is_file():
        return {}
    try:
        blob = torch.load(path, weights_only=True)
    except Exception:  # noqa: BLE001 - a damaged cache is recomputed, never trusted
        return {}
    if not isinstance(blob, dict) or blob.get("key") != key or not isinstance(blob.get("items"), dict):
        return {}
    return dict(blob["items"])


def save_reference(path: Path, key: dict[str, Any], items: dict[str, Any]) -> None:
    import torch

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.partial")
    torch.save({"key": key, "items": items}, tmp)
    os.replace(tmp, path)


Progress = Callable[[int, int, str, int], None]  # (items done, items in all, current item, model tokens so far)
HEARTBEAT_S = 10.0  # the worker repeats its progress this often even inside a long item (tokens keep counting)


def run(cfg: RunConfig, progress: Progress | None = None) -> Result:
    import torch
    import transformers

    from harness.boundary import MethodError, open_method
    from harness.loading import is_reference
    from harness.model import load_model
    from harness.runner import Engine, ItemReference, MethodRun, run_decode_item, run_prefill_item

    if cfg.board not in BOARDS:
        raise ValueError(f"unknown board {cfg.board!r} ({', '.join(BOARDS)})")
    if cfg.split == "test" and not cfg.data:
        raise PermissionError("the test split is the arena's: pass the folder where it is stored (data)")
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    t_start = time.perf_counter()
    if cfg.device.startswith("cuda"):  # sandboxed methods score on the GPU too (harness.boundary)
        os.environ.setdefault("REVIEWBENCH_METHOD_DEVICE", cfg.device)
    loaded = load_model(cfg.model, cfg.device, cfg.dtype)
    eng = Engine(loaded)
    if isinstance(progress, Heartbeat):  # its beats between items read the live token count
        progress.tokens = lambda: eng.tokens
    specs = [m for m in cfg.methods if m != "full"]
    runs: list[MethodRun] = []
    submitted: set[str] = set()  # the runs of submitted files (not the trusted references): their lines are traced
    hashes: dict[str, str] = {}
    load_errors: dict[str, str] = {}
    isolation = "in-process"
    try:
        for spec in specs:
            try:
                handle = open_method(spec, cfg.limits, isolate=True)
            except (MethodError, OSError, ValueError) as e:  # a method that cannot even load is a result
                load_errors[Path(spec).name if os.sep in spec else spec] = str(e)
                continue
            isolation = handle.isolation
            run_ = MethodRun(name=handle.name, method=handle)
            try:
                handle.setup(eng.info)
            except MethodError as e:
                run_.error = str(e)
            runs.append(run_)
            hashes[handle.name] = handle.code_hash
            if not is_reference(spec):
                submitted.add(handle.name)
        result = _run_items(cfg, eng, runs, progress, run_decode_item, run_prefill_item, ItemReference)
    finally:
        traces = {r.name: r.method.executed_lines() for r in runs if r.name in submitted}
        for r in runs:
            r.method.close()
    rows, per_seed, data_id, ref_state = result
    aggregates = aggregate(rows, cfg.board)
    facts = ModelFacts(name=eng.info.name, n_layers=eng.info.n_layers, n_heads=eng.info.n_heads,
                       n_kv_heads=eng.info.n_kv_heads, head_dim=eng.info.head_dim, rope_theta=eng.info.rope_theta,
                       param_bytes=eng.param_bytes, attention_layers=list(eng.info.attention_layers))
    return Result(
        config=replace(cfg, budgets=cfg.resolved_budgets(), tasks=cfg.resolved_tasks(), length=cfg.resolved_length()),
        model=facts, code_hashes=hashes,
        method_errors={**load_errors, **{r.name: r.error for r in runs if r.error}},
        rows=rows, aggregates=aggregates,
        seed_spread=seed_spread(per_seed, aggregates, cfg.board) if cfg.seeds > 1 else None,
        environment=Environment(python=platform.python_version(), torch=torch.__version__,
                                transformers=transformers.__version__, device=cfg.device, dtype=loaded.dtype,
                                threads=torch.get_num_threads(), platform=platform.platform(),
                                sandbox=isolation, seconds=round(time.perf_counter() - t_start, 1),
                                peak_rss_bytes=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024),
        caps=cfg.resolved_caps() or None, data_hash=data_id, reference=ref_state,
        harness_version=harness_version(cfg.board),
        executed_lines={k: v for k, v in traces.items() if v is not None},
        trace_lost=sorted(k for k, v in traces.items() if v is None))


def _run_items(cfg: RunConfig, eng: Any, runs: list[Any], progress: Progress | None,
               run_decode_item: Any, run_prefill_item: Any, item_reference: Any
               ) -> tuple[list[Row], list[list[Row]], str | None, str | None]:
    budgets = cfg.resolved_budgets()
    caps = cfg.resolved_caps()
    data_id = data_hash(Path(cfg.data), cfg.resolved_tasks()) if cfg.data else None
    ref_path = Path(cfg.reference) if cfg.reference else None
    key = reference_key(cfg, eng.info.name, model_identity(eng.lm.path), data_id)
    stored = load_reference(ref_path, key) if ref_path else {}
    recorder = None
    if cfg.kept and cfg.board != "C":  # what the methods keep on the scored calls (harness.keptsets)
        from harness.keptsets import KeptRecorder

        recorder = KeptRecorder(Path(cfg.kept), {**key, "items": cfg.items, "kept_items": cfg.kept_items}, budgets,
                                cfg.limits, eng.info, cfg.kept_layers)
    reused = computed = 0
    per_seed: list[list[Row]] = []
    all_rows: list[Row] = []
    for s in range(cfg.seeds):
        items = _items(cfg, eng, s)
        rows: list[Row] = []
        if recorder is not None and s == 0:
            from harness.keptsets import chosen_items

            chosen = chosen_items([it.id for it in items], data_id, cfg.kept_items)
        for i, item in enumerate(items):
            if progress:
                progress(s * len(items) + i, cfg.seeds * len(items), item.id, eng.tokens)
            prior = item_reference.from_state(stored[item.id]) if item.id in stored else None
            if cfg.board == "C":
                got, ref = run_decode_item(eng, item, runs, caps, budgets, prior, per_head=cfg.cap_per_head)
            else:
                got, ref = run_prefill_item(eng, item, runs, cfg.board, "fraction", budgets, prior,
                                            record=recorder if recorder is not None and s == 0 and item.id in chosen
                                            else None)
            if ref is prior:
                reused += 1
            else:
                computed += 1
                stored[item.id] = ref.state()
            rows += [replace(r, seed=s) for r in got]
        per_seed.append(rows)
        all_rows += rows
    if progress:
        progress(cfg.seeds, cfg.seeds, "done", eng.tokens)
    if ref_path is not None and computed:
        save_reference(ref_path, key, stored)
    if recorder is not None:
        recorder.save()
    state = None if ref_path is None else ("reused" if not computed else "computed" if not reused else "partly reused")
    return all_rows, per_seed, data_id, state


class Heartbeat:
    """The worker's progress lines on stderr: one at each item, and the latest again every ``every`` seconds from
    a background thread, so a driver sees the run alive (and its tokens count) even while one item takes
    minutes."""

    def __init__(self, every: float = HEARTBEAT_S, out: Any = None) -> None:
        import threading

        self.every = every
        self.out = out if out is not None else sys.stderr
        self.state: dict[str, Any] | None = None
        self.tokens: Callable[[], int] | None = None
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._beat, daemon=True)

    def __call__(self, i: int, n: int, label: str, tokens: int) -> None:
        with self.lock:
            self.state = {"progress": i, "total": n, "item": label, "tokens": int(tokens)}
            self._emit()

    def _emit(self) -> None:
        import json

        if self.state is not None:
            print(json.dumps(self.state), file=self.out, flush=True)

    def _beat(self) -> None:
        while not self.stop.wait(self.every):
            with self.lock:
                if self.state is not None and self.state["item"] != "done":
                    if self.tokens is not None:
                        self.state["tokens"] = int(self.tokens())
                    self._emit()

    def __enter__(self) -> "Heartbeat":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


def main(argv: list[str] | None = None) -> int:
    """Worker entry: ``python -m harness.evaluate CONFIG.json OUT.json``."""
    args = argv if argv is not None else sys.argv[1:]
    cfg = build(RunConfig, read_json(args[0]))
    with Heartbeat() as beat:
        result = run(cfg, beat)
    write_json_atomic(args[1], result.to_json())
    return 0


if __name__ == "__main__":
    sys.exit(main())
