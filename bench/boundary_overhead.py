"""The trust boundary's cost per layer call: a method in its own sandboxed process vs the same method called in
process (run by hand; ``--smoke`` in make test).

    nice .venv/bin/python bench/boundary_overhead.py [--tokens 2048] [--repeats 5] [--steps 20] [--threads 1]

On the embedded model's real layer tensors (a needle prompt, SnapKV's 32 window queries):
  1. one layer: ``select`` through ``harness.boundary.SandboxedMethod`` (shared-memory request, the method's
     process, answer read back and parsed) vs ``InProcessMethod`` (a direct call);
  2. a whole board-A compression (every attention layer, batched into round trips as ``Engine.compress`` does),
     stated per layer;
  3. board C's decode path: every layer at its cap evicts in one batched round trip (``call_layers``), stated per
     evicting layer.
The two handles alternate call by call (A B B A ...), so both see the same machine load. Every cost is per layer
call, in wall and CPU time; the CPU of the sandboxed side is this process's plus the method process tree's,
read from a cgroup made for it (``cpuacct.usage`` or ``cpu.stat``: nanosecond/microsecond counters, not 10 ms
ticks). Where no cgroup can be made, the method's CPU comes from ``getrusage(RUSAGE_CHILDREN)`` when its
process is reaped: one total per handle, reported as a mean per call (start-up measured by a second, idle
handle and subtracted). Printed: medians, and the sandboxed / in-process ratio per pair (median and range).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


class CpuCgroup:
    """A cgroup holding only the sandboxed method's processes: its CPU counter is exact and per call.

    The sandbox is started while this process sits in the cgroup (children inherit it at fork), then this
    process moves back, so the counter sees the method's process tree alone."""

    def __init__(self) -> None:
        self.path: Path | None = None
        self.home: Path | None = None
        self.v2 = False
        tag = f"rb-boundary-{os.getpid()}"
        v1 = Path("/sys/fs/cgroup/cpuacct")
        lines = Path("/proc/self/cgroup").read_text().splitlines()
        try:
            if (v1 / "cpuacct.usage").exists():
                cur = next(ln.split(":", 2)[2] for ln in lines if "cpuacct" in ln.split(":", 2)[1].split(","))
                self.home = v1 / cur.lstrip("/")
                self.path = self.home / tag
            else:
                base = Path("/sys/fs/cgroup") if Path("/sys/fs/cgroup/cgroup.controllers").exists() else \
                    Path("/sys/fs/cgroup/unified")
                cur = next(ln.split(":", 2)[2] for ln in lines if ln.startswith("0::"))
                self.home = base / cur.lstrip("/")
                self.path = self.home / tag
                self.v2 = True
            self.path.mkdir()
        except (OSError, StopIteration):
            self.path = None

    @property
    def ok(self) -> bool:
        return self.path is not None

    def enter(self) -> None:
        assert self.path is not None
        (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def leave(self) -> None:
        assert self.home is not None
        (self.home / "cgroup.procs").write_text(str(os.getpid()))

    def seconds(self) -> float:
        assert self.path is not None
        if self.v2:
            stat = dict(ln.split() for ln in (self.path / "cpu.stat").read_text().splitlines())
            return int(stat["usage_usec"]) / 1e6
        return int((self.path / "cpuacct.usage").read_text()) / 1e9

    def remove(self) -> None:
        if self.path is not None:
            try:
                self.path.rmdir()  # empty once the method's processes are gone
            except OSError:
                pass


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tokens", type=int, default=2048)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--cap", type=int, default=128, help="board C cap (the embedded model's scaled 2,048)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--smoke", action="store_true", help="a tiny run of the script itself (256 tokens, 1 repeat)")
    a = p.parse_args()
    if a.smoke:
        a.tokens, a.repeats, a.steps, a.cap = 256, 1, 2, 64

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
    cg = CpuCgroup()
    if cg.ok:
        cg.enter()
    try:
        sandboxed = open_method("snapkv", MethodLimits(threads=a.threads), isolate=True)
    finally:
        if cg.ok:
            cg.leave()
    handles = {"in-process": InProcessMethod(SnapKV(), "snapkv"), "sandboxed": sandboxed}
    source = ("cgroup " + str(cg.path)) if cg.ok else "getrusage(RUSAGE_CHILDREN) at exit (no cgroup could be made)"
    print(f"model {eng.info.name}: {len(eng.info.attention_layers)} attention layers, {n} prompt tokens, "
          f"sandbox {sandboxed.isolation}, {a.threads} thread(s); sandboxed CPU from {source}")

    rt0 = KVRuntime(eng.info.n_layers, eng.info.group_size)
    rt0.queries.prefill_positions = torch.arange(n - SnapKV.query_window, n)
    eng.forward(rt0, ids, 0, last_only=True)
    budget = n // 10
    layers = eng.info.attention_layers
    sb_calls = [0]

    def clock(k: str) -> tuple[float, float]:
        c = time.process_time()
        if k == "sandboxed" and cg.ok:
            c += cg.seconds()
        return time.perf_counter(), c

    def since(k: str, t: tuple[float, float]) -> tuple[float, float]:
        w, c = clock(k)
        return w - t[0], c - t[1]

    ip, sb = "in-process", "sandboxed"

    def order(i: int) -> list[str]:
        return list(handles) if i % 2 == 0 else list(reversed(list(handles)))  # A B B A ...

    runs = {k: MethodRun(k, h) for k, h in handles.items()}
    views = {k: [eng.view(rt0, layer, budget, "A", "prefill", _queries_for(rt0, r, n, None, "A")(layer))
                 for layer in layers] for k, r in runs.items()}
    for k, h in handles.items():
        h.select(views[k][0])  # warm-up (imports, first allocation of the shared region)
    startup = 0.0
    if not cg.ok:  # the method's CPU only arrives when its process is reaped: an idle twin measures start-up
        idle = open_method("snapkv", MethodLimits(threads=a.threads), isolate=True)
        idle.select(views["sandboxed"][0])
        c0 = children_cpu()
        idle.close()
        startup = children_cpu() - c0

    # 1. one layer at a time; per pair (same layer, same repeat) the two handles back to back
    one: dict[str, list[tuple[float, float]]] = {k: [] for k in handles}
    for rep in range(a.repeats):
        for i in range(len(layers)):
            for k in order(rep * len(layers) + i):
                t = clock(k)
                handles[k].select(views[k][i])
                one[k].append(since(k, t))
                sb_calls[0] += k == "sandboxed"

    # 2. a whole compression, batched as the harness does it; per layer
    whole: dict[str, list[tuple[float, float]]] = {k: [] for k in handles}
    for rep in range(a.repeats):
        for k in order(rep):
            rt = rt0.copy()
            t = clock(k)
            eng.compress(rt, runs[k], eng.layer_budgets(runs[k], budget, n), "A", "prefill",
                         _queries_for(rt0, runs[k], n, None, "A"))
            w, c = since(k, t)
            whole[k].append((w / len(layers), c / len(layers)))
            sb_calls[0] += len(layers) * (k == "sandboxed")

    # 3. board C: every layer at its cap evicts in one round trip; the two handles' caches step in lockstep
    evict: dict[str, list[tuple[float, float]]] = {k: [] for k in handles}
    rts, toks = {}, {}
    per = {k: eng.layer_budgets(r, a.cap - 1, n) for k, r in runs.items()}
    for k, r in runs.items():
        rt = rt0.copy()
        rt.queries.window = SnapKV.query_window
        eng.compress(rt, r, per[k], "C", "prefill", _queries_for(rt0, r, n, None, "C"))
        rts[k], toks[k] = rt, ids[-1]
    for i in range(a.steps):
        for k in order(i):
            rt = rts[k]
            toks[k] = int(eng.forward(rt, [toks[k]], n + i)[-1].argmax())
            over = [j for j in layers if max(rt.layers[j].lengths()) + 1 > a.cap]
            t = clock(k)
            eng.compress(rt, runs[k], per[k], "C", "decode", rt.recent_queries, over)
            w, c = since(k, t)
            evict[k].append((w / max(1, len(over)), c / max(1, len(over))))
            sb_calls[0] += len(over) * (k == "sandboxed")
    handles[ip].close()
    c0 = children_cpu()
    handles[sb].close()
    reaped = children_cpu() - c0
    cg.remove()

    ms = 1000.0
    rusage_mean = None if cg.ok else max(0.0, reaped - startup) / max(1, sb_calls[0])
    print("\n| per layer call | in-process wall / CPU ms (median) | sandboxed wall / CPU ms (median) | "
          "sandboxed / in-process wall (median, range over pairs) | CPU | boundary cost per layer call (wall, CPU) |")
    print("|---|---|---|---|---|---|")
    for label, d in ((f"SnapKV `select`, one layer per round trip ({len(one[ip])} pairs)", one),
                     (f"whole board-A compression, {len(layers)} layers batched ({len(whole[ip])} pairs)", whole),
                     (f"board C: every layer at its cap evicts in one round trip ({len(evict[ip])} steps)", evict)):
        wi = statistics.median(x[0] for x in d[ip])
        ci = statistics.median(x[1] for x in d[ip])
        ws = statistics.median(x[0] for x in d[sb])
        cs = statistics.median(x[1] for x in d[sb]) if rusage_mean is None else \
            statistics.median(x[1] for x in d[sb]) + rusage_mean
        wr = [s[0] / i[0] for i, s in zip(d[ip], d[sb]) if i[0] > 0]
        cr = [s[1] / i[1] for i, s in zip(d[ip], d[sb]) if i[1] > 0] if rusage_mean is None else []
        cpu = (f"{statistics.median(cr):.2f}x ({min(cr):.2f}-{max(cr):.2f}x)" if cr else
               f"{cs / ci:.2f}x (method CPU as a mean per call)" if ci > 0 else "n/a")
        print(f"| {label} | {wi * ms:.2f} / {ci * ms:.2f} | {ws * ms:.2f} / {cs * ms:.2f} | "
              f"{statistics.median(wr):.2f}x ({min(wr):.2f}-{max(wr):.2f}x) | {cpu} | "
              f"{(ws - wi) * ms:+.2f} ms, {(cs - ci) * ms:+.2f} ms |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
