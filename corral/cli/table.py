"""Tables for people, printed whole: no cell is cut or wrapped to fit a terminal, so an id
copied from a table (piped or not) can be pasted into the next command, as with kubectl."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

# rich's box-less table: one space each side of every column.
_PADDING = 2


def natural_width(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> int:
    """The width at which every cell fits on one line (the longest line of a cell, if it has
    several)."""
    from rich.cells import cell_len  # what a character takes on screen (CJK: two)

    widths = [cell_len(c) for c in columns]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], *(cell_len(line) for line in cell.split("\n")))
    return sum(widths) + _PADDING * len(widths)


def print_table(
    columns: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    empty: str = "",
    file: TextIO | None = None,
) -> None:
    """Print a table (bold header on a terminal); ``empty`` is printed when there are no rows."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, header_style="bold")
    for c in columns:
        table.add_column(c, no_wrap=True)
    for r in rows:
        # Text, not markup: a cell such as "ports:[31000-32000]" is data, not a style.
        table.add_row(*(Text(cell) for cell in r))
    width = max(natural_width(columns, rows), len(empty) if not rows else 0)
    console = Console(file=file, width=width, soft_wrap=False)
    console.print(table)
    if not rows and empty:
        console.print(Text(empty))
