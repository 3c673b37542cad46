"""Tables and plots of a harness result (Markdown, CSV, PNG).

    python -m harness.report RESULT.json        # print the Markdown table
"""

from __future__ import annotations

import csv
import json
import sys
from dataclasses import asdict
from pathlib import Path

from harness.io import atomic_write, atomic_write_text, read_json, write_json_atomic
from harness.results import Result

BOARD_BASELINES = {  # the published baselines of each board (issue 5's list), plus random; full is always run
    "A": ["snapkv", "pyramidkv", "adakv", "tova", "window", "knorm", "random"],
    "B_online": ["expected_attention", "window", "knorm", "snapkv_qa", "tova", "random"],
    "B_offline": ["kvzip", "expected_attention", "window", "knorm", "snapkv_qa", "random"],
    "C": ["h2o", "tova", "rkv", "window", "knorm", "random"],
}
COLUMNS = ("method", "budget", "normalized_accuracy", "normalized_ci95", "kl", "top1", "eviction_cost",
           "eviction_cost_oracle", "kv_bytes_ratio", "compress_s", "offline_s", "decode_tok_s", "n", "errors")


def _f(v: float | None, spec: str) -> str:
    return "–" if v is None else format(v, spec)


def markdown(r: Result) -> str:
    c = r.config
    lines = [f"Board {c.board}, {', '.join(c.resolved_tasks())}, {c.items} items/task, {c.resolved_length()} tokens, "
             f"{r.environment.sandbox}, {r.environment.seconds:.0f} s",
             "", "| method | keep | norm. accuracy [95% CI] | KL | top-1 | eviction cost (oracle) | KV bytes vs full | "
             "compress s | decode tok/s |", "|---|---|---|---|---|---|---|---|---|"]
    for a in r.aggregates:
        if a.task != "*":
            continue
        if a.error:
            lines.append(f"| {a.method} | {a.budget:g} | error: {a.error[:80]} | | | | | | |")
            continue
        ci = a.normalized_ci95
        acc = f"{a.normalized_accuracy:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]" if ci and a.normalized_accuracy is not None \
            else "–"
        lines.append(f"| {a.method} | {a.budget:g} | {acc} | {_f(a.kl, '.3f')} | {_f(a.top1, '.2f')} | "
                     f"{_f(a.eviction_cost, '.2f')} ({_f(a.eviction_cost_oracle, '.2f')}) | "
                     f"{_f(a.kv_bytes_ratio, '.3f')} | {_f(a.compress_s, '.3f')} | {_f(a.decode_tok_s, '.1f')} |")
    return "\n".join(lines)


def csv_text(r: Result) -> str:
    import io

    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(COLUMNS)
    for a in r.aggregates:
        if a.task == "*":
            d = asdict(a)
            w.writerow([json.dumps(d[k]) if isinstance(d[k], list) else d[k] for k in COLUMNS])
    return buf.getvalue()


def plot(r: Result, path: Path) -> None:
    """Normalised accuracy vs budget per method, with its 95 % bootstrap band (board C, which has no accuracy on
    fidelity items: KL to the full cache). Budgets in percent on A/B, tokens per layer on C."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    board = r.config.board
    metric, label = ("kl", "KL to the full cache (lower is better)") if board == "C" else \
        ("normalized_accuracy", "accuracy / full cache")
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=120)
    budgets: set[float] = set()
    for m in sorted({a.method for a in r.aggregates if a.method != "full"}):
        aggs = sorted((a for a in r.aggregates if a.method == m and a.task == "*" and getattr(a, metric) is not None),
                      key=lambda a: a.budget)
        if not aggs:
            continue
        xs = [a.budget for a in aggs]
        budgets |= set(xs)
        line = ax.plot(xs, [getattr(a, metric) for a in aggs], marker="o", label=m)[0]
        bands = [(a.budget, a.normalized_ci95) for a in aggs if metric == "normalized_accuracy" and a.normalized_ci95]
        if len(bands) == len(aggs):
            ax.fill_between(xs, [b[1][0] for b in bands], [b[1][1] for b in bands], color=line.get_color(), alpha=0.12,
                            linewidth=0)
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(FixedLocator(sorted(budgets)))
    ax.xaxis.set_minor_locator(NullLocator())
    caps = r.caps
    if board == "C":
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
        ax.set_xlabel(f"board cap, tokens per layer (run at {caps})" if caps else "tokens kept per layer")
    else:
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{100 * v:g} %"))
        ax.set_xlabel("share of the KV cache kept")
    ax.set_ylabel(label + ("" if board == "C" else " (band: 95 % bootstrap CI)"))
    ax.set_title(f"Board {board} · {', '.join(r.config.resolved_tasks())} · {r.config.items} items")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    atomic_write(path, lambda fh: fig.savefig(fh, format="png"))
    plt.close(fig)


def write_all(r: Result, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "result.json", out / "table.md", out / "table.csv", out / "accuracy.png"]
    write_json_atomic(paths[0], r.to_json(), indent=1)
    atomic_write_text(paths[1], markdown(r) + "\n")
    atomic_write_text(paths[2], csv_text(r))
    plot(r, paths[3])
    return paths


if __name__ == "__main__":
    print(markdown(Result.from_json(read_json(sys.argv[1]))))
