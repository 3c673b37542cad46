"""Terminal tables that stay readable at 80 columns and under NO_COLOR.

Rich cuts a cell that does not fit with an ellipsis by default, which turned the audit's proof (a file:line, a
command) into ``network.js…``. Every column here folds instead, and a table too wide for the terminal is printed
as one record per row (a heading line, then ``label: value`` lines wrapped under it), so nothing is ever cut.
Cell text is printed as plain text: logs and submissions are hostile, so no rich markup is interpreted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich import box
from rich.console import Console, ConsoleOptions, RenderResult
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

NARROW_BELOW = 110  # columns: below this, wide tables print as records


def plain(value: object) -> Text:
    """A cell printed verbatim (no markup, no highlighting), folded when it does not fit."""
    return Text("" if value is None else str(value), overflow="fold")


GAP = 2  # columns between two cells of a fold table (padding and the rule's gap)


def fit_widths(natural: Sequence[int], budget: int, keep: Sequence[int], numeric: Sequence[bool] = ()) -> list[int]:
    """Column widths that sum to at most ``budget``: every column its natural width when they fit; else numbers
    whole, then the columns people search by (``keep`` > 0: ids, flags) up to their keep width, and the others
    share the rest evenly (water-filling: a column narrower than its share leaves the difference to the others),
    giving up the keep widths, then whole numbers, when even that does not fit. Rich's own layout cannot shrink
    a column below its longest word and crops the table's right edge instead; this never crops."""
    n = len(natural)
    if sum(natural) <= budget:
        return list(natural)
    numeric = list(numeric) or [False] * n
    tiers = ([i for i in range(n) if numeric[i]], [i for i in range(n) if keep[i] > 0 and not numeric[i]])
    for fixed_tiers in (tiers, tiers[:1], ()):
        widths = [0] * n
        fixed = {i for tier in fixed_tiers for i in tier}
        for i in fixed:
            widths[i] = min(natural[i], keep[i]) if keep[i] > 0 and not numeric[i] else natural[i]
        rest = sorted((i for i in range(n) if i not in fixed), key=lambda i: natural[i])
        left = budget - sum(widths)
        if rest and left < 4 * len(rest) and fixed_tiers:
            continue  # the fixed columns leave too little for the others: fix fewer
        for k, i in enumerate(rest):
            widths[i] = min(natural[i], max(3, left // (len(rest) - k)))
            left -= widths[i]
        return widths
    return widths


class FoldTable:
    """A table whose cells wrap (fold) and never end in an ellipsis or past the right edge: its column widths are
    fitted to the console when it is printed. Cells are plain text (no markup)."""

    def __init__(self, *headers: str, title: str | None = None, caption: str | None = None,
                 numeric: Sequence[str] = (), min_width: Mapping[str, int] | None = None,
                 styles: Mapping[str, str] | None = None) -> None:
        self.headers, self.title, self.caption = list(headers), title, caption
        self.numeric, self.keep, self.styles = set(numeric), dict(min_width or {}), dict(styles or {})
        self.rows: list[list[str]] = []

    def add_row(self, *cells: object) -> None:
        self.rows.append(["" if c is None else str(c.plain if isinstance(c, Text) else c) for c in cells])

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        natural = [max(max((len(line) for r in self.rows for line in r[i].splitlines()), default=0),
                       max(len(w) for w in h.split())) for i, h in enumerate(self.headers)]
        budget = options.max_width - GAP * (len(self.headers) - 1)
        widths = fit_widths(natural, budget, [self.keep.get(h, 0) for h in self.headers],
                            [h in self.numeric for h in self.headers])
        if self.title:
            yield Text(self.title, style="bold", overflow="fold")
        t = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True, padding=(0, 1))
        for h, w in zip(self.headers, widths):
            t.add_column(h, overflow="fold", width=w, justify="right" if h in self.numeric else "left",
                         style=self.styles.get(h))
        for r in self.rows:
            t.add_row(*(Text(c, overflow="fold") for c in r))
        yield t
        if self.caption:
            yield Text(self.caption, style="dim", overflow="fold")


def fold_table(*headers: str, title: str | None = None, caption: str | None = None,
               numeric: Sequence[str] = (), min_width: Mapping[str, int] | None = None,
               styles: Mapping[str, str] | None = None) -> FoldTable:
    """A FoldTable (kept as a function: the CLI's tables are made with it)."""
    return FoldTable(*headers, title=title, caption=caption, numeric=numeric, min_width=min_width, styles=styles)


def print_rows(console: Console, headers: Sequence[str], rows: Sequence[Sequence[object]], *,
               heading: int = 1, title: str | None = None, caption: str | None = None,
               numeric: Sequence[str] = (), narrow_below: int = NARROW_BELOW) -> None:
    """A table when the terminal is wide enough, else one record per row: the first ``heading`` cells joined on
    a line, every other non-empty cell as ``header: value`` indented under it (wrapped, never cut)."""
    if console.width >= narrow_below:
        t = fold_table(*headers, title=title, caption=caption, numeric=numeric)
        for r in rows:
            t.add_row(*(plain(c) for c in r))
        console.print(t)
        return
    if title:
        console.print(Text(title, style="bold"))
    for r in rows:
        head = "  ".join(str(c) for c in r[:heading] if c not in (None, ""))
        console.print(Text(head, style="bold", overflow="fold"))
        grid = Table.grid(padding=(0, 1))  # label, then the value wrapped under itself (a hanging indent)
        grid.add_column(style="dim", no_wrap=True)
        grid.add_column(overflow="fold")
        for h, c in zip(headers[heading:], r[heading:]):
            if c not in (None, ""):
                grid.add_row(Text(f"{h}:"), plain(c))
        console.print(Padding(grid, (0, 0, 0, 2), expand=False))
    if caption:
        console.print(Text(caption, style="dim", overflow="fold"))
