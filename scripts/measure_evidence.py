"""Measure the code-similarity and prior-art evidence on disguised ports of public code and on the baselines.

    .venv/bin/python scripts/measure_evidence.py [--hybrid]

Prints two Markdown tables:
1. each disguised port of public reference code (calibration/ports, ports.toml says what each was ported
   from and how it was disguised) against every reference (public fingerprints + the harness baselines):
   the true public source's containment / Jaccard / op containment / score, and the same for the best
   reference that implements another baseline;
2. prior-art retrieval from the code alone (no description): whether the right paper is among the first three
   hits, for the harness baselines, the blinded calibration baselines and the disguised ports.
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from reviewbench.evidence.computation import computation  # noqa: E402
from reviewbench.evidence.similarity import baseline_sources, compare, public_references  # noqa: E402
from reviewbench.priorart import load_index  # noqa: E402

PORTS = ROOT / "calibration" / "ports"
# a baseline's reimplementation may rightly be retrieved as the paper it builds on
ACCEPT = {"snapkv_qa": {"SnapKV", "Query-agnostic SnapKV", "KVzip"}}


def ports() -> list[dict]:
    return tomllib.loads((PORTS / "ports.toml").read_text())["ports"]


def similarity_rows() -> list[dict]:
    refs = public_references() | baseline_sources()
    rows = []
    for p in ports():
        ms = compare((PORTS / p["file"]).read_text(), refs, top=len(refs))
        true = next(m for m in ms if m.reference.split("@")[0] == "public:" + p["source"])
        wrong = next(m for m in ms if (m.implements or "") != p["baseline"])
        rows.append({"port": p["file"], "baseline": p["baseline"], "true": true, "wrong": wrong,
                     "top": ms[0].implements, "rank": next(i for i, m in enumerate(ms) if m is true) + 1})
    return rows


def retrieval_rows(hybrid: bool = False) -> list[dict]:
    index = load_index()
    accept = {b: {p.short_name} for b, p in index.baselines().items()} | ACCEPT
    cases = [("harness", label.split(":", 1)[1], src) for label, src in baseline_sources().items()]
    key = tomllib.loads((ROOT / "calibration" / "answer_key.toml").read_text())
    cases += [("blinded", c["method"], (ROOT / "calibration" / "blinded" / c["code"] / "method.py").read_text())
              for c in key["cases"] if c["kind"] == "baseline"]
    cases += [("port", p["baseline"], (PORTS / p["file"]).read_text()) for p in ports()]
    rows = []
    for kind, baseline, src in cases:
        q = computation(src).words()
        hits = (index.search(q, 3) if hybrid else index.bm25(q)[:3]) if q else []
        top3 = [h.paper.short_name for h in hits]
        rows.append({"kind": kind, "baseline": baseline, "top3": top3, "hit": bool(set(top3) & accept[baseline])})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hybrid", action="store_true", help="retrieve with BM25 + embeddings instead of BM25")
    args = ap.parse_args()
    print("| port | baseline | true source: containment / Jaccard / op containment / score | best other baseline "
          "(reference): containment / Jaccard / op containment / score | top-1 baseline |")
    print("|---|---|---|---|---|")
    rows = similarity_rows()
    for r in rows:
        t, w = r["true"], r["wrong"]
        print(f"| {r['port']} | {r['baseline']} | {t.containment:.2f} / {t.jaccard:.2f} / {t.op_containment:.2f} / "
              f"**{t.score:.2f}** | {w.implements or w.reference} (`{w.reference}`): {w.containment:.2f} / "
              f"{w.jaccard:.2f} / {w.op_containment:.2f} / **{w.score:.2f}** | {r['top']} |")
    print(f"\ntop-1 reference implements the right baseline: {sum(r['top'] == r['baseline'] for r in rows)}"
          f"/{len(rows)}; true source scores above the best other baseline: "
          f"{sum(r['true'].score > r['wrong'].score for r in rows)}/{len(rows)}\n")
    rr = retrieval_rows(args.hybrid)
    print("| set | right paper in the top 3 (code query only) | misses |")
    print("|---|---|---|")
    for kind in ("harness", "blinded", "port"):
        sub = [r for r in rr if r["kind"] == kind]
        miss = ", ".join(f"{r['baseline']} -> {r['top3']}" for r in sub if not r["hit"]) or "none"
        print(f"| {kind} | {sum(r['hit'] for r in sub)}/{len(sub)} | {miss} |")


if __name__ == "__main__":
    main()
