"""The bundled font, used as one composite (Type0) font per file: each character gets a
character id (CID) the first time a page uses it, the page's text is written as those ids, and
after the last page the font is subset with fontTools to the characters used and written as a
CIDFontType2 with its widths, its CID-to-glyph map and a ToUnicode CMap (so the text extracts
and searches as the characters it was, also where the font has no glyph for one)."""

from __future__ import annotations

import functools
import hashlib
import io
from dataclasses import dataclass
from pathlib import Path

from exports.running.writers.pdf.objects import PdfObjects

FONT_FILE = Path(__file__).parent / "fonts" / "NotoSansSC-Exports.ttf"
# Two bytes a character in the page text (Identity-H): CID 0 is the missing glyph.
MAX_CID = 0xFFFF
# Control characters are not drawn (lines are laid out before), nor lone surrogates (no text).
_INVISIBLE = {code: None for code in (*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0), *range(0xD800, 0xE000))}
# A cell's text keeps its line breaks (one "\n" each, laid out as lines) and its tabs become a space.
_CELL_INVISIBLE = {**_INVISIBLE, ord("\n"): "\n", ord("\t"): " "}


@dataclass(frozen=True)
class FontMetrics:
    """What laying out text needs of the bundled font (in 1/1000 em)."""

    advances: dict[int, int]
    missing_advance: int
    ascent: int
    descent: int
    cap_height: int
    bbox: tuple[int, int, int, int]


@functools.cache
def font_metrics() -> FontMetrics:
    """The bundled font's advance widths by code point, and its vertical metrics (read once per
    process: a warm worker reuses them). fontTools is imported here, on the PDF path only: it
    takes longer to import than the rest of the worker."""
    from fontTools.ttLib import TTFont

    font = TTFont(str(FONT_FILE), lazy=True)
    scale = 1000 / font["head"].unitsPerEm
    hmtx = font["hmtx"]
    advances = {code: round(hmtx[name][0] * scale) for code, name in font.getBestCmap().items()}
    os2 = font["OS/2"]
    head = font["head"]
    return FontMetrics(
        advances=advances,
        missing_advance=round(hmtx[".notdef"][0] * scale),
        ascent=round(os2.sTypoAscender * scale),
        descent=round(os2.sTypoDescender * scale),
        cap_height=round(getattr(os2, "sCapHeight", 700) * scale),
        bbox=(round(head.xMin * scale), round(head.yMin * scale), round(head.xMax * scale), round(head.yMax * scale)),
    )


class CompositeFont:
    """The characters one file uses, as CIDs: :meth:`encode` turns text into page text and
    :meth:`width` measures it; :meth:`write` puts the font objects after the pages."""

    def __init__(self) -> None:
        self.metrics = font_metrics()
        # Code point -> the CID's four hex digits, as str.translate takes it (C speed per page).
        self._hex: dict[int, str] = {}
        self._codes: list[int] = [0]  # CID -> code point
        # Code point -> advance, for every character seen (missing glyphs have the box's).
        self.advances: dict[str, int] = {}

    def clean(self, text: str) -> str:
        """``text`` without the control characters a page does not draw."""
        return text.translate(_INVISIBLE) if not text.isprintable() else text

    def clean_cell(self, text: str) -> str:
        """A cell's ``text`` without the control characters a page does not draw, but with its
        line breaks (``\r\n`` and ``\r`` as ``\n``), and its tabs as spaces."""
        if text.isprintable():
            return text
        return text.replace("\r\n", "\n").replace("\r", "\n").translate(_CELL_INVISIBLE)

    def register(self, text: str) -> None:
        """Give the characters of ``text`` not seen yet their CIDs, in code point order: a set's
        order changes with the process's string hashing, and the same rows must make the same
        file."""
        unseen = set(text).difference(self.advances)
        unseen.discard("\n")  # a line break is laid out, never drawn
        if not unseen:
            return
        for char in sorted(unseen):
            code = ord(char)
            if len(self._codes) > MAX_CID:
                # More distinct characters than two bytes number: the rest are the missing glyph.
                self._hex[code] = "0000"
            else:
                self._hex[code] = f"{len(self._codes):04X}"
                self._codes.append(code)
            self.advances[char] = self.metrics.advances.get(code, self.metrics.missing_advance)

    def width(self, text: str) -> int:
        """The advance of ``text`` (registered), in 1/1000 em."""
        return sum(map(self.advances.__getitem__, text))

    def encode(self, text: str) -> str:
        """``text`` (registered) as the hex digits of a page's text string."""
        return text.translate(self._hex)

    def write(self, objects: PdfObjects, number: int) -> None:
        """Write the Type0 font as object ``number``, with its descendant, descriptor, subset font
        file, CID-to-glyph map and ToUnicode CMap."""
        from fontTools import subset
        from fontTools.ttLib import TTFont

        codes = self._codes[1:]
        # The subset keeps the font's own modification time: by default fontTools stamps the
        # saving second into it, and the same rows would make another file a second later.
        font = TTFont(str(FONT_FILE), recalcTimestamp=False)
        options = subset.Options()
        options.layout_features = []
        options.notdef_outline = True
        options.name_IDs = [0, 1, 2, 3, 4, 5, 6]
        options.drop_tables += ["GSUB", "GPOS", "GDEF", "BASE", "kern", "DSIG"]
        subsetter = subset.Subsetter(options)
        subsetter.populate(unicodes=codes)
        subsetter.subset(font)
        cmap = font.getBestCmap()
        glyph_ids = bytearray(2 * len(self._codes))
        for cid, code in enumerate(codes, start=1):
            name = cmap.get(code)
            gid = font.getGlyphID(name) if name is not None else 0
            glyph_ids[2 * cid : 2 * cid + 2] = gid.to_bytes(2, "big")
        data = io.BytesIO()
        font.save(data)
        tag = _subset_tag(codes)
        base = f"/{tag}+{font['name'].getDebugName(6) or 'ExportsSansSC-Regular'}".encode("ascii")

        descendant, descriptor, font_file, cid_map, to_unicode = (objects.reserve() for _ in range(5))
        objects.put(
            number,
            b"<< /Type /Font /Subtype /Type0 /BaseFont %s /Encoding /Identity-H /DescendantFonts [%d 0 R] "
            b"/ToUnicode %d 0 R >>" % (base, descendant, to_unicode),
        )
        objects.put(
            descendant,
            b"<< /Type /Font /Subtype /CIDFontType2 /BaseFont %s /CIDSystemInfo << /Registry (Adobe) "
            b"/Ordering (Identity) /Supplement 0 >> /FontDescriptor %d 0 R /DW %d /W %s /CIDToGIDMap %d 0 R >>"
            % (base, descriptor, self.metrics.missing_advance, self._widths(codes), cid_map),
        )
        metrics = self.metrics
        objects.put(
            descriptor,
            b"<< /Type /FontDescriptor /FontName %s /Flags 4 /FontBBox [%d %d %d %d] /ItalicAngle 0 /Ascent %d "
            b"/Descent %d /CapHeight %d /StemV 80 /FontFile2 %d 0 R >>"
            % (base, *metrics.bbox, metrics.ascent, metrics.descent, metrics.cap_height, font_file),
        )
        font_bytes = data.getvalue()
        objects.put_stream(font_file, font_bytes, b" /Length1 %d" % len(font_bytes))
        objects.put_stream(cid_map, bytes(glyph_ids))
        objects.put_stream(to_unicode, _to_unicode(codes))

    def _widths(self, codes: list[int]) -> bytes:
        """The /W array: one run of widths from CID 1 on (CIDs are consecutive)."""
        advances = (self.metrics.advances.get(code, self.metrics.missing_advance) for code in codes)
        return b"[1 [%s]]" % b" ".join(b"%d" % advance for advance in advances) if codes else b"[]"


def _subset_tag(codes: list[int]) -> str:
    """Six capital letters naming the subset (ISO 32000-1, 9.6.4), from the characters in it."""
    digest = hashlib.sha256(",".join(map(str, codes)).encode()).digest()
    return "".join(chr(ord("A") + byte % 26) for byte in digest[:6])


def _to_unicode(codes: list[int]) -> bytes:
    """A ToUnicode CMap mapping each CID back to its character."""
    lines = [
        "/CIDInit /ProcSet findresource begin 12 dict begin begincmap",
        "/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def",
        "/CMapName /Adobe-Identity-UCS def /CMapType 2 def",
        "1 begincodespacerange <0000> <FFFF> endcodespacerange",
    ]
    pairs = [(cid, code) for cid, code in enumerate(codes, start=1)]
    for start in range(0, len(pairs), 100):
        chunk = pairs[start : start + 100]
        lines.append(f"{len(chunk)} beginbfchar")
        lines.extend(f"<{cid:04X}> <{chr(code).encode('utf-16-be').hex().upper()}>" for cid, code in chunk)
        lines.append("endbfchar")
    lines += ["endcmap CMapName currentdict /CMap defineresource pop end end"]
    return "\n".join(lines).encode("ascii")
