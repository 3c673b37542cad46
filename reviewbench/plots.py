"""Plots where people would rather look than read: the submission against its board's baselines and earlier
submissions across budgets (Overall per budget), as inline SVG for the self-contained HTML pages."""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reviewbench.leaderboard import BoardTable
    from reviewbench.report import ReviewReport


def _svg(fig: Any) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    text = buf.getvalue()
    return text[text.find("<svg"):]


def _axes(budget_kind: str, size: tuple[float, float] = (6.4, 3.6)) -> tuple[Any, Any]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    fig, ax = plt.subplots(figsize=size, dpi=100)
    ax.set_xscale("log")
    fmt = (lambda v, _: f"{v:,.0f}") if budget_kind == "tokens" else (lambda v, _: f"{100 * v:g} %")
    ax.xaxis.set_major_formatter(FuncFormatter(fmt))
    ax.xaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
    ax.set_xlabel("tokens per layer (cap)" if budget_kind == "tokens" else "share of the KV cache kept")
    ax.set_ylabel("Overall (vs the full cache)")
    ax.grid(alpha=0.3)
    return fig, ax


def _series(ax: Any, label: str, per_budget: dict[str, float], **style: Any) -> list[float]:
    pts = sorted((float(b), v) for b, v in per_budget.items())
    if pts:
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label, **style)
    return [p[0] for p in pts]


def review_plot_svg(report: "ReviewReport", others: list["BudgetSeries"] | None = None) -> str:
    """The submission's Overall per budget, with its CI band, beside everything it was compared with (with their
    bands when ``others`` has them, as the site does; else their means); empty without a measurement."""
    p = report.points
    if p is None or p.measurement is None:
        return ""
    from reviewbench.bars import free_generation

    m, data = p.measurement, report.benchmark
    kind = "tokens" if any(b.budget > 1 for b in m.per_budget) else "fraction"
    budgets = [b.budget for b in m.per_budget]
    if data is not None:
        mine = budget_series(report.submission.id, "submission", data.method, data.rows, data.full, m.weights,
                             data.model.param_bytes, budgets, free_generation(data.full, data.harness_board))
    else:  # no rows kept: the means alone, a zero-width band
        vals = [b.overall for b in m.per_budget]
        mine = BudgetSeries(report.submission.id, "submission", budgets, vals, vals, vals, m.n_items)
    known = {s.label for s in others or []}
    rest = {k.removeprefix("baseline:"): v for k, v in p.compared.items() if k.removeprefix("baseline:") not in known}
    return bands_svg(f"Board {report.submission.board or ''}: Overall per budget on the hidden test split",
                     kind, [mine, *(others or [])], highlight=report.submission.id, means_only=rest)


def board_plot_svg(table: "BoardTable") -> str:
    """Every entry of a board, Overall per budget (the leaderboard's accuracy-vs-budget picture)."""
    rows = [r for r in table.rows if r.per_budget]
    if not rows:
        return ""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator

    fig, ax = _axes(table.budget_kind)
    for r in rows:
        style: dict[str, Any] = {"alpha": 0.6, "linewidth": 1, "linestyle": "--"} if r.kind == "baseline" else \
            {"linewidth": 2}
        _series(ax, r.id.removeprefix("baseline:"), r.per_budget, **style)
    ax.xaxis.set_major_locator(FixedLocator(sorted(table.budgets)))
    ax.set_title(f"Board {table.board}: Overall per budget (dashed: baselines)")
    ax.legend(fontsize=7, ncol=2)
    out = _svg(fig)
    plt.close(fig)
    return out


# --- Overall per budget with bootstrap CI bands (the site; a review's own band) ------------------------------------
@dataclass(frozen=True)
class BudgetSeries:
    """One entry's Overall at each budget, with a 95 % bootstrap CI over the items measured at that budget."""

    label: str
    kind: str  # "baseline" | "submission"
    budgets: list[float]
    overall: list[float]
    lo: list[float]
    hi: list[float]
    n_items: int


def bootstrap_ci(values: list[float], level: float = 0.95, resamples: int = 2000, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean (:func:`reviewbench.points.mean_ci`, the gate's own bootstrap); one
    value or no spread gives (mean, mean)."""
    from reviewbench.points import mean_ci

    if len(values) < 2 or min(values) == max(values):
        m = sum(values) / len(values) if values else float("nan")
        return m, m
    _, lo, hi = mean_ci(values, resamples, level, seed)
    return lo, hi


def budget_series(label: str, kind: str, method: str, rows: list[Any], full: list[Any], weights: Any,
                  param_bytes: int, budgets: list[float], free_generation: bool) -> BudgetSeries:
    """The entry's Overall at each budget, as the mean over items (the board's Overall averages items the same
    way), and a bootstrap band over those per-item values: measured once per budget with that budget alone."""
    from statistics import fmean

    from reviewbench.overall import measure

    out: dict[str, list[float]] = {"overall": [], "lo": [], "hi": []}
    n_items = 0
    for b in budgets:
        items = list(measure(method, rows, full, weights, param_bytes, [b], free_generation).item_overall.values())
        n_items = max(n_items, len(items))
        mean = fmean(items) if items else 0.0
        lo, hi = bootstrap_ci(items)
        out["overall"].append(mean)
        out["lo"].append(lo)
        out["hi"].append(hi)
    return BudgetSeries(label=label, kind=kind, budgets=list(budgets), n_items=n_items, **out)


def _label(text: str) -> str:
    return text.replace("$", r"\$")  # matplotlib reads $...$ as mathtext: labels are plain text


def bands_svg(title: str, budget_kind: str, series: list[BudgetSeries], highlight: str | None = None,
              means_only: dict[str, dict[str, float]] | None = None, size: tuple[float, float] = (6.4, 3.6)) -> str:
    """Overall per budget, one line per entry with its 95 % CI band; budgets in percent of the cache (or tokens
    per layer). ``highlight`` is drawn black and on top; ``means_only`` adds entries known only by their means."""
    if not series and not means_only:
        return ""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator

    fig, ax = _axes(budget_kind, size)
    xs: set[float] = set()
    for s in sorted(series, key=lambda s: (s.label == highlight, s.kind != "baseline", s.label)):
        mine = s.label == highlight
        style: dict[str, Any] = ({"color": "black", "linewidth": 2.5, "zorder": 5} if mine else
                                 {"linestyle": "--", "linewidth": 1, "alpha": 0.8} if s.kind == "baseline" else
                                 {"linewidth": 1.8})
        (line,) = ax.plot(s.budgets, s.overall, marker="o", label=_label(s.label + (" (this)" if mine else "")),
                          **style)
        ax.fill_between(s.budgets, s.lo, s.hi, color=line.get_color(), alpha=0.18 if mine else 0.10, linewidth=0)
        xs |= set(s.budgets)
    for name, per in sorted((means_only or {}).items()):
        xs |= set(_series(ax, _label(name), per, alpha=0.55, linewidth=1, linestyle=":"))
    ax.xaxis.set_major_locator(FixedLocator(sorted(xs)))
    ax.set_title(_label(title), fontsize=10)
    ax.legend(fontsize=7, title="bands: 95 % bootstrap\nCI over items", title_fontsize=7, loc="upper left",
              bbox_to_anchor=(1.01, 1.0), borderaxespad=0)  # beside the axes: the lines stay visible
    out = _svg(fig)
    plt.close(fig)
    return out
