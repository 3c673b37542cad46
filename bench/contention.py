"""Decode throughput beside a busy neighbour, by OpenMP wait policy (run by hand; issue 26).

    .venv/bin/python bench/contention.py                    # 150 tokens after a 512-token prompt, 2 threads
    .venv/bin/python bench/contention.py --tokens 20 --context 64 --rounds 1

Board C decodes one token at a time, so each forward pass is many small parallel regions that end at a
barrier. With OpenMP's default (threads spin at the barrier) a second CPU-bound process of the same size
leaves every barrier waiting for a thread that the scheduler has parked behind a spinning one. For each policy
(ACTIVE: spin, PASSIVE: sleep) this runs the same decode loop on the embedded model alone, then as N copies at
once (the neighbour is the same job), each in a fresh process, and prints tokens per second, the slowdown beside
the neighbour and the ratio of the two policies. The harness sets PASSIVE (harness.sandbox.thread_env).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

DECODE = r"""
import sys, time, torch
sys.path.insert(0, sys.argv[1])
from harness.model import load_model
context, tokens = int(sys.argv[2]), int(sys.argv[3])
lm = load_model().model
torch.manual_seed(0)
ids = torch.randint(0, 1000, (1, context))
with torch.no_grad():
    pkv = lm(ids, use_cache=True).past_key_values
    tok = ids[:, -1:]
    t = time.perf_counter()
    for _ in range(tokens):
        pkv = lm(tok, past_key_values=pkv, use_cache=True).past_key_values
    print(tokens / (time.perf_counter() - t))
"""


def decode_rates(policy: str, copies: int, threads: int, context: int, tokens: int) -> list[float]:
    """Tokens per second of each of ``copies`` decode loops started together."""
    env = {**os.environ, "OMP_WAIT_POLICY": policy, "OMP_NUM_THREADS": str(threads), "PYTHONWARNINGS": "ignore"}
    procs = [subprocess.Popen([sys.executable, "-c", DECODE, str(ROOT), str(context), str(tokens)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) for _ in range(copies)]
    rates = []
    for p in procs:
        out, _ = p.communicate(timeout=3600)
        if p.returncode != 0:
            raise SystemExit(f"error: the decode loop exited {p.returncode} (policy {policy})")
        rates.append(float(out.strip().splitlines()[-1]))
    return rates


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--context", type=int, default=512, help="prompt tokens before decoding (default 512)")
    ap.add_argument("--tokens", type=int, default=150, help="tokens decoded per loop (default 150)")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="threads per process (default: cores)")
    ap.add_argument("--copies", type=int, default=2, help="processes sharing the machine (default 2)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds, policies interleaved A B B A (default 3)")
    a = ap.parse_args()
    alone: dict[str, list[float]] = {"ACTIVE": [], "PASSIVE": []}
    busy: dict[str, list[float]] = {"ACTIVE": [], "PASSIVE": []}
    for r in range(a.rounds):
        order = ("ACTIVE", "PASSIVE") if r % 2 == 0 else ("PASSIVE", "ACTIVE")
        for policy in order:
            alone[policy] += decode_rates(policy, 1, a.threads, a.context, a.tokens)
            busy[policy] += decode_rates(policy, a.copies, a.threads, a.context, a.tokens)
    print(f"decode, {a.context}-token prompt, {a.tokens} tokens, {a.threads} threads per process, "
          f"{a.copies} copies beside each other, {a.rounds} rounds (medians, tok/s per process)")
    print("| policy | alone | beside the neighbour | slowdown |")
    print("|---|---|---|---|")
    med = {p: (statistics.median(alone[p]), statistics.median(busy[p])) for p in alone}
    for p, (al, bu) in med.items():
        print(f"| {p} | {al:.1f} | {bu:.1f} | {al / bu:.2f}x |")
    print(f"PASSIVE / ACTIVE: alone {med['PASSIVE'][0] / med['ACTIVE'][0]:.2f}x, "
          f"beside the neighbour {med['PASSIVE'][1] / med['ACTIVE'][1]:.2f}x (above 1: PASSIVE is faster)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
