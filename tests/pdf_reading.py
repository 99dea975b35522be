"""PDF files read back by tools the project does not write with: pypdf for the text (with where
each line starts), poppler's pdftoppm for a rendered page, qpdf for the structure. The Debian
packages (poppler-utils, qpdf) are installed by ``make test`` when missing."""

from __future__ import annotations

import io
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pypdf


@dataclass(frozen=True)
class Line:
    """A line of text as pypdf extracts it, and where its first character is (points)."""

    x: float
    y: float
    text: str


def page_lines(page: Any) -> list[Line]:
    """The lines of text of a pypdf page, in content order."""
    lines: list[Line] = []

    def visit(text: str, _cm: Any, tm: Any, _font: Any, _size: Any) -> None:
        for part in text.split("\n"):
            if part.strip():
                lines.append(Line(round(tm[4], 2), round(tm[5], 2), part.strip()))

    page.extract_text(visitor_text=visit)
    return lines


def reader(body: bytes) -> pypdf.PdfReader:
    """A pypdf reader of ``body``, strict: a structural error raises."""
    return pypdf.PdfReader(io.BytesIO(body), strict=True)


def qpdf_check(body: bytes) -> subprocess.CompletedProcess[str]:
    """``qpdf --check`` of ``body`` (exit code 0: no errors, 3: warnings)."""
    with tempfile.NamedTemporaryFile(suffix=".pdf") as file:
        file.write(body)
        file.flush()
        return subprocess.run(["qpdf", "--check", file.name], capture_output=True, text=True, check=False)


@dataclass(frozen=True)
class Image:
    """A grey page image: ``pixels[y * width + x]``, 0 black to 255 white, y from the top."""

    width: int
    height: int
    pixels: bytes

    def dark_share(self, top: float, bottom: float) -> float:
        """The share of pixels darker than mid-grey between ``top`` and ``bottom`` (fractions of
        the height from the top)."""
        rows = self.pixels[int(top * self.height) * self.width : int(bottom * self.height) * self.width]
        return sum(1 for value in rows if value < 128) / max(len(rows), 1)

    def grey_share(self, top: float, bottom: float) -> float:
        """The share of light grey pixels (a header's fill) between ``top`` and ``bottom``."""
        rows = self.pixels[int(top * self.height) * self.width : int(bottom * self.height) * self.width]
        return sum(1 for value in rows if 200 <= value <= 240) / max(len(rows), 1)


def render(body: bytes, page: int, resolution: int = 50) -> Image:
    """Page ``page`` (1-based) rendered by pdftoppm in grey."""
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "file.pdf"
        source.write_bytes(body)
        subprocess.run(
            ["pdftoppm", "-gray", "-r", str(resolution), "-f", str(page), "-l", str(page), str(source), f"{folder}/p"],
            check=True,
            capture_output=True,
        )
        (image,) = Path(folder).glob("p*.pgm")
        data = image.read_bytes()
    # Binary PGM: "P5\n<width> <height>\n<max>\n" then a byte a pixel.
    magic, width, height = data.split(maxsplit=3)[:3]
    assert magic == b"P5"
    size = int(width) * int(height)
    return Image(int(width), int(height), data[-size:])
