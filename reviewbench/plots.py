"""Plots where people would rather look than read: the submission against its board's baselines and earlier
submissions across budgets (Overall per budget), as inline SVG for the self-contained HTML pages."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reviewbench.leaderboard import BoardTable
    from reviewbench.report import ReviewReport


def _svg(fig: Any) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    text = buf.getvalue()
    return text[text.find("<svg"):]


def _axes(budget_kind: str) -> tuple[Any, Any]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=100)
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


def review_plot_svg(report: "ReviewReport") -> str:
    """The submission's Overall per budget beside everything it was compared with; empty without a measurement."""
    p = report.points
    if p is None or p.measurement is None:
        return ""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator

    board = report.submission.board or ""
    kind = "tokens" if any(b.budget > 1 for b in p.measurement.per_budget) else "fraction"
    fig, ax = _axes(kind)
    xs: set[float] = set()
    for name, per in sorted(p.compared.items()):
        xs |= set(_series(ax, name.removeprefix("baseline:"), per, alpha=0.55, linewidth=1))
    mine = {f"{b.budget:g}": b.overall for b in p.measurement.per_budget}
    xs |= set(_series(ax, f"{report.submission.id} (this)", mine, color="black", linewidth=2.5))
    ax.xaxis.set_major_locator(FixedLocator(sorted(xs)))
    ax.set_title(f"Board {board}: Overall per budget on the hidden test split")
    ax.legend(fontsize=7, ncol=2)
    out = _svg(fig)
    plt.close(fig)
    return out


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
