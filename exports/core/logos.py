"""A logo for the head of every PDF page: a PNG or JPEG file checked once, at start-up where the
declaration is read, into what the PDF writer puts in a file as an image XObject
(:mod:`exports.running.writers.pdf.image`) without decoding its pixels.

A JPEG goes in as it is (``DCTDecode``: PDF readers decode JPEG themselves). A PNG's compressed
rows go in as they are too (``FlateDecode`` with PNG predictors, ISO 32000-1, 7.4.4.4); an alpha
channel becomes a soft mask. PNG filters predict each byte from the same channel of the pixel to
the left, above and above-left, so splitting the still-filtered rows into colour and alpha bytes
gives two valid filtered images: no pixel is ever unfiltered in Python.

What is refused, with the reason, is what a PDF cannot take this way or a logo does not need:
interlaced PNGs, 16-bit channels, palette PNGs with transparency, CMYK JPEGs, and anything over
:data:`LOGO_MAX_BYTES` or :data:`LOGO_MAX_PIXELS` on a side.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import Final

# A logo file's largest size: it is copied into every PDF of its type (or tenant).
LOGO_MAX_BYTES: Final = 512 * 1024
# A side's most pixels: drawn at most LOGO_MAX_WIDTH points wide, 4,096 pixels is over 1,000 dpi.
LOGO_MAX_PIXELS: Final = 4096

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_JPEG_START = b"\xff\xd8"
# Colour type: (PDF colour space, colour channels, alpha channel).
_PNG_COLOURS: Final = {0: (b"/DeviceGray", 1, False), 2: (b"/DeviceRGB", 3, False), 3: (b"", 1, False),
                       4: (b"/DeviceGray", 1, True), 6: (b"/DeviceRGB", 3, True)}  # fmt: skip
# JPEG start-of-frame markers (baseline, extended, progressive, lossless; Huffman coded):
# PDF's DCTDecode reads the first three kinds.
_JPEG_FRAMES: Final = {0xC0, 0xC1, 0xC2}
_JPEG_UNSUPPORTED_FRAMES: Final = {0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}


class ImageRefused(ValueError):
    """A logo file that cannot be used, with the reason an operator can act on."""


@dataclass(frozen=True)
class PdfImage:
    """A checked logo: its pixel size and what its image XObject (and soft mask) are made of."""

    width: int
    height: int
    # The image dictionary's entries besides size and length, and its stream as stored.
    entries: bytes
    data: bytes
    # The alpha channel as a filtered, deflated grey image (None: opaque).
    alpha: bytes | None = None


def read_image(data: bytes) -> PdfImage:
    """``data`` (a PNG or JPEG file) as a :class:`PdfImage`; :class:`ImageRefused` with the
    reason when it is not one, is broken, too large, or of a kind a PDF cannot take as it is."""
    if len(data) > LOGO_MAX_BYTES:
        raise ImageRefused(f"is {len(data):,} bytes; a logo may have {LOGO_MAX_BYTES:,} at most")
    if data.startswith(_PNG_SIGNATURE):
        return _png(data)
    if data.startswith(_JPEG_START):
        return _jpeg(data)
    raise ImageRefused("is neither a PNG nor a JPEG image")


def _size(width: int, height: int) -> None:
    if not (0 < width <= LOGO_MAX_PIXELS and 0 < height <= LOGO_MAX_PIXELS):
        raise ImageRefused(f"is {width} x {height} pixels; a logo may have 1 to {LOGO_MAX_PIXELS} on a side")


def predictor(colours: int, bits: int, columns: int) -> bytes:
    """The ``DecodeParms`` of a stream of PNG-filtered rows (the PNG predictors of ISO 32000-1, 7.4.4.4)."""
    return b"<< /Predictor 15 /Colors %d /BitsPerComponent %d /Columns %d >>" % (colours, bits, columns)


def _chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    """The PNG's chunks (type, body) up to IEND, each checked against its CRC."""
    chunks: list[tuple[bytes, bytes]] = []
    position = len(_PNG_SIGNATURE)
    while True:
        if position + 12 > len(data):
            raise ImageRefused("is a broken PNG: it ends before its IEND chunk")
        (length,) = struct.unpack(">I", data[position : position + 4])
        kind = data[position + 4 : position + 8]
        body = data[position + 8 : position + 8 + length]
        end = position + 8 + length
        if len(body) != length or end + 4 > len(data):
            raise ImageRefused("is a broken PNG: a chunk runs past the end of the file")
        if zlib.crc32(kind + body) != struct.unpack(">I", data[end : end + 4])[0]:
            raise ImageRefused(f"is a broken PNG: the {kind.decode('latin-1')!r} chunk fails its CRC")
        chunks.append((kind, body))
        if kind == b"IEND":
            return chunks
        position = end + 4


def _png(data: bytes) -> PdfImage:
    chunks = _chunks(data)
    if chunks[0][0] != b"IHDR" or len(chunks[0][1]) != 13:
        raise ImageRefused("is a broken PNG: it does not start with its IHDR chunk")
    width, height, bits, colour, compression, filtering, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    _size(width, height)
    if colour not in _PNG_COLOURS or compression != 0 or filtering != 0:
        raise ImageRefused(f"is a broken PNG: colour type {colour} is not one PNG defines")
    if interlace:
        raise ImageRefused("is an interlaced PNG; save it without interlacing")
    if bits != 8 and not (colour in (0, 3) and bits in (1, 2, 4)):
        raise ImageRefused(f"is a PNG with {bits}-bit channels; save it with 8 bits per channel")
    bodies = dict(chunks)
    space, channels, alpha = _PNG_COLOURS[colour]
    entries = b" /BitsPerComponent %d" % bits
    if colour == 3:
        palette = bodies.get(b"PLTE", b"")
        if not palette or len(palette) % 3 or len(palette) // 3 > 2**bits:
            raise ImageRefused("is a broken PNG: its palette is missing or of the wrong size")
        if b"tRNS" in bodies:
            raise ImageRefused("is a palette PNG with transparency; save it as RGBA (truecolour with alpha)")
        space = b"[/Indexed /DeviceRGB %d <%s>]" % (len(palette) // 3 - 1, palette.hex().upper().encode("ascii"))
    elif b"tRNS" in bodies and not alpha:
        # One colour is transparent: a colour key mask of that colour.
        key = struct.unpack(f">{channels}H", bodies[b"tRNS"][: 2 * channels])
        entries += b" /Mask [%s]" % b" ".join(b"%d %d" % (value, value) for value in key)
    compressed = b"".join(body for kind, body in chunks if kind == b"IDAT")
    try:
        rows = zlib.decompress(compressed)
    except zlib.error as error:
        raise ImageRefused(f"is a broken PNG: its image data does not inflate ({error})") from None
    stride = (width * (channels + alpha) * bits + 7) // 8
    if len(rows) != height * (stride + 1) or any(rows[row * (stride + 1)] > 4 for row in range(height)):
        raise ImageRefused("is a broken PNG: its image data does not hold its rows")
    entries += b" /ColorSpace %s /Filter /FlateDecode /DecodeParms %s" % (space, predictor(channels, bits, width))
    if not alpha:
        return PdfImage(width, height, entries, compressed)
    colours, opacity = _split_alpha(rows, width, height, channels)
    return PdfImage(width, height, entries, zlib.compress(colours, 9), zlib.compress(opacity, 9))


def _split_alpha(rows: bytes, width: int, height: int, channels: int) -> tuple[bytes, bytes]:
    """The filtered rows of an 8-bit image with alpha as two filtered images: its colours and
    its alpha, each row keeping its filter byte (see the module's docstring)."""
    stride = width * (channels + 1)
    colours, opacity = bytearray(), bytearray()
    for row in range(height):
        start = row * (stride + 1)
        kind, pixels = rows[start : start + 1], rows[start + 1 : start + 1 + stride]
        shades = bytearray(width * channels)
        for channel in range(channels):
            shades[channel::channels] = pixels[channel :: channels + 1]
        colours += kind + shades
        opacity += kind + pixels[channels :: channels + 1]
    return bytes(colours), bytes(opacity)


def _jpeg(data: bytes) -> PdfImage:
    """A JPEG read up to its frame header; the file itself is the stream."""
    if not data.rstrip(b"\x00").endswith(b"\xff\xd9"):
        raise ImageRefused("is a broken JPEG: it does not end with its end-of-image marker")
    position = 2
    while position + 4 <= len(data):
        if data[position] != 0xFF:
            raise ImageRefused("is a broken JPEG: a marker is missing where a segment should start")
        marker = data[position + 1]
        if marker == 0xFF:  # fill byte
            position += 1
            continue
        (length,) = struct.unpack(">H", data[position + 2 : position + 4])
        if marker in _JPEG_UNSUPPORTED_FRAMES:
            raise ImageRefused("is a lossless or arithmetic-coded JPEG; save it as a baseline JPEG")
        if marker in _JPEG_FRAMES:
            if length < 8 or position + 2 + length > len(data):
                raise ImageRefused("is a broken JPEG: its frame header is cut short")
            bits, height, width, components = struct.unpack(">BHHB", data[position + 4 : position + 10])
            _size(width, height)
            if bits != 8:
                raise ImageRefused(f"is a JPEG of {bits}-bit samples; save it with 8 bits per sample")
            spaces = {1: b"/DeviceGray", 3: b"/DeviceRGB"}
            if components not in spaces:
                raise ImageRefused(f"is a JPEG with {components} colour components (CMYK?); save it as RGB")
            entries = b" /ColorSpace %s /BitsPerComponent 8 /Filter /DCTDecode" % spaces[components]
            return PdfImage(width, height, entries, data)
        if marker == 0xDA:  # start of scan before any frame header
            break
        position += 2 + length
    raise ImageRefused("is a broken JPEG: it has no frame header")
