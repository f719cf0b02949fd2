"""Tables for people, printed whole: no cell is cut or wrapped to fit a terminal, so an id
copied from a table (piped or not) can be pasted into the next command, as with kubectl."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from rich.console import Console

# rich's box-less table: one space each side of every column.
_PADDING = 2


def _widths(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> list[int]:
    """Each column's width: its longest line of a cell (on screen: CJK takes two)."""
    from rich.cells import cell_len

    widths = [cell_len(c) for c in columns]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], *(cell_len(line) for line in cell.split("\n")))
    return widths


def natural_width(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> int:
    """The width at which every cell fits on one line (the longest line of a cell, if it has
    several)."""
    widths = _widths(columns, rows)
    return sum(widths) + _PADDING * len(widths)


def print_table(
    columns: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    empty: str = "",
    file: TextIO | None = None,
) -> None:
    """Print a table (bold header on a terminal); ``empty`` is printed when there are no rows.

    Rows of printable text are laid out here, as rich lays out a box-less table: rich took
    7.5 s for the 10,000 rows of `corral get agents` with as many unreachable agents kept
    (docs/operations.md, "Nothing kept forever"). Anything else (a tab, a control character)
    goes through rich, which knows how to show it."""
    from rich.console import Console
    from rich.text import Text

    widths = _widths(columns, rows)
    width = max(sum(widths) + _PADDING * len(widths), len(empty) if not rows else 0)
    console = Console(file=file, width=width, soft_wrap=False)
    if not rows or not _plain(columns, rows):
        _print_rich(console, columns, rows, empty)
        return
    console.print(Text(_line(columns, widths), style="bold"))
    out = console.file
    for row in rows:
        cells = [cell.split("\n") for cell in row]
        for k in range(max(len(lines) for lines in cells)):
            out.write(_line([lines[k] if k < len(lines) else "" for lines in cells], widths))
            out.write("\n")
    out.flush()


def _plain(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> bool:
    """Every cell printable text (lines split by newlines)."""
    return all(c.isprintable() for c in columns) and all(
        cell.isprintable() or all(line.isprintable() for line in cell.split("\n"))
        for row in rows
        for cell in row
    )


def _line(cells: Sequence[str], widths: Sequence[int]) -> str:
    """One line of a box-less table: each cell padded to its column, one space each side."""
    from rich.cells import cell_len

    return "".join(
        f" {cell}{' ' * (width - cell_len(cell))} "
        for cell, width in zip(cells, widths, strict=True)
    )


def _print_rich(
    console: Console, columns: Sequence[str], rows: Sequence[Sequence[str]], empty: str
) -> None:
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, header_style="bold")
    for c in columns:
        table.add_column(c, no_wrap=True)
    for r in rows:
        # Text, not markup: a cell such as "ports:[31000-32000]" is data, not a style.
        table.add_row(*(Text(cell) for cell in r))
    console.print(table)
    if not rows and empty:
        console.print(Text(empty))


class TableStream:
    """A table printed a page at a time (`corral get agents` reads the master a page at a time,
    issue #48): the header once, then each page's rows as they come, so the first rows show at
    once and no table of 50,000 rows is held. Columns are as wide as the widest cell seen so
    far: a later, longer cell widens its column from there on (kubectl's chunks do the same).
    A page with a cell that is not printable text goes through ``print_table`` whole."""

    def __init__(self, columns: Sequence[str], *, empty: str = "", file: TextIO | None = None):
        self.columns = list(columns)
        self.empty = empty
        self.file = file
        self.widths: list[int] | None = None

    def add(self, rows: Sequence[Sequence[str]]) -> None:
        from rich.console import Console
        from rich.text import Text

        if not rows:
            return
        if not _plain(self.columns, rows):
            print_table(self.columns, rows, file=self.file)
            return
        widths = _widths(self.columns, rows)
        first = self.widths is None
        self.widths = (
            widths
            if first
            else [max(a, b) for a, b in zip(self.widths or widths, widths, strict=True)]
        )
        console = Console(
            file=self.file, width=sum(self.widths) + _PADDING * len(self.widths), soft_wrap=False
        )
        if first:
            console.print(Text(_line(self.columns, self.widths), style="bold"))
        out = console.file
        for row in rows:
            cells = [cell.split("\n") for cell in row]
            for k in range(max(len(lines) for lines in cells)):
                out.write(
                    _line([lines[k] if k < len(lines) else "" for lines in cells], self.widths)
                )
                out.write("\n")
        out.flush()

    def close(self) -> None:
        """Ends the table: with no rows at all, the header and ``empty``, as print_table."""
        if self.widths is None:
            print_table(self.columns, [], empty=self.empty, file=self.file)
