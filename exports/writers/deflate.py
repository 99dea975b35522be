"""Raw deflate (RFC 1951) with the CRC-32 and length of its input: what a gzip member and a zip
entry both carry next to their compressed data.

A stream may be made of segments deflated apart (in other processes): each ends on a byte
boundary (a sync flush, :data:`zlib.Z_SYNC_FLUSH`), none but the last has a final block, and no
segment refers back into another (each has a compressor of its own). Their concatenation is
one valid deflate stream, the way pigz compresses in parallel; the CRC-32s of the segments
combine into the CRC-32 of the whole with :func:`crc32_combine`.
"""

from __future__ import annotations

import zlib

# CRC-32 (reflected, polynomial 0x04C11DB7) arithmetic modulo its polynomial, as zlib's crc32.c
# (1.2.12 and later: multmodp, x2nmodp, crc32_combine64) does it. Bit 31 is x^0.
_POLY = 0xEDB88320
_X0 = 1 << 31


def _multiply(a: int, b: int) -> int:
    """``a * b`` modulo the CRC polynomial (zlib's ``multmodp``)."""
    product, bit = 0, _X0
    while a:
        if a & bit:
            product ^= b
            a ^= bit
        bit >>= 1
        b = (b >> 1) ^ _POLY if b & 1 else b >> 1
    return product


def _x_powers() -> list[int]:
    """``x^(2^n)`` modulo the polynomial for n = 0..31 (zlib's ``x2n_table``)."""
    powers = [1 << 30]  # x^1
    for _ in range(31):
        powers.append(_multiply(powers[-1], powers[-1]))
    return powers


_X2N = _x_powers()


def crc32_combine(crc1: int, crc2: int, length2: int) -> int:
    """The CRC-32 of ``A + B`` from ``crc32(A)``, ``crc32(B)`` and ``len(B)`` (zlib's
    ``crc32_combine``, which the standard library has only from Python 3.15): ``crc1`` times
    ``x^(8 * length2)``, plus ``crc2``. A few dozen products, whatever the lengths."""
    shift, k, n = _X0, 3, length2  # x^(n * 2^3): n bytes of 8 bits
    while n:
        if n & 1:
            shift = _multiply(_X2N[k & 31], shift)
        n >>= 1
        k += 1
    return _multiply(shift, crc1) ^ (crc2 & 0xFFFFFFFF)


class RawDeflate:
    """A raw deflate compressor counting what it is given: :attr:`crc32` and :attr:`size`
    (which may start from a stream compressed earlier, when it goes on in a new process)."""

    def __init__(self, level: int, crc32: int = 0, size: int = 0) -> None:
        self.crc32 = crc32
        self.size = size
        self._compressor = zlib.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS)

    def compress(self, data: bytes | bytearray | memoryview) -> bytes:
        """Compress ``data``; returns what deflate releases (often nothing yet)."""
        self.crc32 = zlib.crc32(data, self.crc32)
        self.size += len(data) if not isinstance(data, memoryview) else data.nbytes
        return self._compressor.compress(data)

    def flush(self, mode: int = zlib.Z_FINISH) -> bytes:
        """The rest of the output: ``Z_FINISH`` ends the stream with its final block,
        ``Z_SYNC_FLUSH`` / ``Z_FULL_FLUSH`` end a segment on a byte boundary without one."""
        return self._compressor.flush(mode)
