"""``review harness check``: load a method (in the sandbox), run it on one tiny synthetic layer per board
and phase, and report interface errors without loading a model."""

from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path

import torch

from harness.io import write_json_atomic
from harness.api import LayerView, ModelInfo
from harness.kv import HeadKV, KVRuntime
from harness.runner import MethodError, apply_result

INFO = ModelInfo(name="synthetic", n_layers=2, n_heads=6, n_kv_heads=2, head_dim=16, rope_theta=10000.0)


def _runtime(n: int, seed: int) -> KVRuntime:
    g = torch.Generator().manual_seed(seed)
    rt = KVRuntime(INFO.n_layers, INFO.group_size)
    for layer in rt.layers:
        layer.heads = [HeadKV(torch.randn(n, INFO.head_dim, generator=g), torch.randn(n, INFO.head_dim, generator=g),
                              torch.arange(n), n) for _ in range(INFO.n_kv_heads)]
    return rt


def check(spec: str) -> dict:
    from harness.evaluate import load_method

    report: dict = {"schema": "harness.check/1", "method": spec, "ok": False, "checks": []}
    try:
        name, method, digest = load_method(spec)
    except Exception as e:
        report["error"] = f"cannot load: {type(e).__name__}: {e}"
        return report
    report.update(name=name, code_hash=digest, query_window=int(getattr(method, "query_window", 0)),
                  question_queries=bool(getattr(method, "question_queries", False)))
    if hasattr(method, "setup"):
        method.setup(INFO)
    n = 64
    for board, phase, budget in (("A", "prefill", 8), ("B_online", "prefill", 16), ("C", "decode", 24)):
        rt = _runtime(n, 0)
        w = max(1, min(report["query_window"], n))
        q = torch.randn(INFO.n_heads, w, INFO.head_dim)
        qpos = torch.arange(n - w, n)
        entry = {"board": board, "phase": phase, "budget": budget}
        try:
            state: dict = {}
            k, v, pos, valid = rt.layers[0].padded()
            view = LayerView(layer=0, keys=k, values=v, positions=pos, queries=q if report["query_window"] else None,
                             budget=budget, board=board, phase=phase, model=INFO, valid=valid,
                             query_positions=qpos if report["query_window"] else None, state=state)
            hook = method.on_decode if phase == "decode" else method.select
            kept = apply_result(rt, 0, hook(view), budget)
            entry["kept_per_head"] = [int(i.numel()) for i in kept] if kept is not None else rt.layers[0].lengths()
            entry["ok"] = True
        except MethodError as e:
            entry.update(ok=False, error=str(e))
        except Exception as e:
            tb = traceback.extract_tb(e.__traceback__)[-1]
            entry.update(ok=False, error=f"{type(e).__name__}: {e} (at {Path(tb.filename).name}:{tb.lineno})")
        report["checks"].append(entry)
    report["ok"] = all(c["ok"] for c in report["checks"])
    return report


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    cfg = json.loads(Path(args[0]).read_text())
    out = check(cfg["method"])
    write_json_atomic(args[1], out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
