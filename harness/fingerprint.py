"""Behavioural fingerprint: what a method keeps on a frozen bank of real layer tensors.

The bank is captured once from the embedded model on fixed dev prompts (a needle haystack with its question,
board-A style) and cached: keys, values, positions and every prompt query of a few layers. Any method is then
run on it at a few budgets and its kept index sets are returned. This module is a trusted worker: an untrusted
method runs in its own sandboxed process (``harness.boundary``), each candidate in a process of its own, so no
candidate can touch another method's kept sets or the cached results of the baselines.
Two implementations of one idea keep the same tokens whatever their code looks like; two different ideas
do not. (KVzip's reconstruction pass is not in the bank: it falls back to recency here.)

    python -m harness.fingerprint CONFIG.json OUT.json     # the trusted worker
"""

from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path

import torch

from harness.api import LayerView, ModelInfo
from harness.boundary import MethodError, open_method
from harness.io import atomic_write, read_json, write_json_atomic
from harness.kv import HeadKV, KVRuntime
from harness.results import MethodLimits, build
from harness.runner import apply_result

BANK_VERSION = 1
LAYERS = (2, 9, 16, 23, 29)
PROMPTS = (0, 1)  # dev niah_single items by offset
LENGTH = 512
BUDGETS = (0.05, 0.1, 0.25)


def bank_dir() -> Path:
    from harness.model import cache_dir

    return cache_dir() / f"fingerprint-bank-v{BANK_VERSION}"


def build_bank(path: Path | None = None) -> Path:
    """Capture the bank (deterministic: fixed prompts, greedy model, no sampling); atomic write."""
    from harness.model import load_model
    from harness.runner import Engine
    from harness.tasks import generate

    folder = path or bank_dir()
    target = folder / "bank.pt"
    if target.is_file():
        return target
    eng = Engine(load_model())
    views = []
    for p in PROMPTS:
        item = generate("niah_single", "dev", 1, eng.n_tokens, LENGTH, offset=p)[0]
        ctx, q = eng.segments(item, item.questions[0])
        ids = ctx + q
        rt = KVRuntime(eng.info.n_layers, eng.info.group_size)
        rt.queries.prefill_positions = torch.arange(len(ids))
        eng.forward(rt, ids, 0)
        for layer in LAYERS:
            k, v, pos, _ = rt.layers[layer].padded()
            views.append({"prompt": p, "layer": layer, "keys": k, "values": v, "positions": pos,
                          "queries": rt.queries.prefill[layer], "question": (len(ctx), len(ids))})
    atomic_write(target, lambda fh: torch.save({"version": BANK_VERSION, "model": asdict(eng.info), "views": views}, fh))
    return target


def run(methods: list[str], bank: Path, budgets: list[float], limits: MethodLimits = MethodLimits()) -> dict:
    data = torch.load(bank, weights_only=True)
    info = ModelInfo(**data["model"])
    kept: dict[str, dict[str, dict[str, list[list[int]]]]] = {}
    errors: dict[str, str] = {}
    for spec in methods:
        try:
            handle = open_method(spec, limits, isolate=False)  # reference methods in process; the rest sandboxed
        except (MethodError, OSError, ValueError) as e:
            errors[spec] = str(e)
            continue
        try:
            kept[spec] = _run_one(handle, data["views"], info, budgets)
        except MethodError as e:
            errors[spec] = str(e)
        finally:
            handle.close()
    return {"schema": "harness.fingerprint/1", "bank_version": BANK_VERSION, "budgets": budgets,
            "kept": kept, "errors": errors}


def _run_one(handle, views: list[dict], info: ModelInfo, budgets: list[float]) -> dict[str, dict[str, list[list[int]]]]:
    handle.setup(info)
    out: dict[str, dict[str, list[list[int]]]] = {}
    for b in budgets:
        per_view = {}
        for v in views:
            t = v["keys"].shape[1]
            w = min(handle.attrs.query_window, t)
            q, qpos = (v["queries"][:, t - w:], torch.arange(t - w, t)) if w else (None, None)
            if handle.attrs.question_queries:
                start = min(t - w, v["question"][0])
                q, qpos = v["queries"][:, start:], torch.arange(start, t)
            mean_budget = max(1, int(round(b * t)))
            per_layer = handle.layer_budgets(mean_budget, t, info)
            budget = int(per_layer[v["layer"]]) if per_layer and len(per_layer) > v["layer"] else mean_budget
            handle.reset()
            view = LayerView(layer=v["layer"], keys=v["keys"], values=v["values"], positions=v["positions"],
                             queries=q, budget=budget, board="A", phase="prefill", model=info, query_positions=qpos)
            rt = KVRuntime(1, info.group_size)
            rt.layers[0].heads = [HeadKV(v["keys"][h].clone(), v["values"][h].clone(), v["positions"][h].clone(), t)
                                  for h in range(v["keys"].shape[0])]
            idx = apply_result(rt, 0, handle.select(view), budget)
            heads = idx if idx is not None else [rt.layers[0].heads[h].pos[: rt.layers[0].heads[h].n]
                                                 for h in range(len(rt.layers[0].heads))]
            per_view[f"p{v['prompt']}/L{v['layer']}"] = [sorted(int(i) for i in x) for x in heads]
        out[f"{b:g}"] = per_view
    return out


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    cfg = read_json(args[0])
    limits = build(MethodLimits, cfg.get("limits", {}))
    write_json_atomic(args[1], run(cfg["methods"], Path(cfg["bank"]), cfg.get("budgets", list(BUDGETS)), limits))
    return 0


if __name__ == "__main__":
    sys.exit(main())
