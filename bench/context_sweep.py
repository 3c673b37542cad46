"""Memory and time of the harness against context length, on the embedded model (run by hand, not in CI).

    nice .venv/bin/python bench/context_sweep.py [--lengths 2048 4096 8192 16384] [--threads 2] [--json OUT]

Each length runs in a fresh process (peaks do not carry over) through the stages of a board-A item:
  load       the model (the baseline every later peak is compared with)
  prefill    the full cache, one needle prompt of that length (niah_single, dev split)
  reference  the full cache's greedy answer, teacher-forced top-K distributions and KVP importance
  snapkv     one board-A run of SnapKV at 10 % (prefill again, compress, answer, KL, eviction cost),
             reusing the reference
Peak RSS per stage is the kernel's high-water mark (VmHWM), reset before each stage; beside it, what glibc's
malloc holds after the stage (in use, and freed but still resident in its heap). ``--mmap-threshold 0`` runs with
glibc's default allocator setting instead of the harness's (``harness/alloc.py``), to compare. The summary prints the
growth exponent of the peak above the loaded model (log-log slope over the lengths; 1 = linear), the memory
per token against the full KV cache's own bytes per token, and the peak against model + KV cache.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

STAGES = ("load", "prefill", "reference", "snapkv")


def rss() -> tuple[int, int]:
    """(current, peak) resident bytes of this process."""
    status = Path("/proc/self/status").read_text()
    cur = int(re.search(r"VmRSS:\s+(\d+)", status).group(1))  # type: ignore[union-attr]
    hwm = int(re.search(r"VmHWM:\s+(\d+)", status).group(1))  # type: ignore[union-attr]
    return cur * 1024, hwm * 1024


def malloc_bytes() -> dict[str, int]:
    """glibc's mallinfo2: bytes in use (heap + own mappings) and freed but still held in the heap ({} elsewhere)."""
    import ctypes

    class Info(ctypes.Structure):
        _fields_ = [(f, ctypes.c_size_t) for f in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                   "fsmblks", "uordblks", "fordblks", "keepcost")]
    try:
        fn = ctypes.CDLL("libc.so.6").mallinfo2
    except (OSError, AttributeError):
        return {}
    fn.restype = Info
    m = fn()
    return {"malloc_in_use": m.uordblks + m.hblkhd, "malloc_free_held": m.fordblks}


def reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")  # the kernel's documented way to reset VmHWM


def one(length: int, threads: int, budget: float) -> dict:
    import torch

    from harness.boundary import InProcessMethod
    from harness.kv import KVRuntime
    from harness.methods import SnapKV
    from harness.model import load_model
    from harness.runner import Engine, MethodRun, prefill_reference, run_prefill_item
    from harness.tasks import generate

    torch.set_num_threads(threads)
    out: dict = {"length": length, "stages": {}}

    def stage(name: str, t0: float, **extra: object) -> None:
        cur, peak = rss()
        out["stages"][name] = {"seconds": round(time.perf_counter() - t0, 2), "peak_rss": peak, "rss_after": cur,
                               **malloc_bytes(), **extra}

    reset_peak()
    t0 = time.perf_counter()
    eng = Engine(load_model())
    stage("load", t0)
    item = generate("niah_single", "dev", 1, eng.n_tokens, length, offset=0)[0]
    ctx, qids = eng.segments(item, item.questions[0])
    ids = ctx + qids
    n = len(ids)
    out["tokens"] = n
    out["param_bytes"] = eng.param_bytes
    out["mmap_threshold"] = eng.mmap_threshold

    reset_peak()
    t0 = time.perf_counter()
    rt0 = KVRuntime(eng.info.n_layers, eng.info.group_size)
    rt0.queries.prefill_positions = torch.arange(max(0, n - SnapKV.query_window), n)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        last = eng.forward(rt0, ids, 0, last_only=True)[-1]
    out["warnings"] = [str(w.message) for w in caught]
    stage("prefill", t0, kv_bytes=rt0.live_bytes())
    out["kv_bytes_per_token"] = rt0.live_bytes() / n

    reset_peak()
    t0 = time.perf_counter()
    ref = prefill_reference(eng, item, item.questions[:1], rt0, n, True, last, 0.0)
    stage("reference", t0)
    del rt0, last

    reset_peak()
    t0 = time.perf_counter()
    rows, _ = run_prefill_item(eng, item, [MethodRun("snapkv", InProcessMethod(SnapKV(), "snapkv"))], "A",
                               "fraction", [budget], reference=ref)
    row = next(r for r in rows if r.method == "snapkv")
    stage("snapkv", t0, kl=row.kl, score=row.score, error=row.error, kv_bytes=row.kv_bytes,
          compress_s=row.compress_s)
    return out


def exponent(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of log y against log x."""
    lx, ly = [math.log(x) for x in xs], [math.log(max(y, 1.0)) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)


def summarise(results: list[dict]) -> str:
    mib = 1024**2
    lines = ["| context (tokens) | KV cache MiB | " + " | ".join(f"{s} s / peak MiB" for s in STAGES) +
             " | peak / (model + KV) |", "|---" * (len(STAGES) + 3) + "|"]
    for r in results:
        st = r["stages"]
        base = st["load"]["rss_after"]
        kv = st["prefill"]["kv_bytes"]
        peak = max(v["peak_rss"] for k, v in st.items() if k != "load")
        lines.append(f"| {r['tokens']:,} | {kv / mib:.0f} | " +
                     " | ".join(f"{st[s]['seconds']:.1f} / {st[s]['peak_rss'] / mib:.0f}" for s in STAGES) +
                     f" | {peak / (base + kv):.2f} |")
    out = "\n".join(lines)
    if len(results) >= 2:
        xs = [r["tokens"] for r in results]
        above = [max(v["peak_rss"] for k, v in r["stages"].items() if k != "load") - r["stages"]["load"]["rss_after"]
                 for r in results]
        kv_tok = results[-1]["kv_bytes_per_token"]
        slope = (above[-1] - above[0]) / (xs[-1] - xs[0])
        out += (f"\n\nmemory growth exponent (peak above the loaded model, log-log over {len(xs)} lengths): "
                f"{exponent(xs, above):.2f} (target <= 1.2)"
                f"\nmemory per token: {slope / 1024:.1f} KiB against the KV cache's own {kv_tok / 1024:.1f} KiB "
                f"({slope / kv_tok:.2f}x)"
                f"\npeak / (loaded model + KV cache): " +
                ", ".join(f"{r['tokens']:,}: {(a + r['stages']['load']['rss_after']) / (r['stages']['load']['rss_after'] + r['stages']['prefill']['kv_bytes']):.2f}"
                          for r, a in zip(results, above)) + " (target <= 1.5)")
        warned = [r["tokens"] for r in results if r.get("warnings")]
        if warned:
            out += f"\nwarned (longer than the model's trained positions): {', '.join(f'{t:,}' for t in warned)}"
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lengths", type=int, nargs="+", default=[2048, 4096, 8192, 16384])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--budget", type=float, default=0.1)
    p.add_argument("--mmap-threshold", type=int, help="bytes (0: glibc's default; unset: the harness's own)")
    p.add_argument("--json", type=Path, help="write the raw results here")
    p.add_argument("--merge", type=Path, nargs="*", default=[], help="earlier --json results to summarise with")
    p.add_argument("--one", type=int, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.one:
        print(json.dumps(one(a.one, a.threads, a.budget)))
        return 0
    results = [r for f in a.merge for r in json.loads(f.read_text())]
    for length in [x for x in a.lengths if x not in {r["length"] for r in results}]:
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, __file__, "--one", str(length), "--threads", str(a.threads),
                               "--budget", str(a.budget)], capture_output=True, text=True,
                              env={**os.environ, "PYTHONWARNINGS": "ignore",
                                   **({} if a.mmap_threshold is None else
                                      {"REVIEWBENCH_MMAP_THRESHOLD": str(a.mmap_threshold)})})
        if proc.returncode != 0:
            print(f"{length}: failed after {time.perf_counter() - t0:.0f} s: {proc.stderr.strip().splitlines()[-1:]}",
                  file=sys.stderr)
            break
        results.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        print(f"{length}: done in {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    results.sort(key=lambda r: r["length"])
    if a.json:
        a.json.write_text(json.dumps(results, indent=1))
    print(summarise(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
