"""Measure the behavioural fingerprint: which baseline family each held-out method lands on, and how close.

    .venv/bin/python scripts/measure_behaviour.py [--json OUT.json] [--only SUBSTRING ...]

Runs (or reads from the cache) every baseline's hyper-parameter family on the bank, then
1. the disguised ports of public code (calibration/ports, ports.toml says what each is),
2. the blinded calibration baselines (calibration/blinded, the answer key says what each is built from),
3. the honest example submissions (examples/arena/submit),
each in its own sandbox, and prints a Markdown table per group: the top family and its best member, Jaccard and
rank correlation, the best wrong family (for ports and blinded baselines) and the probes' summary. Candidates run
in small batches, so an interrupted run keeps what it cached.
"""

from __future__ import annotations

import argparse
import json
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.fingerprint_grid import BASELINES, FAMILIES  # noqa: E402
from reviewbench.evidence.behaviour import all_members, candidate_probes, compare, fingerprints  # noqa: E402

PORTS = ROOT / "calibration" / "ports"
BLINDED = ROOT / "calibration" / "blinded"
EXAMPLES = ROOT / "examples" / "arena" / "submit"
SAME_CODE = {"snapkv_qa": "snapkv"}  # query-agnostic SnapKV is SnapKV's code: on the bank the two are one method


def cases() -> list[tuple[str, str, str, str | None]]:
    """(group, label, spec, expected baseline or None for honest methods)."""
    out: list[tuple[str, str, str, str | None]] = []
    for p in tomllib.loads((PORTS / "ports.toml").read_text())["ports"]:
        out.append(("ports", p["file"], str(PORTS / p["file"]), p["baseline"]))
    key = tomllib.loads((ROOT / "calibration" / "answer_key.toml").read_text())["cases"]
    for c in key:
        out.append(("blinded", c["code"], str(BLINDED / c["code"]), SAME_CODE.get(c["method"], c["method"])))
    for d in sorted(EXAMPLES.iterdir()):
        if (d / "method.py").is_file():
            out.append(("examples", d.name, str(d), None))
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", type=Path)
    ap.add_argument("--only", nargs="*", default=[])
    ap.add_argument("--batch", type=int, default=4)
    args = ap.parse_args()
    todo = [c for c in cases() if not args.only or any(s in c[1] for s in args.only)]
    members = all_members()
    base = fingerprints(members)
    if base["errors"]:
        print("baseline errors:", base["errors"], file=sys.stderr)
    kept, probes, errors = dict(base["kept"]), dict(base["probes"]), dict(base["errors"])
    specs = [c[2] for c in todo]
    for i in range(0, len(specs), args.batch):
        got = fingerprints(specs[i: i + args.batch])
        kept |= got["kept"]
        probes |= got["probes"]
        errors |= got["errors"]
        print(f"ran {min(i + args.batch, len(specs))}/{len(specs)}", file=sys.stderr, flush=True)
    result = {**base, "kept": kept, "probes": probes}
    refs = {f"baseline:{b}": list(FAMILIES[b]) for b in BASELINES}
    rows = []
    for group, label, spec, expected in todo:
        if spec not in kept:
            rows.append({"group": group, "label": label, "expected": expected, "error": errors.get(spec, "?")})
            continue
        matches = compare(result, spec, refs)
        top = matches[0]
        wrong = next((m for m in matches if m.reference != f"baseline:{expected}"), None)
        right = next((m for m in matches if m.reference == f"baseline:{expected}"), None)
        pr = candidate_probes(result, spec)
        rows.append({"group": group, "label": label, "expected": expected, "top": top.reference, "member": top.member,
                     "jaccard": top.jaccard, "rank_corr": top.rank_corr, "by_budget": top.jaccard_by_budget,
                     "basis": top.basis, "right_jaccard": right.jaccard if right else None,
                     "right_member": right.member if right else None,
                     "wrong": wrong.reference if wrong else None, "wrong_jaccard": wrong.jaccard if wrong else None,
                     "wrong_member": wrong.member if wrong else None,
                     "probes": pr.model_dump() if pr else None,
                     "all": [(m.reference, m.jaccard, m.rank_corr, m.member) for m in matches]})
    for group in ("ports", "blinded", "examples"):
        sel = [r for r in rows if r["group"] == group]
        if not sel:
            continue
        print(f"\n### {group}\n")
        print("| method | expected | top match (best member) | Jaccard | rank | by budget | next family | Jaccard | probes |")
        print("|---|---|---|---|---|---|---|---|---|")
        for r in sel:
            if "error" in r:
                print(f"| {r['label']} | {r['expected']} | ERROR {r['error'][:80]} |||||||")
                continue
            ok = "" if r["expected"] is None else (" ✓" if r["top"] == f"baseline:{r['expected']}" else " ✗")
            nxt = r["all"][1] if r["expected"] is None or r["top"] == f"baseline:{r['expected']}" else \
                (r["wrong"], r["wrong_jaccard"], 0, r["wrong_member"])
            if r["expected"] is None:
                nxt = r["all"][1]
            print(f"| {r['label']} | {r['expected'] or '-'} | {r['top'].removeprefix('baseline:')}{ok} "
                  f"(`{r['member']}`) | {r['jaccard']:.3f} | {r['rank_corr']:.2f} | "
                  f"{' '.join(f'{x:.2f}' for x in r['by_budget'])} | {nxt[0].removeprefix('baseline:')} | "
                  f"{nxt[1]:.3f} | {r['probes']['summary'] if r['probes'] else '-'} |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
