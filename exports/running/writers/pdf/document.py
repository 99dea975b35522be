"""The PDF table streamed into ``out``: pages as the rows come, everything that depends on all of
them (the fonts, the page tree, the page count) after the last page.

Memory stays flat: a page's content is built, deflated and written before the next one starts;
what is kept is an offset per object (8 bytes), the page numbers of the page tree node being
filled (at most :data:`PAGES_PER_NODE`) and the characters used so far (the font subset). The
total in "3 / 1,204" is a form XObject every page draws and that is written at the end.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import islice

from exports.core.export_type import Column, Row
from exports.core.logos import PdfImage
from exports.running.writers.byte_sink import ByteSink
from exports.running.writers.cells import WIDTH_SAMPLE_ROWS
from exports.running.writers.pdf import layout
from exports.running.writers.pdf.font import CompositeFont
from exports.running.writers.pdf.image import put_image
from exports.running.writers.pdf.layout import (
    ELLIPSIS,
    FONT_SIZE,
    FOOTER_SIZE,
    LINE_HEIGHT,
    LOGO_GAP,
    MARGIN,
    PAD_X,
    PAD_Y,
    TITLE_SIZE,
    PageGeometry,
)
from exports.running.writers.pdf.objects import PdfObjects, text_string
from exports.running.writers.pdf.values import RIGHT_ALIGNED, formatter

CONTENT_TYPE = "application/pdf"
# Pages under one node of the page tree: the root holds the nodes, each node its pages.
PAGES_PER_NODE = 256
# Laid-out cells kept per column, for values that repeat.
LAYOUT_CACHE_ENTRIES = 1024
# Room at the bottom of a page for its number.
FOOTER_ROOM = 14.0
_HEADER_FILL = b"0.9 g"
_RULE = b"0.75 G 0.3 w"


@dataclass(frozen=True)
class PdfHeading:
    """What the first page says above the table: a title and lines below it (the filters, the
    generation time); ``created`` also goes into the document information; ``footer`` is printed
    at the foot of every page, ``logo`` at the head of every page."""

    title: str
    lines: Sequence[str] = ()
    created: datetime | None = None
    # At the foot of every page, right-aligned (the page number is at the left).
    footer: str = ""
    # At the head of every page, right-aligned; the table starts below it.
    logo: PdfImage | None = None


@dataclass
class _PageTree:
    """The page tree as pages are written: full nodes are written at once, only their numbers
    kept."""

    root: int
    nodes: list[tuple[int, int]] = field(default_factory=list)  # (number, page count)
    node: int = 0
    pages: list[int] = field(default_factory=list)
    count: int = 0


class PdfStream:
    """Write ``columns`` and then rows as a paginated table into ``out`` (which need not seek)."""

    def __init__(self, columns: Sequence[Column], out: ByteSink, heading: PdfHeading) -> None:
        self._columns = list(columns)
        self._heading = heading
        self._objects = PdfObjects(out)
        self._font = CompositeFont()
        self._shows = [formatter(column.kind) for column in self._columns]
        self._right = [column.kind in RIGHT_ALIGNED for column in self._columns]
        self._layouts: list[dict[tuple[str, bool], list[tuple[float, bytes]]]] = [{} for _ in self._columns]
        self._catalog, root, self._font_number, self._resources, self._total, self._info = (
            self._objects.reserve() for _ in range(6)
        )
        self._objects.put(self._catalog, b"<< /Type /Catalog /Pages %d 0 R >>" % root)
        # Written once, drawn by every page.
        self._logo = put_image(heading.logo, self._objects) if heading.logo is not None else None
        self._tree = _PageTree(root)
        self._geometry: PageGeometry | None = None
        self._sample: list[list[str]] = []
        self._page: list[bytes] = []
        self._text: list[bytes] = []
        self._y = 0.0
        self.rows = 0
        self._footer = self._font.clean(heading.footer)
        for text in ("0123456789, /", ELLIPSIS, heading.title, *heading.lines, self._footer):
            self._font.register(self._font.clean(text))
        for column in self._columns:
            self._font.register(self._font.clean_cell(column.header))

    def write_rows(self, rows: Iterable[Row]) -> None:
        """Append ``rows`` (values in column order); a row of the wrong length raises ``ValueError``.
        The column widths are fitted to the first rows, which wait until there are enough."""
        width = len(self._columns)
        for row in rows:
            if len(row) != width:
                raise ValueError(f"row {self.rows + 1} has {len(row)} values, the columns are {width}")
            shown = [self._font.clean_cell(show(value)) for show, value in zip(self._shows, row, strict=True)]
            self.rows += 1
            if self._geometry is None:
                self._sample.append(shown)
                if len(self._sample) >= WIDTH_SAMPLE_ROWS:
                    self._start()
                continue
            self._row(shown)

    def close(self) -> int:
        """Finish the file; returns the number of data rows."""
        if self._geometry is None:
            self._start()
        self._end_page()
        tree, objects = self._tree, self._objects
        if tree.pages:
            self._put_node()
        kids = b" ".join(b"%d 0 R" % number for number, _ in tree.nodes)
        objects.put(tree.root, b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, tree.count))
        total = f"{tree.count:,}"
        self._font.register(total)
        logo = b" /Logo %d 0 R" % self._logo if self._logo is not None else b""
        objects.put(
            self._resources,
            b"<< /Font << /F1 %d 0 R >> /XObject << /Total %d 0 R%s >> /ProcSet [/PDF /Text /ImageB /ImageC /ImageI] >>"
            % (self._font_number, self._total, logo),
        )
        form = b"BT /F1 %.1f Tf <%s> Tj ET" % (FOOTER_SIZE, self._font.encode(total).encode("ascii"))
        objects.put_stream(
            self._total,
            form,
            b" /Type /XObject /Subtype /Form /BBox [0 -3 %d 10] /Resources %d 0 R" % (10 * len(total), self._resources),
            compress=False,
        )
        self._font.write(objects, self._font_number)
        info = b"<< /Title %s /Producer (exports)" % text_string(self._heading.title)
        if self._heading.created is not None:
            info += b" /CreationDate (D:%s)" % self._heading.created.strftime("%Y%m%d%H%M%SZ").encode("ascii")
        objects.put(self._info, info + b" >>")
        objects.close(self._catalog, self._info)
        return self.rows

    def _start(self) -> None:
        """Fit the columns to the rows seen, open the first page and write those rows."""
        widths = layout.character_widths(self._columns, self._sample)
        self._geometry = layout.geometry(widths)
        self._new_page()
        sample, self._sample = self._sample, []
        for shown in sample:
            self._row(shown)

    def _new_page(self) -> None:
        geometry = self._geometry
        assert geometry is not None
        self._page, self._text = [_RULE], [b"/F1 %.1f Tf" % FONT_SIZE]
        self._y = geometry.height - MARGIN
        if self._heading.logo is not None:
            self._draw_logo(self._heading.logo, geometry)
        if self._tree.count == 0:
            self._heading_block()
        self._cells([self._font.clean_cell(column.header) for column in self._columns], header=True)

    def _draw_logo(self, logo: PdfImage, geometry: PageGeometry) -> None:
        """The logo at the page's top right, as large as :func:`layout.logo_size` lets it be;
        what follows starts below it."""
        width, height = layout.logo_size(logo.width, logo.height)
        x, y = geometry.width - MARGIN - width, self._y - height
        self._page.append(b"q %.2f 0 0 %.2f %.2f %.2f cm /Logo Do Q" % (width, height, x, y))
        self._y = y - LOGO_GAP

    def _heading_block(self) -> None:
        self._y -= TITLE_SIZE
        self._line(self._heading.title, MARGIN, self._y, TITLE_SIZE)
        self._y -= 4
        for line in self._heading.lines:
            self._y -= LINE_HEIGHT
            self._line(line, MARGIN, self._y, FONT_SIZE)
        self._y -= LINE_HEIGHT

    def _line(self, text: str, x: float, y: float, size: float) -> None:
        text = self._font.clean(text)
        self._font.register(text)
        self._text.append(
            b"/F1 %.1f Tf 1 0 0 1 %.2f %.2f Tm <%s> Tj /F1 %.1f Tf"
            % (size, x, y, self._font.encode(text).encode("ascii"), FONT_SIZE)
        )

    def _row(self, shown: list[str]) -> None:
        if not self._cells(shown, header=False):
            self._end_page()
            self._new_page()
            self._cells(shown, header=False)

    def _cells(self, shown: Sequence[str], header: bool) -> bool:
        """Draw a row of cells below the last; False (nothing drawn) when it does not fit."""
        geometry = self._geometry
        assert geometry is not None
        cells = [self._laid_out(index, text, header) for index, text in enumerate(shown)]
        lines = max((len(cell) for cell in cells), default=1) or 1
        height = lines * LINE_HEIGHT + 2 * PAD_Y
        bottom = self._y - height
        if not header and bottom < MARGIN + FOOTER_ROOM:
            return False
        left, right = MARGIN, geometry.table_right
        if header:
            self._page.append(b"%s %.2f %.2f %.2f %.2f re f 0 g" % (_HEADER_FILL, left, bottom, right - left, height))
        self._page.append(b"%.2f %.2f m %.2f %.2f l S" % (left, bottom, right, bottom))
        baseline = self._y - PAD_Y - LINE_HEIGHT + 2.2
        ops = self._text
        for cell in cells:
            for number, (x, encoded) in enumerate(cell):
                ops.append(b"1 0 0 1 %.2f %.2f Tm <%s> Tj" % (x, baseline - number * LINE_HEIGHT, encoded))
        self._y = bottom
        return True

    def _laid_out(self, index: int, text: str, header: bool) -> list[tuple[float, bytes]]:
        """The lines of a cell of column ``index``: where each starts and its page text. Repeated
        values (statuses, names, products) are laid out once: a bounded cache per column."""
        if not text:
            return []
        cache = self._layouts[index]
        key = (text, header)
        found = cache.get(key)
        if found is not None:
            return found
        geometry = self._geometry
        assert geometry is not None
        font = self._font
        font.register(text)
        limit = (geometry.widths[index] - 2 * PAD_X) * 1000 / FONT_SIZE
        lines = [text] if "\n" not in text and font.width(text) <= limit else layout.wrap(text, font.advances, limit)
        x0, width = geometry.lefts[index], geometry.widths[index]
        right_aligned = self._right[index] and not header
        cell = [
            (
                x0 + width - PAD_X - font.width(line) * FONT_SIZE / 1000 if right_aligned else x0 + PAD_X,
                font.encode(line).encode("ascii"),
            )
            for line in lines
        ]
        if len(cache) >= LAYOUT_CACHE_ENTRIES:
            cache.clear()
        cache[key] = cell
        return cell

    def _end_page(self) -> None:
        """Write the page being drawn: its number, its content stream and its page object."""
        geometry = self._geometry
        assert geometry is not None
        tree, objects = self._tree, self._objects
        if not tree.pages:
            tree.node = objects.reserve()
        tree.count += 1
        label = f"{tree.count:,} / "
        self._font.register(label)
        label_width = self._font.width(label) * FOOTER_SIZE / 1000
        footer_y = MARGIN / 2 + 2
        footer = b"BT /F1 %.1f Tf 1 0 0 1 %.2f %.2f Tm <%s> Tj ET q 1 0 0 1 %.2f %.2f cm /Total Do Q" % (
            FOOTER_SIZE,
            MARGIN,
            footer_y,
            self._font.encode(label).encode("ascii"),
            MARGIN + label_width,
            footer_y,
        )
        if self._footer:
            width = self._font.width(self._footer) * FOOTER_SIZE / 1000
            footer += b" BT /F1 %.1f Tf 1 0 0 1 %.2f %.2f Tm <%s> Tj ET" % (
                FOOTER_SIZE,
                max(MARGIN, geometry.width - MARGIN - width),
                footer_y,
                self._font.encode(self._footer).encode("ascii"),
            )
        content = b"\n".join([*self._page, b"BT", *self._text, b"ET", footer])
        stream, page = objects.reserve(), objects.reserve()
        objects.put_stream(stream, content)
        objects.put(
            page,
            b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 %.2f %.2f] /Resources %d 0 R /Contents %d 0 R >>"
            % (tree.node, geometry.width, geometry.height, self._resources, stream),
        )
        tree.pages.append(page)
        self._page, self._text = [], []
        if len(tree.pages) == PAGES_PER_NODE:
            self._put_node()

    def _put_node(self) -> None:
        tree = self._tree
        kids = b" ".join(b"%d 0 R" % number for number in tree.pages)
        self._objects.put(
            tree.node, b"<< /Type /Pages /Parent %d 0 R /Kids [%s] /Count %d >>" % (tree.root, kids, len(tree.pages))
        )
        tree.nodes.append((tree.node, len(tree.pages)))
        tree.pages = []


def write_pdf_stream(
    columns: Sequence[Column],
    rows: Iterable[Row],
    out: ByteSink,
    heading: PdfHeading | None = None,
) -> int:
    """Stream ``rows`` as a PDF table into ``out`` (which need not seek); returns the number of
    data rows. If ``rows`` raises, nothing more is written into ``out``."""
    stream = PdfStream(columns, out, heading or PdfHeading("Export"))
    iterator = iter(rows)
    while batch := list(islice(iterator, 1000)):
        stream.write_rows(batch)
    return stream.close()
