"""Behavioural fingerprint: what a method keeps on a frozen bank of real layer tensors.

The bank is captured once from the embedded model on fixed dev prompts (a needle haystack with its question,
board-A style) and cached: keys, values, positions and every prompt query of a few layers. Any method is then
run on it at a few budgets, in the sandbox like every untrusted call, and its kept index sets are returned.
Two implementations of one idea keep the same tokens whatever their code looks like; two different ideas
do not. (KVzip's reconstruction pass is not in the bank: it falls back to recency here.)

    python -m harness.fingerprint CONFIG.json OUT.json     # the sandboxed worker
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path

import torch

from harness.api import LayerView, ModelInfo
from harness.io import write_json_atomic
from harness.kv import HeadKV, KVRuntime
from harness.runner import apply_result, guarded_call

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
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / "bank.pt.partial"
    torch.save({"version": BANK_VERSION, "model": asdict(eng.info), "views": views}, tmp)
    tmp.chmod(0o644)
    folder.chmod(0o755)
    tmp.replace(target)
    return target


def run(methods: list[str], bank: Path, budgets: list[float], call_timeout_s: float = 30.0) -> dict:
    from harness.evaluate import load_method

    data = torch.load(bank, weights_only=False)
    info = ModelInfo(**data["model"])
    kept: dict[str, dict[str, dict[str, list[list[int]]]]] = {}
    errors: dict[str, str] = {}
    for spec in methods:
        try:
            name, method, _ = load_method(spec)
            if hasattr(method, "setup"):
                guarded_call(method.setup, call_timeout_s, info)
            out: dict[str, dict[str, list[list[int]]]] = {}
            for b in budgets:
                per_view = {}
                for v in data["views"]:
                    t = v["keys"].shape[1]
                    w = min(int(getattr(method, "query_window", 0)), t)
                    q, qpos = (v["queries"][:, t - w:], torch.arange(t - w, t)) if w else (None, None)
                    if getattr(method, "question_queries", False):
                        q, qpos = v["queries"][:, min(t - w, v["question"][0]):], torch.arange(min(t - w, v["question"][0]), t)
                    mean_budget = max(1, int(round(b * t)))
                    per_layer = guarded_call(method.layer_budgets, call_timeout_s, mean_budget, t, info)
                    budget = int(per_layer[v["layer"]]) if per_layer else mean_budget
                    view = LayerView(layer=v["layer"], keys=v["keys"], values=v["values"], positions=v["positions"],
                                     queries=q, budget=budget, board="A", phase="prefill", model=info,
                                     query_positions=qpos, state={})
                    rt = KVRuntime(1, info.group_size)
                    rt.layers[0].heads = [HeadKV(v["keys"][h].clone(), v["values"][h].clone(), v["positions"][h].clone(), t)
                                          for h in range(v["keys"].shape[0])]
                    result = guarded_call(method.select, call_timeout_s, view)
                    idx = apply_result(rt, 0, result, budget)
                    heads = idx if idx is not None else [rt.layers[0].heads[h].pos[: rt.layers[0].heads[h].n]
                                                         for h in range(len(rt.layers[0].heads))]
                    per_view[f"p{v['prompt']}/L{v['layer']}"] = [sorted(int(i) for i in x) for x in heads]
                out[f"{b:g}"] = per_view
            kept[spec] = out
        except Exception as e:  # noqa: BLE001 - any failure of untrusted code (MethodError included) is reported
            errors[spec] = f"{type(e).__name__}: {e}"
    return {"schema": "harness.fingerprint/1", "bank_version": BANK_VERSION, "budgets": budgets,
            "kept": kept, "errors": errors}


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    cfg = json.loads(Path(args[0]).read_text())
    write_json_atomic(args[1], run(cfg["methods"], Path(cfg["bank"]), cfg.get("budgets", list(BUDGETS))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
