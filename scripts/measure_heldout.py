"""Review the held-out set (calibration/heldout) offline and score the verdicts against its answer key.

    REVIEWBENCH_OFFLINE=1 nice .venv/bin/python scripts/measure_heldout.py [--panel evidence] [--only h01-001 ...]

Every case goes through the real review stages, as `review calibrate` runs them (bundle, audit, evidence with
behaviour, harness verification of claims, judges, verdict; no benchmark: the cases are on no board), with the
panel of calibration/heldout/panels.toml (`evidence`: the offline default's counted judge alone; `local` adds the
two small LLMs as advisors). The answer key (key.toml) is read only afterwards. Prints one row per case and the
totals the issue asks for: expected flags standing, false flags on honest work, novelty in range, source named
(an accepted arXiv id among the verdict's first three prior works). Stage results are stored in
calibration/heldout/reviews, so a rerun replays them.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from reviewbench.calibrate.command import resolve_panel_specs  # noqa: E402
from reviewbench.calibrate.runner import run_suite  # noqa: E402
from reviewbench.calibrate.suite import Case  # noqa: E402
from reviewbench.judges.panel import default_provider  # noqa: E402

SUITE = ROOT / "calibration" / "heldout"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--panel", default="evidence")
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = ap.parse_args()
    key = tomllib.loads((SUITE / "key.toml").read_text())["cases"]
    if args.only:
        key = [c for c in key if c["code"] in set(args.only)]
    boards = {c["code"]: tomllib.loads((SUITE / "blinded" / c["code"] / "meta.toml").read_text())["board"] for c in key}
    cases = [Case(code=c["code"], kind="port", method="heldout", board=boards[c["code"]]) for c in key]
    specs = resolve_panel_specs(SUITE, args.panel)
    t0 = time.perf_counter()

    def progress(r) -> None:
        print(f"  {r.code} reviewed in {r.seconds:.0f} s: flags {r.panel_flags}, scores {r.panel_scores}",
              file=sys.stderr, flush=True)

    results = {r.code: r for r in run_suite(SUITE, cases, specs, evidence_to_judges=True,
                                            make_provider=default_provider, on_case=progress)}
    rows = []
    for c in key:
        r = results[c["code"]]
        flags = set(r.panel_flags)
        expected, allowed = set(c["expected_flags"]), set(c["allowed_flags"])
        nov = r.panel_scores.get("novelty")
        lo, hi = c["novelty"]
        counted = next((j for j in r.judges if j.role == "primary"), None)
        named = [p.get("arxiv_id") for p in (counted.prior_work if counted else [])[:3]]
        rows.append({"code": c["code"], "kind": c["kind"], "what": c["what"], "flags": sorted(flags),
                     "expected": sorted(expected), "missed": sorted(expected - flags),
                     "false": sorted(flags - expected - allowed), "novelty": nov,
                     "novelty_ok": nov is not None and lo <= nov <= hi, "range": [lo, hi],
                     "source_named": bool(set(c.get("accept_arxiv", [])) & set(named)) if c.get("accept_arxiv")
                     else None, "errors": r.stage_errors})
    print("| case | kind | flags standing | expected | novelty (range) | source named |")
    print("|---|---|---|---|---|---|")
    for x in rows:
        print(f"| {x['code']} | {x['kind']} | {', '.join(x['flags']) or '—'} | {', '.join(x['expected']) or '—'}"
              f"{' (missed: ' + ', '.join(x['missed']) + ')' if x['missed'] else ''}"
              f"{' FALSE: ' + ', '.join(x['false']) if x['false'] else ''} | {x['novelty']} ({x['range'][0]}-"
              f"{x['range'][1]}){'' if x['novelty_ok'] else ' OUT'} | "
              f"{'—' if x['source_named'] is None else 'yes' if x['source_named'] else 'no'} |")
    want = sum(len(x["expected"]) for x in rows)
    stood = sum(len(x["expected"]) - len(x["missed"]) for x in rows)
    honest = [x for x in rows if x["kind"] != "cheat"]
    false_honest = sum(bool(x["flags"]) for x in honest)
    false_any = sum(len(x["false"]) for x in rows)
    in_range = sum(x["novelty_ok"] for x in rows)
    sourced = [x for x in rows if x["source_named"] is not None]
    print(f"\nexpected flags standing: {stood}/{want} ({stood / max(1, want):.0%}); honest or credited cases with a "
          f"flag: {false_honest}/{len(honest)}; flags neither expected nor allowed: {false_any}; novelty in range: "
          f"{in_range}/{len(rows)} ({in_range / max(1, len(rows)):.0%}); source named in the first three: "
          f"{sum(x['source_named'] for x in sourced)}/{len(sourced)}; {time.perf_counter() - t0:.0f} s, panel "
          f"{args.panel}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
