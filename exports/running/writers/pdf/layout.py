"""Where things go on a page: sizes, column widths, the orientation, and text cut into lines."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from exports.core.export_type import Column
from exports.running.writers.cells import MAX_COLUMN_WIDTH, display_width

# A4, in points (1/72 inch).
A4 = (595.28, 841.89)
MARGIN = 28.0
FONT_SIZE = 8.0
LINE_HEIGHT = 10.0
PAD_X = 2.5
PAD_Y = 2.0
TITLE_SIZE = 13.0
FOOTER_SIZE = 7.0
# A logo's box at the head of every page: drawn in its proportions, as large as fits.
LOGO_MAX_HEIGHT = 36.0
LOGO_MAX_WIDTH = 160.0
# Room between the logo and what follows it.
LOGO_GAP = 6.0
# One character width of cells.display_width (a wide East Asian character counts two), in points.
CHARACTER = 0.6 * FONT_SIZE
# A cell's text wraps onto at most this many lines; the last one ends with an ellipsis if the
# text goes on (the PDF is for reading: CSV, XLSX and JSON Lines hold every value whole).
MAX_CELL_LINES = 6
ELLIPSIS = "\u2026"


@dataclass(frozen=True)
class PageGeometry:
    """A page's size and its table's columns: their left edges and widths, in points."""

    width: float
    height: float
    lefts: tuple[float, ...]
    widths: tuple[float, ...]

    @property
    def table_right(self) -> float:
        return self.lefts[-1] + self.widths[-1] if self.widths else MARGIN


def character_widths(columns: Sequence[Column], shown_rows: Iterable[Sequence[str]]) -> list[int]:
    """A width per column in characters: what its header and the sampled values need, at most
    XLSX's 60 (or the declared width when that is more); the declared width where the sample
    has no value (an empty column, or no rows)."""
    needed = [_widest_line(column.header) + 1 for column in columns]
    filled = [False] * len(columns)
    for row in shown_rows:
        for index, text in enumerate(row):
            if text:
                filled[index] = True
                if needed[index] < MAX_COLUMN_WIDTH:
                    needed[index] = max(needed[index], _widest_line(text) + 1)
    return [
        min(width, max(MAX_COLUMN_WIDTH, column.width)) if seen else max(width, column.width)
        for width, seen, column in zip(needed, filled, columns, strict=True)
    ]


def _widest_line(text: str) -> int:
    """The display width of ``text``'s widest line (a cell keeps its line breaks)."""
    return max(map(display_width, text.split("\n"))) if "\n" in text else display_width(text)


def geometry(character_widths: Sequence[int]) -> PageGeometry:
    """Portrait when the columns fit across A4, else landscape; when they do not fit across a
    landscape page either, the widest are narrowed to one width (their text wraps more) and the
    narrow ones, numbers and dates mostly, keep theirs."""
    wanted = [width * CHARACTER + 2 * PAD_X for width in character_widths]
    page_width, page_height = A4
    if sum(wanted) > page_width - 2 * MARGIN:
        page_width, page_height = page_height, page_width
    room = page_width - 2 * MARGIN
    if sum(wanted) > room:
        cap = _widest_allowed(wanted, room)
        wanted = [min(width, cap) for width in wanted]
    lefts, left = [], MARGIN
    for width in wanted:
        lefts.append(left)
        left += width
    return PageGeometry(page_width, page_height, tuple(lefts), tuple(wanted))


def _widest_allowed(widths: Sequence[float], room: float) -> float:
    """The width ``cap`` for which the columns, each at most ``cap`` wide, fill ``room``."""
    left = room
    ordered = sorted(widths)
    for index, width in enumerate(ordered):
        share = left / (len(ordered) - index)
        if width > share:
            return share
        left -= width
    return max(ordered, default=room)


def wrap(text: str, advances: dict[str, int], limit: float) -> list[str]:
    """``text`` in lines of at most ``limit`` (1/1000 em), broken at a space where one is in
    reach, else between characters; at most :data:`MAX_CELL_LINES`, the last cut with an
    ellipsis when text is left. Every character of ``text`` and the ellipsis must be in
    ``advances``."""
    lines: list[str] = []
    for paragraph in text.replace("\r\n", "\n").replace("\r", "\n").replace("\t", " ").split("\n"):
        rest = paragraph
        while True:
            if len(lines) == MAX_CELL_LINES:
                return _ended(lines, advances, limit)
            if sum(map(advances.__getitem__, rest)) <= limit:
                lines.append(rest)
                break
            line, rest = _first_line(rest, advances, limit)
            lines.append(line)
    return lines


def _first_line(paragraph: str, advances: dict[str, int], limit: float) -> tuple[str, str]:
    """The first line of a ``paragraph`` wider than ``limit``, and the rest."""
    used, space, end = 0, -1, len(paragraph)
    for index, char in enumerate(paragraph):
        used += advances[char]
        if used > limit:
            end = index
            if char == " ":  # the space that overflows ends the line
                space = index
            break
        if char == " ":
            space = index
    if space > 0:
        return paragraph[:space], paragraph[space + 1 :]
    end = max(end, 1)  # a character wider than the column still takes a line of its own
    return paragraph[:end], paragraph[end:]


def _ended(lines: list[str], advances: dict[str, int], limit: float) -> list[str]:
    """``lines`` with an ellipsis at the end of the last, which is cut to make room."""
    last = lines[-1]
    room = limit - advances[ELLIPSIS]
    while last and sum(map(advances.__getitem__, last)) > room:
        last = last[:-1]
    return [*lines[:-1], last + ELLIPSIS]


def logo_size(pixels_wide: int, pixels_high: int) -> tuple[float, float]:
    """The width and height, in points, a logo of that many pixels is drawn at: its proportions
    kept, as large as :data:`LOGO_MAX_WIDTH` by :data:`LOGO_MAX_HEIGHT` lets it be."""
    scale = min(LOGO_MAX_WIDTH / pixels_wide, LOGO_MAX_HEIGHT / pixels_high)
    return pixels_wide * scale, pixels_high * scale
