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

FLAT_COLUMNS = ("board", "rank", "id", "kind", "agent", "submitted_at", "overall", "accuracy", "memory", "speed",
                "overhead", "length", "best_before", "best_before_overall", "benchmark_points", "points", "flags")
#: the flat columns that hold numbers (float64 in a DataFrame and in Parquet, whatever rows a board has)
NUMBER_COLUMNS = ["overall", "accuracy", "memory", "speed", "overhead", "length", "best_before_overall",
                  "benchmark_points", "points"]


def _f(v: float | None, spec: str = ".4f") -> str:
    return "–" if v is None else format(v, spec)


def flat_rows(lb: Leaderboard) -> list[dict[str, Any]]:
    """One row per board entry: what analysis tools (pandas, a spreadsheet) want."""
    out = []
    for t in lb.boards:
        for r in t.rows:
            c = r.components
            out.append({"board": t.board, "rank": r.rank, "id": r.id, "kind": r.kind, "agent": r.agent,
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


def numeric(frame: Any, floats: list[str], ints: tuple[str, ...] = ()) -> Any:
    """Number columns as numbers: float64 (a missing value is NaN) and nullable Int64, never ``object`` (a column
    whose rows are all None, e.g. the points of a board that has only baselines, would otherwise be one, and
    Parquet would store it as nulls of no type)."""
    import pandas

    for c in floats:
        if c in frame.columns:
            frame[c] = pandas.to_numeric(frame[c], errors="coerce").astype("float64")
    for c in ints:
        if c in frame.columns:
            frame[c] = pandas.to_numeric(frame[c], errors="coerce").astype("Int64")
    return frame


def board_frame(lb: Leaderboard) -> Any:
    """The flat rows as a pandas DataFrame (pandas is the optional ``analysis`` extra)."""
    try:
        import pandas
    except ImportError:
        from reviewbench.errors import UserError

        raise UserError(None, "this needs pandas: pip install 'reviewbench[analysis]'") from None
    frame = pandas.DataFrame(flat_rows(lb), columns=list(FLAT_COLUMNS))
    frame["submitted_at"] = pandas.to_datetime(frame["submitted_at"], utc=True)  # timestamps, not strings
    return numeric(frame, NUMBER_COLUMNS, ints=("rank",))


def print_board(lb: Leaderboard, console: Console) -> None:
    """Per board a table ranked by Overall. The rank, entry, Overall, points and flags come first, so they stay on
    screen at any width; below ``NARROW_BELOW`` columns the Overall's components move to a second table (every
    cell folds; nothing ends in an ellipsis). A board whose Overall has a length term shows it as a column."""
    wide = console.width >= NARROW_BELOW
    for t in lb.boards:
        unit = "tokens/layer" if t.budget_kind == "tokens" else "keep"
        w = ", ".join(f"{k} {v:g}" for k, v in t.weights.items() if v)
        caption = (f"board best: {t.best.id} {t.best.overall:.4f}" if t.best else "no measured entry") + \
            "".join(f"\n{n}" for n in t.notes)
        title = f"Board {t.board} ({unit} {', '.join(f'{b:g}' for b in t.budgets)}; {w})"
        length = bool(t.weights.get("length"))
        short = ["acc", "mem", "speed", "ovh", *(["len"] if length else [])]
        long = ["accuracy", "memory", "speed", "overhead", *(["length"] if length else [])]
        # narrow: the agent (the entry id starts with it) and the components go to the second table
        main = ["#", "entry", "Overall", "points", "flags", *(["agent"] if wide else []), "bench", "best before",
                *(short if wide else [])]
        console.print(Text(title, style="bold", overflow="fold"))  # not the table's title: rich crops those
        if not t.rows:
            console.print(Text(caption, overflow="fold"), highlight=False)
            continue
        keep = {"entry": min(24, max(len(r.id) for r in t.rows)), "flags": 14}  # ids and flag names whole
        table = fold_table(*main, caption=caption, min_width=keep, styles={"flags": "bold red"},
                           numeric=("#", "Overall", "points", "bench", *short))
        parts = fold_table("#", "entry", "agent", *long, title=f"Board {t.board}: components",
                           numeric=("#", *long), min_width=keep)
        for r in t.rows:
            c = r.components
            comps = [_f(c.accuracy if c else None, ".3f"), _f(c.memory if c else None, ".3f"),
                     _f(c.speed if c else None, ".3f"), _f(c.overhead if c else None, ".3f"),
                     *([_f(c.length if c else None, ".3f")] if length else [])]
            rank = "" if r.rank is None else str(r.rank)
            table.add_row(*(plain(v) for v in (
                rank, r.id, _f(r.overall), _f(r.points, "g"), ",".join(r.flags), *([r.agent or ""] if wide else []),
                _f(r.benchmark_points, "g"),
                (f"{r.best_before.id} {r.best_before.overall:.4f}" if wide else r.best_before.id)
                if r.best_before else "", *(comps if wide else []))))
            parts.add_row(*(plain(v) for v in (rank, r.id, r.agent or "", *comps)))
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
