"""Which lines of each bundle's method.py run on its board's calls: the record the benchmark stage keeps
(``harness.methodhost.LineTrace``), collected for a whole held-out set at once on the dev split.

    python scripts/trace_lines.py --set heldout29 --out lines.json [--items 1]

One harness run per board with every bundle of that board in it (one model load, one full-cache reference), each
method in its own sandbox, as the benchmark runs it. The output maps each case code to its lines (or null where the
method's trace was lost or it did not load) and feeds ``scripts/measure_heldout.py --static --executed``: the
static review then reads the code as it ran. The dev split's items stand in for the test split's here.
"""

from __future__ import annotations

import argparse
import json
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    from harness.evaluate import run
    from harness.loading import code_hash
    from harness.results import RunConfig

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", dest="heldout_set", required=True, help="a folder under calibration/ with blinded/")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--items", type=int, default=1)
    ap.add_argument("--length", type=int, default=None, help="boards A/B: context tokens (default the harness's)")
    args = ap.parse_args()
    folder = ROOT / "calibration" / args.heldout_set / "blinded"
    if not folder.is_dir():
        print(f"error: {folder}: no such folder", file=sys.stderr)
        return 2
    by_board: dict[str, list[Path]] = {}
    for case in sorted(p for p in folder.iterdir() if (p / "meta.toml").is_file()):
        board = tomllib.loads((case / "meta.toml").read_text()).get("board")
        if board:
            by_board.setdefault(str(board), []).append(case)
    out: dict[str, list[int] | None] = {}
    for board, cases in sorted(by_board.items()):
        result = run(RunConfig(board=board, methods=[str(c) for c in cases], items=args.items,
                               length=args.length if board != "C" else None))
        for case in cases:
            name = next((n for n, h in result.code_hashes.items() if h == code_hash(str(case))), None)
            out[case.name] = result.executed_lines.get(name) if name is not None else None
        print(f"{board}: {len(cases)} bundles, {result.environment.seconds:.0f} s", file=sys.stderr)
    args.out.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
