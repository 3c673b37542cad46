"""The leaderboard rendered: terminal tables, flat exports (JSON, CSV, Parquet) and one self-contained HTML page."""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from harness.io import atomic_write_bytes, atomic_write_text
from reviewbench.leaderboard import Leaderboard
from reviewbench.tables import NARROW_BELOW, fold_table, plain

FLAT_COLUMNS = ("board", "id", "kind", "agent", "submitted_at", "overall", "accuracy", "memory", "speed", "overhead",
                "length", "best_before", "best_before_overall", "benchmark_points", "points", "flags")


def _f(v: float | None, spec: str = ".4f") -> str:
    return "–" if v is None else format(v, spec)


def flat_rows(lb: Leaderboard) -> list[dict[str, Any]]:
    """One row per board entry: what analysis tools (pandas, a spreadsheet) want."""
    out = []
    for t in lb.boards:
        for r in t.rows:
            c = r.components
            out.append({"board": t.board, "id": r.id, "kind": r.kind, "agent": r.agent,
                        "submitted_at": r.submitted_at.isoformat() if r.submitted_at else None,
                        "overall": r.overall, "accuracy": c.accuracy if c else None, "memory": c.memory if c else None,
                        "speed": c.speed if c else None, "overhead": c.overhead if c else None,
                        "length": c.length if c else None, "best_before": r.best_before.id if r.best_before else None,
                        "best_before_overall": r.best_before.overall if r.best_before else None,
                        "benchmark_points": r.benchmark_points, "points": r.points, "flags": ",".join(r.flags)})
    return out


def board_export(lb: Leaderboard, fmt: str, out: Path | None) -> None:
    if fmt == "json":
        text = json.dumps(lb.model_dump(mode="json", by_alias=True), indent=2) + "\n"
        atomic_write_text(out, text) if out else sys.stdout.write(text)
    elif fmt == "csv":
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=list(FLAT_COLUMNS))
        w.writeheader()
        w.writerows(flat_rows(lb))
        atomic_write_text(out, buf.getvalue()) if out else sys.stdout.write(buf.getvalue())
    elif fmt == "parquet":
        assert out is not None
        frame = board_frame(lb)
        buf2 = io.BytesIO()
        frame.to_parquet(buf2, index=False)
        atomic_write_bytes(out, buf2.getvalue())


def board_frame(lb: Leaderboard) -> Any:
    """The flat rows as a pandas DataFrame (pandas is the optional ``analysis`` extra)."""
    try:
        import pandas
    except ImportError:
        from reviewbench.errors import UserError

        raise UserError(None, "this needs pandas: pip install 'reviewbench[analysis]'") from None
    frame = pandas.DataFrame(flat_rows(lb), columns=list(FLAT_COLUMNS))
    frame["submitted_at"] = pandas.to_datetime(frame["submitted_at"], utc=True)  # timestamps, not strings
    return frame


def print_board(lb: Leaderboard, console: Console) -> None:
    """Per board a table; below ``NARROW_BELOW`` columns the Overall's components move to a second table so that
    ids, the best before and the flags are never cut (every cell folds; nothing ends in an ellipsis)."""
    wide = console.width >= NARROW_BELOW
    for t in lb.boards:
        unit = "tokens/layer" if t.budget_kind == "tokens" else "keep"
        w = ", ".join(f"{k} {v:g}" for k, v in t.weights.items() if v)
        caption = (f"board best: {t.best.id} {t.best.overall:.4f}" if t.best else "no measured entry") + \
            "".join(f"\n{n}" for n in t.notes)
        title = f"Board {t.board} ({unit} {', '.join(f'{b:g}' for b in t.budgets)}; {w})"
        main = ["entry", "agent", "Overall", *(["acc", "mem", "speed", "ovh"] if wide else []), "best before",
                "bench", "points", "flags"]
        console.print(Text(title, style="bold", overflow="fold"))  # not the table's title: rich crops those
        if not t.rows:
            console.print(Text(caption, overflow="fold"), highlight=False)
            continue
        keep = {"entry": min(24, max(len(r.id) for r in t.rows)), "flags": 14}  # ids and flag names whole
        table = fold_table(*main, caption=caption, min_width=keep, styles={"flags": "bold red"},
                           numeric=("Overall", "acc", "mem", "speed", "ovh", "bench", "points"))
        parts = fold_table("entry", "accuracy", "memory", "speed", "overhead", title=f"Board {t.board}: components",
                           numeric=("accuracy", "memory", "speed", "overhead"), min_width=keep)
        for r in t.rows:
            c = r.components
            comps = [_f(c.accuracy if c else None, ".3f"), _f(c.memory if c else None, ".3f"),
                     _f(c.speed if c else None, ".3f"), _f(c.overhead if c else None, ".3f")]
            table.add_row(*(plain(v) for v in (
                r.id, r.agent or "", _f(r.overall), *(comps if wide else []),
                (f"{r.best_before.id} {r.best_before.overall:.4f}" if wide else r.best_before.id)
                if r.best_before else "",
                _f(r.benchmark_points, "g"), _f(r.points, "g"), ",".join(r.flags))))
            parts.add_row(*(plain(v) for v in (r.id, *comps)))
        console.print(table)
        if not wide:
            console.print(parts)
    if lb.unboarded:
        t2 = fold_table("submission", "agent", "points", "flagged", title="Submissions on no board of this arena",
                        numeric=("points",), styles={"flagged": "bold red"})
        for p in lb.unboarded:
            t2.add_row(*(plain(v) for v in (p.submission, p.agent, f"{p.total:g}", "FLAG" if p.flagged else "")))
        console.print(t2)
    ta = fold_table("agent", "best per board", "board points", "penalties", "total", title="Agents",
                    numeric=("board points", "penalties", "total"))
    for s in lb.agents:
        ta.add_row(*(plain(v) for v in (s.agent, ", ".join(f"{b}: {sid}" for b, sid in s.best_per_board.items()),
                                        f"{s.board_points:g}", f"-{s.penalties:g}" if s.penalties else "0",
                                        f"{s.total:g}")))
    console.print(ta)


def board_html(lb: Leaderboard, review_link: Any = None, extra_nav: str = "") -> str:
    """One self-contained page: per board a table and the Overall-per-budget plot (inline SVG), then the agents."""
    from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

    from reviewbench.plots import board_plot_svg

    env = Environment(loader=PackageLoader("reviewbench", "templates"), undefined=StrictUndefined,
                      autoescape=select_autoescape(enabled_extensions=("html", "j2"), default_for_string=True),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["f4"] = lambda v: "–" if v is None else f"{v:.4f}"
    env.filters["f3"] = lambda v: "–" if v is None else f"{v:.3f}"
    plots = {t.board: board_plot_svg(t) for t in lb.boards}
    return env.get_template("board.html.j2").render(lb=lb, plots=plots, link=review_link or (lambda _id: None),
                                                    extra_nav=extra_nav)


def write_board_html(lb: Leaderboard, out: Path) -> Path:
    return atomic_write_text(out, board_html(lb))
