"""The benchmark stage's cost, measured against references taken in the same run (by hand; minutes on 2 cores).

1. overhead: the stage (``review SUB --only bundle,benchmark``: bundle checks, split manifest, trusted worker, a
   sandboxed method, typed result, store) vs ``review harness run SUB --split test --data ...`` on the same items
   with the same settings — both from scratch, no shared reference;
2. the shared full-cache reference: a second submission's stage with the reference already computed vs the same
   stage with the reference removed;
3. reproducibility: the Overall of the first submission measured twice from scratch.

    .venv/bin/python bench/benchmark_stage.py [--board A] [--items 4] [--length 1024]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARENA = ROOT / "examples" / "arena"


def sh(args: list[str], cwd: Path) -> float:
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "reviewbench", *args], cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed: {r.stderr[-2000:]}")
    return time.perf_counter() - t0


def fresh_arena(tmp: Path, name: str, board: str, items: int, length: int, split_from: Path | None) -> Path:
    dst = tmp / name
    shutil.copytree(ARENA, dst, ignore=shutil.ignore_patterns("reviews", "benchmark", "test"))
    toml = dst / "arena.toml"
    text = toml.read_text()
    start = text.index(f'name = "{board}"')
    end = text.find("[[boards]]", start)
    block = text[start:end if end > 0 else len(text)]
    new = "\n".join(l for l in block.splitlines() if not l.startswith(("bars =", "items =", "length ="))) + \
        f"\nitems = {items}\nlength = {length}\n\n"
    toml.write_text(text[:start] + new + (text[end:] if end > 0 else ""))
    if split_from is None:
        sh(["harness", "split", "--arena", str(dst), "--board", board, "--items", str(items)], dst)
    else:
        shutil.copytree(split_from, dst / "data" / "test" / board)
    return dst


def overall(arena: Path, sub: str, board: str) -> float:
    sys.path.insert(0, str(ROOT))
    from reviewbench.arena import load_arena
    from reviewbench.stages.benchmark import BenchmarkData
    from reviewbench.stages.standing import measure_benchmark

    rep = json.loads((arena / "reviews" / sub / "partial" / "review.json").read_text())
    data = BenchmarkData.model_validate(next(s for s in rep["stages"] if s["name"] == "benchmark")["data"])
    return measure_benchmark(data, load_arena(arena).config.board(board)).overall


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--board", default="A")
    p.add_argument("--items", type=int, default=4)
    p.add_argument("--length", type=int, default=1024)
    p.add_argument("--first", default="agent2-002", help="a submission on the board")
    p.add_argument("--second", default="agent1-002", help="another submission on the board")
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        one = fresh_arena(tmp, "one", a.board, a.items, a.length, None)
        split = one / "data" / "test" / a.board
        two = fresh_arena(tmp, "two", a.board, a.items, a.length, split)
        toml = (one / "arena.toml").read_text()
        budgets = toml[toml.index(f'name = "{a.board}"'):].split("budgets = [", 1)[1].split("]", 1)[0].replace(" ", "")
        board_kind = {"A": "A", "B_online": "B_online", "B_offline": "B_offline", "C": "C"}.get(a.board, "A")
        t_run = sh(["harness", "run", str(one / "submit" / a.first), "--board", board_kind, "--split", "test",
                    "--data", str(split), "--items", str(a.items), "--length", str(a.length), "--budgets", budgets,
                    "--json"], one)
        t_stage = sh([f"submit/{a.first}", "--only", "bundle,benchmark"], one)
        t_second_ref = sh([f"submit/{a.second}", "--only", "bundle,benchmark"], one)
        t_second_noref = sh([f"submit/{a.second}", "--only", "bundle,benchmark"], two)  # arena two: no reference
        t_again = sh([f"submit/{a.first}", "--only", "bundle,benchmark"], two)
        o1, o2 = overall(one, a.first, a.board), overall(two, a.first, a.board)
    print(f"board {a.board}, {a.items} items x {a.length} tokens, budgets {budgets}")
    print(f"benchmark stage (from scratch)        {t_stage:7.1f} s")
    print(f"review harness run (same items)       {t_run:7.1f} s   stage / run = {t_stage / t_run:.2f}x")
    print(f"2nd submission, shared reference      {t_second_ref:7.1f} s")
    print(f"2nd submission, reference recomputed  {t_second_noref:7.1f} s   saved {t_second_noref - t_second_ref:.1f} s "
          f"({1 - t_second_ref / t_second_noref:.0%})")
    print(f"Overall of {a.first}, two measurements from scratch: {o1:.4f} and {o2:.4f} (|diff| {abs(o1 - o2):.4f}; "
          f"the gate's margin is 0.005); second run {t_again:.1f} s")


if __name__ == "__main__":
    main()
