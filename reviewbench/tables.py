"""Terminal tables that stay readable at 80 columns and under NO_COLOR.

Rich cuts a cell that does not fit with an ellipsis by default, which turned the audit's proof (a file:line, a
command) into ``network.js…``. Every column here folds instead, and a table too wide for the terminal is printed
as one record per row (a heading line, then ``label: value`` lines wrapped under it), so nothing is ever cut.
Cell text is printed as plain text: logs and submissions are hostile, so no rich markup is interpreted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich import box
from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

NARROW_BELOW = 110  # columns: below this, wide tables print as records


def fold_table(*headers: str, title: str | None = None, caption: str | None = None,
               numeric: Sequence[str] = (), min_width: Mapping[str, int] | None = None,
               styles: Mapping[str, str] | None = None) -> Table:
    """A table whose every column wraps (folds) long cells instead of cutting them; ``min_width`` keeps the
    columns people search by (ids, flags) whole where the terminal allows."""
    t = Table(title=title, caption=caption, caption_justify="left", title_justify="left", box=box.SIMPLE_HEAD,
              show_edge=False, pad_edge=False, collapse_padding=True, padding=(0, 1))
    for h in headers:
        t.add_column(h, overflow="fold", justify="right" if h in numeric else "left",
                     min_width=(min_width or {}).get(h), style=(styles or {}).get(h))
    return t


def plain(value: object) -> Text:
    """A cell printed verbatim (no markup, no highlighting), folded when it does not fit."""
    return Text("" if value is None else str(value), overflow="fold")


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
