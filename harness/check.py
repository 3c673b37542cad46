"""``review harness check``: load a method in its own sandboxed process, run it on one tiny synthetic layer per
board and phase, and report interface errors without loading a model. The method gets the same process, the
same limits and the same validation as in a real run.

    python -m harness.check CONFIG.json OUT.json     # a trusted worker; CONFIG: {"method": ..., "limits": {...}}
"""

from __future__ import annotations

import sys
from typing import Any

import torch

from harness.api import LayerView, ModelInfo
from harness.boundary import MethodError, open_method
from harness.io import read_json, write_json_atomic
from harness.kv import HeadKV, KVRuntime
from harness.results import MethodLimits, build
from harness.runner import apply_result

INFO = ModelInfo(name="synthetic", n_layers=2, n_heads=6, n_kv_heads=2, head_dim=16, rope_theta=10000.0)
CHECK_SCHEMA = "harness.check/1"


def _runtime(n: int, seed: int) -> KVRuntime:
    g = torch.Generator().manual_seed(seed)
    rt = KVRuntime(INFO.n_layers, INFO.group_size)
    for layer in rt.layers:
        layer.heads = [HeadKV(torch.randn(n, INFO.head_dim, generator=g), torch.randn(n, INFO.head_dim, generator=g),
                              torch.arange(n), n) for _ in range(INFO.n_kv_heads)]
    return rt


def check(spec: str, limits: MethodLimits = MethodLimits()) -> dict[str, Any]:
    report: dict[str, Any] = {"schema": CHECK_SCHEMA, "method": spec, "ok": False, "checks": []}
    try:
        handle = open_method(spec, limits, isolate=True)
    except (MethodError, OSError, ValueError) as e:
        report["error"] = f"cannot load: {e}"
        return report
    try:
        report.update(name=handle.name, code_hash=handle.code_hash, query_window=handle.attrs.query_window,
                      question_queries=handle.attrs.question_queries, sandbox=handle.isolation)
        try:
            handle.setup(INFO)
        except MethodError as e:
            report["error"] = f"setup failed: {e}"
            return report
        n = 64
        for board, phase, budget in (("A", "prefill", 8), ("B_online", "prefill", 16), ("C", "decode", 24)):
            rt = _runtime(n, 0)
            w = max(1, min(handle.attrs.query_window, n))
            q = torch.randn(INFO.n_heads, w, INFO.head_dim)
            qpos = torch.arange(n - w, n)
            entry: dict[str, Any] = {"board": board, "phase": phase, "budget": budget}
            try:
                handle.reset()
                k, v, pos, valid = rt.layers[0].padded()
                asks = handle.attrs.query_window > 0
                view = LayerView(layer=0, keys=k, values=v, positions=pos, queries=q if asks else None,
                                 budget=budget, board=board, phase=phase, model=INFO, valid=valid,  # type: ignore[arg-type]
                                 query_positions=qpos if asks else None)
                result = handle.on_decode(view) if phase == "decode" else handle.select(view)
                kept = apply_result(rt, 0, result, budget)
                entry["kept_per_head"] = [int(i.numel()) for i in kept] if kept is not None else rt.layers[0].lengths()
                entry["ok"] = True
            except MethodError as e:
                entry.update(ok=False, error=str(e))
            report["checks"].append(entry)
        report["ok"] = all(c["ok"] for c in report["checks"])
        return report
    finally:
        handle.close()


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    cfg = read_json(args[0])
    limits = build(MethodLimits, cfg.get("limits", {}))
    write_json_atomic(args[1], check(str(cfg["method"]), limits))
    return 0


if __name__ == "__main__":
    sys.exit(main())
