"""Review the held-out set (calibration/heldout) offline and score the verdicts against its answer key.

    REVIEWBENCH_OFFLINE=1 nice .venv/bin/python scripts/measure_heldout.py [--set heldout2] [--panel evidence]
        [--only h01-001 ...]

Every case goes through the real review stages, as `review calibrate` runs them (bundle, audit, evidence with
behaviour, harness verification of claims, judges, verdict; the benchmark only with ``--benchmark``), with the
panel of calibration/heldout/panels.toml (`evidence`: the offline default's counted judge alone; `local` adds the
two small LLMs as advisors). The answer key (key.toml) is read only afterwards. Prints one row per case and the
totals the issue asks for: expected flags standing, false flags on honest work, novelty in range, source named
(an accepted arXiv id among the verdict's first three prior works). Stage results are stored in
calibration/<set>/reviews, so a rerun replays them. ``--set`` picks the held-out set: ``heldout`` (set 1) or
``heldout2`` (set 2, written before the changes that followed set 1's measurement) or ``heldout3`` (set 3,
written without reading the detection code) or ``heldout4`` ... (later sets, written the same way, each
measured once; any calibration/heldout* folder with a key.toml).

``--benchmark N`` adds the benchmark stage, as a review runs it: a copy of the set gets a test split of N items per
task for each board its cases are on (`review harness split`; B and C at the example arena's lengths), and each
case is measured on its board there, so the behaviour the evidence compares is the one on the scored calls, with
the bank as a second source (a method that tells them apart shows a divergence).

``--static`` reads the code and the description only (code similarity, retrieval by computation, the stated
mechanism, citations offline; no sandbox: no behaviour bank, no claim re-runs, no audit) in seconds, for this set
or (``--suite calibration``) the calibration suite scored by its answer key: novelty <= 1 expected for the blinded
baselines and ports, the planted flags that the code and description can show.
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
from reviewbench.calibrate.static import static_review  # noqa: E402
from reviewbench.calibrate.suite import Case  # noqa: E402
from reviewbench.judges.panel import default_provider  # noqa: E402

SUITE = ROOT / "calibration" / "heldout"


def _static_key(suite: str) -> list[dict]:
    if suite == "heldout":
        return tomllib.loads((SUITE / "key.toml").read_text())["cases"]
    out = []
    for c in tomllib.loads((ROOT / "calibration" / "answer_key.toml").read_text())["cases"]:
        baseline = c["kind"] in ("baseline", "port")
        out.append({"code": c["code"], "kind": "cheat" if baseline else "planted", "what": c.get("plant") or c["method"],
                    "accept_arxiv": c.get("accept_arxiv", []), "expected_flags": c.get("expected_flags", []),
                    "allowed_flags": c.get("allowed_flags", []), "novelty": [0, 1] if baseline else [0, 5]})
    return out


def _with_test_splits(suite: Path, boards: list[str], items: int) -> Path:
    """A copy of the set (its reviews left behind) with a hidden test split of ``items`` items per task written for
    each board by ``review harness split``, and the boards set to measure them all: a review's benchmark stage."""
    import re
    import shutil
    import subprocess
    import tempfile

    dst = Path(tempfile.mkdtemp(prefix=f"{suite.name}-bench-")) / suite.name
    shutil.copytree(suite, dst, ignore=shutil.ignore_patterns("reviews"))
    # the example arena's lengths for B and C (1,024 context tokens, 192 trace tokens): minutes, not hours
    lengths = {"B_online": 1024, "B_offline": 1024, "C": 192}

    def board_lines(m: re.Match[str]) -> str:
        extra = f"\nlength = {lengths[m.group(1)]}" if m.group(1) in lengths else ""
        return f"{m.group(0)}\nitems = {items}{extra}"

    toml = dst / "arena.toml"
    text, n = re.subn(r'(?m)^name = "(A|B_online|B_offline|C)"$', board_lines, toml.read_text())
    if n < len(boards):  # (a board whose name line reads otherwise would be measured at its default size)
        raise SystemExit(f"{toml}: found {n} board name lines for the boards {', '.join(boards)}")
    toml.write_text(text)
    for board in boards:
        r = subprocess.run([sys.executable, "-m", "reviewbench", "harness", "split", "--arena", str(dst), "--board",
                            board, "--items", str(items)], capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"{dst}: could not write board {board}'s test split: {r.stderr.strip()[-500:]}")
    print(f"test splits of {items} item(s) per task written into {dst}", file=sys.stderr)
    return dst


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--panel", default="evidence")
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--json", type=Path, default=None, help="also write the rows here")
    ap.add_argument("--static", action="store_true", help="code and description only, no sandbox (seconds)")
    ap.add_argument("--suite", choices=("heldout", "calibration"), default="heldout", help="with --static")
    ap.add_argument("--benchmark", type=int, metavar="ITEMS", default=0,
                    help="also run the benchmark stage, on ITEMS items per task of a test split written for each "
                         "board into a copy of the set (behaviour where the case is scored feeds the evidence)")
    ap.add_argument("--executed", type=Path, default=None,
                    help="with --static: a JSON object of case code -> the lines of its method.py that ran on its "
                         "benchmark calls (scripts/trace_lines.py writes it); the code is read as it ran")
    sets = sorted(p.name for p in (ROOT / "calibration").glob("heldout*") if (p / "key.toml").is_file())
    ap.add_argument("--set", dest="heldout_set", choices=sets, default="heldout",
                    help="which held-out set (calibration/<set>, any folder there with a key.toml)")
    args = ap.parse_args()
    global SUITE
    SUITE = ROOT / "calibration" / args.heldout_set
    key = _static_key(args.suite) if args.static else tomllib.loads((SUITE / "key.toml").read_text())["cases"]
    if args.only:
        key = [c for c in key if c["code"] in set(args.only)]
    t0 = time.perf_counter()
    if args.static:
        folder = (SUITE if args.suite == "heldout" else ROOT / "calibration") / "blinded"
        lines = json.loads(args.executed.read_text()) if args.executed else {}
        got = {c["code"]: static_review(folder / c["code"], executed=lines.get(c["code"])) for c in key}
        return report(key, {k: (r.flags, r.novelty, r.prior_work, []) for k, r in got.items()}, args, t0)
    boards = {c["code"]: tomllib.loads((SUITE / "blinded" / c["code"] / "meta.toml").read_text())["board"] for c in key}
    cases = [Case(code=c["code"], kind="port", method="heldout", board=boards[c["code"]]) for c in key]
    specs = resolve_panel_specs(SUITE, args.panel)
    root = SUITE if not args.benchmark else _with_test_splits(SUITE, sorted(set(boards.values())), args.benchmark)

    def progress(r) -> None:
        print(f"  {r.code} reviewed in {r.seconds:.0f} s: flags {r.panel_flags}, scores {r.panel_scores}",
              file=sys.stderr, flush=True)

    results = {r.code: r for r in run_suite(root, cases, specs, evidence_to_judges=True,
                                            make_provider=default_provider, on_case=progress,
                                            with_benchmark=bool(args.benchmark))}
    got = {}
    for code, r in results.items():
        counted = next((j for j in r.judges if j.role == "primary"), None)
        near = [f"{b['reference']} {b['jaccard']:.2f}" for b in (r.evidence.behaviour if r.evidence else [])[:1]]
        got[code] = (r.panel_flags, r.panel_scores.get("novelty"),
                     [p.get("arxiv_id") for p in (counted.prior_work if counted else [])[:3]],
                     r.stage_errors + [f"nearest by behaviour: {n}" for n in near]
                     + ([f"bank vs scored calls: {r.evidence.divergence}"] if r.evidence and r.evidence.divergence else []))
    return report(key, got, args, t0)


def report(key: list[dict], got: dict, args, t0: float) -> int:
    rows = []
    for c in key:
        flags_, nov, named, errors = got[c["code"]]
        flags = set(flags_)
        expected, allowed = set(c["expected_flags"]), set(c["allowed_flags"])
        lo, hi = c["novelty"]
        rows.append({"code": c["code"], "kind": c["kind"], "what": c["what"], "flags": sorted(flags),
                     "expected": sorted(expected), "missed": sorted(expected - flags),
                     "false": sorted(flags - expected - allowed), "novelty": nov,
                     "novelty_ok": nov is not None and lo <= nov <= hi, "range": [lo, hi],
                     "source_named": bool(set(c.get("accept_arxiv", [])) & set(named)) if c.get("accept_arxiv")
                     else None, "errors": errors})
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
    honest = [x for x in rows if x["kind"] in ("honest", "credited_port")]
    false_honest = sum(bool(x["flags"]) for x in honest)
    false_any = sum(len(x["false"]) for x in rows)
    in_range = sum(x["novelty_ok"] for x in rows)
    sourced = [x for x in rows if x["source_named"] is not None]
    print(f"\nexpected flags standing: {stood}/{want} ({stood / max(1, want):.0%}); honest or credited cases with a "
          f"flag: {false_honest}/{len(honest)}; flags neither expected nor allowed: {false_any}; novelty in range: "
          f"{in_range}/{len(rows)} ({in_range / max(1, len(rows)):.0%}); source named in the first three: "
          f"{sum(x['source_named'] for x in sourced)}/{len(sourced)}; {time.perf_counter() - t0:.0f} s, panel "
          f"{'static (code and description only)' if args.static else args.panel}")
    notes = [f"- {x['code']}: {'; '.join(x['errors'])}" for x in rows if x["errors"]]
    if notes:
        print("\n" + "\n".join(notes))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
