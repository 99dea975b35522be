"""Logo files made for tests and the images of a PDF as poppler's ``pdfimages -list`` reads them.

PNGs are written here byte by byte (the format is small: chunks with CRCs around deflated rows),
JPEGs by poppler's ``pdftoppm -jpeg`` from a page: no imaging library is needed for either."""

from __future__ import annotations

import io
import struct
import subprocess
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from exports.running.writers.pdf import write_pdf_stream

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def chunk(kind: bytes, body: bytes) -> bytes:
    """A PNG chunk: its length, type, body and CRC."""
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def png(width: int, height: int, colour: int = 2, *, interlace: int = 0, extra: bytes = b"", seed: int = 0) -> bytes:
    """An 8-bit PNG (colour type 0 grey, 2 RGB, 4 grey and alpha, 6 RGBA) of a gradient whose
    rows use every PNG filter in turn (a palette one takes ``extra`` for its PLTE/tRNS)."""
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[colour]
    rows = b"".join(
        bytes([row % 5])
        + bytes((x * 7 + row * 3 + channel * 50 + seed) % 256 for x in range(width) for channel in range(channels))
        for row in range(height)
    )
    header = struct.pack(">IIBBBBB", width, height, 8, colour, 0, 0, interlace)
    return PNG_SIGNATURE + chunk(b"IHDR", header) + extra + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def jpeg(width_points: int = 40) -> bytes:
    """A real JPEG (baseline, RGB): a page of a small PDF rendered by pdftoppm."""
    from exports.core.export_type import Column, ColumnKind

    sink = io.BytesIO()
    write_pdf_stream([Column("n", "N", ColumnKind.INTEGER)], [(1,)], sink)
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "page.pdf"
        source.write_bytes(sink.getvalue())
        subprocess.run(
            ["pdftoppm", "-jpeg", "-r", str(width_points), "-f", "1", "-l", "1", str(source), f"{folder}/p"],
            check=True,
            capture_output=True,
        )
        (image,) = Path(folder).glob("p*.jpg")
        return image.read_bytes()


@dataclass(frozen=True)
class ListedImage:
    """A row of ``pdfimages -list``: the page, the image's type (image, smask), size, colour and
    encoding."""

    page: int
    type: str
    width: int
    height: int
    color: str
    encoding: str


def listed_images(body: bytes) -> list[ListedImage]:
    """The images poppler finds drawn on each page of ``body``."""
    with tempfile.NamedTemporaryFile(suffix=".pdf") as file:
        file.write(body)
        file.flush()
        out = subprocess.run(["pdfimages", "-list", file.name], capture_output=True, text=True, check=True).stdout
    rows = []
    for line in out.splitlines()[2:]:
        page, _number, kind, width, height, color, _comp, _bpc, encoding = line.split()[:9]
        rows.append(ListedImage(int(page), kind, int(width), int(height), color, encoding))
    return rows


def pdf_text(body: bytes) -> str:
    """``pdftotext -layout`` of ``body``: the text as poppler reads it, pages split by form feeds."""
    with tempfile.NamedTemporaryFile(suffix=".pdf") as file:
        file.write(body)
        file.flush()
        return subprocess.run(
            ["pdftotext", "-layout", file.name, "-"], capture_output=True, text=True, check=True
        ).stdout
