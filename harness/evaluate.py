"""A harness run: configuration in, one ``harness.result/1`` JSON document out.

Accuracy is reported normalised to the full cache on the same items (with a bootstrap CI), beside the
fidelity metrics (KL, top-1 agreement), the KVP eviction cost, exact KV bytes, compression time and decode
speed. ``seeds`` > 1 repeats the run on disjoint item sets and reports the seed-to-seed spread.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import json
import os
import platform
import random
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from statistics import fmean, pstdev
from typing import Callable

from harness.io import write_json_atomic

RESULT_SCHEMA = "harness.result/1"
DEFAULT_TASKS = {"A": ["niah_single"], "B_online": ["niah_multiquery"],
                 "B_offline": ["niah_multiquery"], "C": ["reasoning_trace"]}
DEFAULT_BUDGETS = {"A": [0.02, 0.05, 0.10], "B_online": [0.10, 0.25, 0.50], "B_offline": [0.10, 0.25, 0.50],
                   "C": [2048, 4096]}
EMBEDDED_C_SCALE = 1 / 16  # board C caps for the 135M embedded model: 2048/4096 -> 128/256 tokens per layer


@dataclass
class RunConfig:
    board: str = "A"
    methods: list[str] = field(default_factory=lambda: ["full"])  # reference names or method folders
    budgets: list[float] | None = None
    tasks: list[str] | None = None
    split: str = "dev"
    items: int = 20
    length: int | None = None  # context tokens (A, B: default 2048); trace tokens (C: default 384)
    seeds: int = 1
    model: str = "embedded:smollm2-135m-instruct"
    device: str = "cpu"
    dtype: str | None = None
    data: str | None = None  # a folder of stored items (the test split lives where the arena declares it)
    c_scale: float | None = None  # board C caps = budgets x c_scale (default: 1/16 on the embedded model)
    call_timeout_s: float = 60.0
    threads: int | None = None

    def resolved_budgets(self) -> list[float]:
        return list(self.budgets or DEFAULT_BUDGETS[self.board])

    def resolved_length(self) -> int:
        return self.length or (384 if self.board == "C" else 2048)

    def resolved_tasks(self) -> list[str]:
        return list(self.tasks or DEFAULT_TASKS[self.board])


def load_method(spec: str):
    """A reference method by name, or the single EvictionMethod subclass defined in ``<folder>/method.py``."""
    from harness.api import EvictionMethod
    from harness.methods import REFERENCE_METHODS

    if spec in REFERENCE_METHODS:
        return spec, REFERENCE_METHODS[spec](), hashlib.sha256(inspect.getsource(REFERENCE_METHODS[spec]).encode()).hexdigest()[:16]
    path = Path(spec)
    file = path / "method.py" if path.is_dir() else path
    if not file.is_file():
        raise FileNotFoundError(f"{spec}: no method.py (and not a reference method: {', '.join(REFERENCE_METHODS)})")
    source = file.read_bytes()
    mod_name = f"submitted_method_{hashlib.sha256(str(file).encode()).hexdigest()[:8]}"
    mspec = importlib.util.spec_from_file_location(mod_name, file)
    module = importlib.util.module_from_spec(mspec)
    sys.modules[mod_name] = module
    mspec.loader.exec_module(module)
    classes = [c for c in vars(module).values() if inspect.isclass(c) and issubclass(c, EvictionMethod)
               and c.__module__ == mod_name]
    if not classes:
        raise TypeError(f"{file}: no class subclassing EvictionMethod")
    if len(classes) > 1:
        raise TypeError(f"{file}: {len(classes)} EvictionMethod classes ({', '.join(c.__name__ for c in classes)}); "
                        f"define one")
    cls = classes[0]
    name = getattr(cls, "name", "unnamed")
    return (name if name != "unnamed" else path.name), cls(), hashlib.sha256(source).hexdigest()[:16]


def _items(cfg: RunConfig, eng, seed_idx: int):
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
                out += load_items(path)[seed_idx * cfg.items : (seed_idx + 1) * cfg.items]
        else:
            if cfg.split == "test":
                raise PermissionError("the test split is the arena's: pass --data DIR where it is stored")
            out += generate(task, cfg.split, cfg.items, eng.n_tokens, cfg.resolved_length(), offset=seed_idx * cfg.items)
    return out


def write_split(tasks: list[str], split: str, items: int, length: int, model: str, out: Path) -> list[Path]:
    """Generate a split's items and store them as ``<task>.jsonl`` in ``out``: how an arena keeps its hidden
    test split (where its audit rules watch), to be read back with ``data=out``."""
    from transformers import AutoTokenizer

    from harness.model import resolve_model_path
    from harness.tasks import generate, save_items

    tok = AutoTokenizer.from_pretrained(resolve_model_path(model))
    n_tokens = lambda text: len(tok(text, add_special_tokens=False)["input_ids"])  # noqa: E731
    written = []
    for task in tasks:
        path = out / f"{task}.jsonl"
        save_items(generate(task, split, items, n_tokens, length), path)
        written.append(path)
    return written


def bootstrap_ci(values: list[float], level: float = 0.95, n: int = 1000, seed: int = 0) -> tuple[float, float]:
    if not values:
        return float("nan"), float("nan")
    rng = random.Random(seed)
    means = sorted(fmean(rng.choices(values, k=len(values))) for _ in range(n))
    lo, hi = int((1 - level) / 2 * n), int((1 + level) / 2 * n) - 1
    return means[lo], means[hi]


def _mean(xs):
    xs = [x for x in xs if x is not None]
    return fmean(xs) if xs else None


def aggregate(rows: list[dict], board: str) -> list[dict]:
    """Per (method, budget, task) and per (method, budget) over all tasks."""
    full = {(r["item"], r["question"]): r for r in rows if r["method"] == "full"}
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        if r["method"] == "full":
            continue
        groups.setdefault((r["method"], r["budget"], r["task"]), []).append(r)
        groups.setdefault((r["method"], r["budget"], "*"), []).append(r)
    for r in rows:
        if r["method"] == "full":
            groups.setdefault(("full", 1.0 if board != "C" else 0, r["task"]), []).append(r)
            groups.setdefault(("full", 1.0 if board != "C" else 0, "*"), []).append(r)
    out = []
    for (method, budget, task), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2])):
        errors = [r["error"] for r in rs if r.get("error")]
        ok = [r for r in rs if not r.get("error")]
        pairs = [(r["score"], full[(r["item"], r["question"])]["score"]) for r in ok
                 if r.get("score") is not None and (r["item"], r["question"]) in full]
        full_mean = fmean(f for _, f in pairs) if pairs else None
        norm = (fmean(s for s, _ in pairs) / full_mean) if pairs and full_mean else None
        # per-item normalised scores for the CI: score / mean full score on the same items
        ci = bootstrap_ci([s / full_mean for s, _ in pairs]) if pairs and full_mean else (None, None)
        full_bytes = _mean([full[(r["item"], r["question"])]["kv_bytes"] for r in ok if (r["item"], r["question"]) in full])
        full_speed = _mean([full[(r["item"], r["question"])]["decode_tok_s"] for r in ok if (r["item"], r["question"]) in full])
        kvb = _mean([r["kv_bytes"] for r in ok])
        speed = _mean([r["decode_tok_s"] for r in ok])
        out.append({
            "method": method, "budget": budget, "task": task, "n": len(ok), "errors": len(errors),
            "error": errors[0] if errors else None,
            "accuracy": _mean([r["score"] for r in ok]), "full_accuracy": full_mean,
            "normalized_accuracy": norm, "normalized_ci95": list(ci) if ci[0] is not None else None,
            "kl": _mean([r["kl"] for r in ok]), "top1": _mean([r["top1"] for r in ok]),
            "eviction_cost": _mean([r["eviction_cost"] for r in ok]),
            "eviction_cost_oracle": _mean([r["eviction_cost_oracle"] for r in ok]),
            "kept_tokens": _mean([r["kept_tokens"] for r in ok]),
            "kv_bytes": kvb, "kv_bytes_ratio": (kvb / full_bytes) if kvb and full_bytes else None,
            "kv_bytes_peak": _mean([r["kv_bytes_peak"] for r in ok]),
            "compress_s": _mean([r["compress_s"] for r in ok]),
            "offline_s": _mean([r.get("offline_s") for r in ok]),
            "decode_tok_s": speed, "decode_speed_ratio": (speed / full_speed) if speed and full_speed else None,
            "generated_tokens": _mean([r["generated_tokens"] for r in ok]),
        })
    return out


def run(cfg: RunConfig, progress: Callable[[int, int, str], None] | None = None) -> dict:
    import torch

    from harness.model import load_model
    from harness.runner import BOARDS, Engine, MethodRun, run_decode_item, run_prefill_item, row_dict

    if cfg.board not in BOARDS:
        raise ValueError(f"unknown board {cfg.board!r} ({', '.join(BOARDS)})")
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    t_start = time.perf_counter()
    loaded = load_model(cfg.model, cfg.device, cfg.dtype)
    eng = Engine(loaded, cfg.call_timeout_s)
    specs = cfg.methods if "full" in cfg.methods else ["full", *cfg.methods]
    runs, hashes, load_errors = [], {}, {}
    for spec in specs:
        try:
            name, method, digest = load_method(spec)
            setup = getattr(method, "setup", None)
            if setup:
                eng.call(setup, eng.info)
            runs.append(MethodRun(name=name, method=method))
            hashes[name] = digest
        except Exception as e:  # a method that cannot even load is a result, not a crash
            load_errors[spec] = f"{type(e).__name__}: {e}"
    budgets = cfg.resolved_budgets()
    scale = cfg.c_scale if cfg.c_scale is not None else (EMBEDDED_C_SCALE if cfg.model.startswith("embedded") else 1.0)
    caps = [max(8, int(b * scale)) for b in budgets] if cfg.board == "C" else []
    budget_kind = "tokens" if cfg.board == "C" else "fraction"
    per_seed: list[list[dict]] = []
    all_rows: list[dict] = []
    for s in range(cfg.seeds):
        items = _items(cfg, eng, s)
        rows = []
        for i, item in enumerate(items):
            if progress:
                progress(s * len(items) + i, cfg.seeds * len(items), item.id)
            got = (run_decode_item(eng, item, runs, caps, budgets) if cfg.board == "C"
                   else run_prefill_item(eng, item, runs, cfg.board, budget_kind, budgets))
            rows += [dict(row_dict(r), seed=s) for r in got]
        per_seed.append(rows)
        all_rows += rows
    if progress:
        progress(cfg.seeds, cfg.seeds, "done")
    aggregates = aggregate(all_rows, cfg.board)
    spread = None
    if cfg.seeds > 1:
        spread = []
        per = [aggregate(rs, cfg.board) for rs in per_seed]
        for a in aggregates:
            vals = [x["normalized_accuracy"] for p in per for x in p
                    if (x["method"], x["budget"], x["task"]) == (a["method"], a["budget"], a["task"])
                    and x["normalized_accuracy"] is not None]
            kls = [x["kl"] for p in per for x in p
                   if (x["method"], x["budget"], x["task"]) == (a["method"], a["budget"], a["task"]) and x["kl"] is not None]
            spread.append({"method": a["method"], "budget": a["budget"], "task": a["task"],
                           "normalized_accuracy_std": pstdev(vals) if len(vals) > 1 else None,
                           "kl_std": pstdev(kls) if len(kls) > 1 else None, "seeds": len(vals) or len(kls)})
    import transformers

    return {
        "schema": RESULT_SCHEMA,
        "config": {**asdict(cfg), "budgets": budgets, "tasks": cfg.resolved_tasks(), "length": cfg.resolved_length(),
                   "c_caps": caps or None,
                   "model_info": asdict(eng.info), "code_hashes": hashes},
        "method_errors": {**load_errors, **{r.name: r.error for r in runs if r.error}},
        "rows": all_rows,
        "aggregates": aggregates,
        "seed_spread": spread,
        "environment": {"python": platform.python_version(), "torch": torch.__version__,
                        "transformers": transformers.__version__, "device": cfg.device, "dtype": loaded.dtype,
                        "threads": torch.get_num_threads(), "platform": platform.platform(),
                        "sandbox": os.environ.get("REVIEWBENCH_SANDBOX", "none"),
                        "seconds": round(time.perf_counter() - t_start, 1)},
    }


def main(argv: list[str] | None = None) -> int:
    """Worker entry (inside the sandbox): ``python -m harness.evaluate CONFIG.json OUT.json``."""
    args = argv if argv is not None else sys.argv[1:]
    cfg = RunConfig(**json.loads(Path(args[0]).read_text()))

    def progress(i: int, n: int, label: str) -> None:
        print(json.dumps({"progress": i, "total": n, "item": label}), file=sys.stderr, flush=True)

    result = run(cfg, progress)
    write_json_atomic(args[1], result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
