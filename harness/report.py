"""Tables and plots of a harness.result/1 document (Markdown, CSV, PNG).

    python -m harness.report RESULT.json        # print the Markdown table
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

BOARD_BASELINES = {  # the published baselines of each board (issue 5's list), plus random; full is always run
    "A": ["snapkv", "pyramidkv", "adakv", "tova", "window", "knorm", "random"],
    "B_online": ["expected_attention", "window", "knorm", "snapkv_qa", "tova", "random"],
    "B_offline": ["kvzip", "expected_attention", "window", "knorm", "snapkv_qa", "random"],
    "C": ["h2o", "tova", "rkv", "window", "knorm", "random"],
}
COLUMNS = ("method", "budget", "normalized_accuracy", "normalized_ci95", "kl", "top1", "eviction_cost",
           "eviction_cost_oracle", "kv_bytes_ratio", "compress_s", "offline_s", "decode_tok_s", "n", "errors")


def _f(v, spec: str) -> str:
    return "–" if v is None else format(v, spec)


def markdown(r: dict) -> str:
    c = r["config"]
    lines = [f"Board {c['board']}, {', '.join(c['tasks'])}, {c['items']} items/task, {c['length']} tokens, "
             f"{r['environment']['sandbox']}, {r['environment']['seconds']:.0f} s",
             "", "| method | keep | norm. accuracy [95% CI] | KL | top-1 | eviction cost (oracle) | KV bytes vs full | "
             "compress s | decode tok/s |", "|---|---|---|---|---|---|---|---|---|"]
    for a in r["aggregates"]:
        if a["task"] != "*":
            continue
        if a["error"]:
            lines.append(f"| {a['method']} | {a['budget']:g} | error: {a['error'][:80]} | | | | | | |")
            continue
        ci = a["normalized_ci95"]
        acc = f"{a['normalized_accuracy']:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "–"
        lines.append(f"| {a['method']} | {a['budget']:g} | {acc} | {_f(a['kl'], '.3f')} | {_f(a['top1'], '.2f')} | "
                     f"{_f(a['eviction_cost'], '.2f')} ({_f(a['eviction_cost_oracle'], '.2f')}) | "
                     f"{_f(a['kv_bytes_ratio'], '.3f')} | {_f(a['compress_s'], '.3f')} | {_f(a['decode_tok_s'], '.1f')} |")
    return "\n".join(lines)


def write_csv(r: dict, path: Path) -> None:
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(COLUMNS)
        for a in r["aggregates"]:
            if a["task"] == "*":
                w.writerow([json.dumps(a[k]) if isinstance(a[k], list) else a[k] for k in COLUMNS])


def plot(r: dict, path: Path) -> None:
    """Normalised accuracy vs budget per method (board C, which has no accuracy: KL to the full cache)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    board = r["config"]["board"]
    metric, label = ("kl", "KL to the full cache (lower is better)") if board == "C" else \
        ("normalized_accuracy", "accuracy / full cache")
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=120)
    methods = sorted({a["method"] for a in r["aggregates"] if a["method"] != "full"})
    for m in methods:
        pts = sorted((a["budget"], a[metric]) for a in r["aggregates"]
                     if a["method"] == m and a["task"] == "*" and a[metric] is not None)
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=m)
    ax.set_xscale("log")
    caps = r["config"].get("c_caps")
    ax.set_xlabel((f"board cap, tokens per layer (run at {caps})" if caps else "tokens kept per layer")
                  if board == "C" else "fraction of the KV cache kept")
    ax.set_ylabel(label)
    ax.set_title(f"Board {board} · {', '.join(r['config']['tasks'])} · {r['config']['items']} items")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def write_all(r: dict, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "result.json", out / "table.md", out / "table.csv", out / "accuracy.png"]
    paths[0].write_text(json.dumps(r, indent=1))
    paths[1].write_text(markdown(r) + "\n")
    write_csv(r, paths[2])
    plot(r, paths[3])
    return paths


if __name__ == "__main__":
    print(markdown(json.load(open(sys.argv[1]))))
