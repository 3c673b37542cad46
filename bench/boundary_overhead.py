"""The trust boundary's cost: a method in its own sandboxed process vs the same method called in process
(run by hand, not in CI).

    nice .venv/bin/python bench/boundary_overhead.py [--tokens 2048] [--repeats 5] [--steps 20] [--threads 1]

On the embedded model's real layer tensors (a 2K needle prompt, SnapKV's 32 window queries):
  1. one layer: ``select`` through ``harness.boundary.SandboxedMethod`` (shared-memory request, the method's
     process, answer read back and parsed) vs ``InProcessMethod`` (a direct call), median per layer;
  2. a whole board-A compression (every attention layer, batched into round trips as ``Engine.compress`` does);
  3. board C's decode path: every layer at its cap evicts before each decoded token, all in one batched
     round trip (``call_layers``), against the decode step itself.
Every number is also given as a fraction of what it is compared with, measured in the same run (prefill
time for 1-2, the decode step for 3), so machine load cancels out of the ratios.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tokens", type=int, default=2048)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--cap", type=int, default=128, help="board C cap (the embedded model's scaled 2,048)")
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args()

    import torch

    from harness.boundary import InProcessMethod, open_method
    from harness.kv import KVRuntime
    from harness.methods import SnapKV
    from harness.model import load_model
    from harness.results import MethodLimits
    from harness.runner import Engine, MethodRun, _queries_for
    from harness.tasks import generate

    torch.set_num_threads(a.threads)
    eng = Engine(load_model())
    item = generate("niah_single", "dev", 1, eng.n_tokens, a.tokens, offset=0)[0]
    ctx, qids = eng.segments(item, item.questions[0])
    ids = ctx + qids
    n = len(ids)
    handles = {"in-process": InProcessMethod(SnapKV(), "snapkv"),
               "sandboxed": open_method("snapkv", MethodLimits(threads=a.threads), isolate=True)}
    print(f"model {eng.info.name}: {len(eng.info.attention_layers)} attention layers, {n} prompt tokens, "
          f"sandbox {handles['sandboxed'].isolation}, {a.threads} thread(s)")

    prefill, prefill_cpu = [], []
    for _ in range(max(1, a.repeats // 2)):
        rt0 = KVRuntime(eng.info.n_layers, eng.info.group_size)
        rt0.queries.prefill_positions = torch.arange(n - SnapKV.query_window, n)
        t0, c0 = time.perf_counter(), time.process_time()
        eng.forward(rt0, ids, 0, last_only=True)
        prefill.append(time.perf_counter() - t0)
        prefill_cpu.append(time.process_time() - c0)
    t_prefill, c_prefill = statistics.median(prefill), statistics.median(prefill_cpu)
    budget = n // 10
    layers = eng.info.attention_layers

    # Every comparison interleaves the two handles call by call, so both see the same machine load; wall time
    # and CPU time (this process's, plus the method process's own as the kernel counts it) are both kept.
    def clock(h: object) -> tuple[float, float]:
        return time.perf_counter(), time.process_time() + (h.cpu_seconds() if h is handles["sandboxed"] else 0.0)

    def since(h: object, t: tuple[float, float]) -> tuple[float, float]:
        w, c = clock(h)
        return w - t[0], c - t[1]

    # reading the method process's CPU time from /proc costs CPU itself: measured here and subtracted
    probe = [since(handles["sandboxed"], clock(handles["sandboxed"])) for _ in range(30)]
    clock_cost = (statistics.median(p[0] for p in probe), statistics.median(p[1] for p in probe))

    def since(h: object, t: tuple[float, float]) -> tuple[float, float]:  # type: ignore[no-redef]
        w, c = clock(h)
        cost = clock_cost if h is handles["sandboxed"] else (0.0, 0.0)
        return w - t[0] - cost[0], c - t[1] - cost[1]

    # 1. one layer at a time
    per_layer: dict[str, list[tuple[float, float]]] = {k: [] for k in handles}
    runs = {k: MethodRun(k, h) for k, h in handles.items()}
    views = {k: [eng.view(rt0, layer, budget, "A", "prefill", _queries_for(rt0, r, n, None, "A")(layer))
                 for layer in layers] for k, r in runs.items()}
    for k, h in handles.items():
        h.select(views[k][0])  # warm-up (imports, first allocation of the shared region)
    for rep in range(a.repeats):
        for i in range(len(layers)):
            order = list(handles) if (rep + i) % 2 == 0 else list(reversed(list(handles)))
            for k in order:
                t = clock(handles[k])
                handles[k].select(views[k][i])
                per_layer[k].append(since(handles[k], t))

    # 2. a whole compression, batched as the harness does it
    whole: dict[str, list[tuple[float, float]]] = {k: [] for k in handles}
    for rep in range(a.repeats):
        for k in (list(handles) if rep % 2 == 0 else list(reversed(list(handles)))):
            rt = rt0.copy()
            t = clock(handles[k])
            eng.compress(rt, runs[k], eng.layer_budgets(runs[k], budget, n), "A", "prefill",
                         _queries_for(rt0, runs[k], n, None, "A"))
            whole[k].append(since(handles[k], t))

    # 3. board C: every layer at its cap evicts before each decoded token, in one round trip; the two
    # handles' caches step in lockstep
    evict: dict[str, list[tuple[float, float]]] = {k: [] for k in handles}
    step: list[tuple[float, float]] = []
    rts, toks = {}, {}
    per = {k: eng.layer_budgets(r, a.cap - 1, n) for k, r in runs.items()}
    for k, r in runs.items():
        rt = rt0.copy()
        rt.queries.window = SnapKV.query_window
        eng.compress(rt, r, per[k], "C", "prefill", _queries_for(rt0, r, n, None, "C"))
        rts[k], toks[k] = rt, ids[-1]
    for i in range(a.steps):
        for k in (list(handles) if i % 2 == 0 else list(reversed(list(handles)))):
            rt = rts[k]
            t0, c0 = time.perf_counter(), time.process_time()
            toks[k] = int(eng.forward(rt, [toks[k]], n + i)[-1].argmax())
            step.append((time.perf_counter() - t0, time.process_time() - c0))
            over = [j for j in layers if max(rt.layers[j].lengths()) + 1 > a.cap]
            t = clock(handles[k])
            eng.compress(rt, runs[k], per[k], "C", "decode", rt.recent_queries, over)
            evict[k].append(since(handles[k], t))
    for h in handles.values():
        h.close()

    def med(xs: list[tuple[float, float]], which: int) -> float:
        return statistics.median(x[which] for x in xs)

    ms = 1000.0
    ip, sb = "in-process", "sandboxed"
    t_step, c_step = med(step, 0), med(step, 1)
    print(f"\nreferences measured in this run (wall / CPU): prefill of {n} tokens {t_prefill:.2f} / {c_prefill:.2f} s;"
          f" a decode step at the cap {t_step * ms:.0f} / {c_step * ms:.0f} ms (median); reading the method "
          f"process's CPU time costs {clock_cost[1] * ms:.2f} ms CPU (subtracted)")
    print("\n| what | in-process wall / CPU | sandboxed wall / CPU | sandboxed / in-process (wall, CPU) | "
          "boundary cost (wall, CPU) vs reference |")
    print("|---|---|---|---|---|")
    rows = [(f"SnapKV select, one layer (median of {len(per_layer[ip])})", per_layer, len(layers),
             (t_prefill, c_prefill), "prefill, x all layers"),
            (f"SnapKV, whole board-A compression ({len(layers)} layers, batched)", whole, 1, (t_prefill, c_prefill),
             "prefill"),
            ("board C: every layer evicts before a decode step (one round trip)", evict, 1, (t_step, c_step),
             "a decode step")]
    for label, d, mult, (rw, rc), what in rows:
        wi, ci, ws, cs = med(d[ip], 0), med(d[ip], 1), med(d[sb], 0), med(d[sb], 1)
        print(f"| {label} | {wi * ms:.1f} / {ci * ms:.1f} ms | {ws * ms:.1f} / {cs * ms:.1f} ms | "
              f"{ws / wi:.2f}x, {cs / ci:.2f}x | {(ws - wi) * mult / rw:+.1%}, {(cs - ci) * mult / rc:+.1%} of {what} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
