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
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from isal import isal_zlib
from zlib_ng import zlib_ng


class DeflateLibrary(Enum):
    """Which deflate implementation compresses: both write the same format (RFC 1951) and the
    same CRC-32, at different costs per level (docs/performance.md,
    "Third round: JSONL, CSV and XLSX against native writers")."""

    ZLIB_NG = "zlib-ng"
    # ISA-L (levels 0-3): about half zlib-ng's CPU at level 2 for a file about 1 % larger.
    ISA_L = "isa-l"


@dataclass(frozen=True)
class DeflateLevel:
    """A deflate library and the level it compresses at."""

    library: DeflateLibrary
    level: int


def crc32_combine(crc1: int, crc2: int, length2: int) -> int:
    """The CRC-32 of ``A + B`` from ``crc32(A)``, ``crc32(B)`` and ``len(B)`` (zlib-ng's
    ``crc32_combine``; the standard library has it only from Python 3.15)."""
    return zlib_ng.crc32_combine(crc1, crc2, length2)


class RawDeflate:
    """A raw deflate compressor counting what it is given: :attr:`crc32` and :attr:`size`
    (which may start from a stream compressed earlier, when it goes on in a new process)."""

    def __init__(self, level: DeflateLevel, crc32: int = 0, size: int = 0) -> None:
        self.crc32 = crc32
        self.size = size
        # Both libraries are zlib's format at a lower CPU cost per byte (their levels trade size
        # for speed differently from zlib's; see docs/performance.md).
        library = isal_zlib if level.library is DeflateLibrary.ISA_L else zlib_ng
        # Typed as the standard library's compressor: both mirror zlib's interface.
        self._compressor: zlib._Compress = library.compressobj(level.level, library.DEFLATED, -library.MAX_WBITS)
        self._crc32: Callable[[bytes | bytearray | memoryview, int], int] = library.crc32

    def compress(self, data: bytes | bytearray | memoryview) -> bytes:
        """Compress ``data``; returns what deflate releases (often nothing yet)."""
        self.crc32 = self._crc32(data, self.crc32)
        self.size += len(data) if not isinstance(data, memoryview) else data.nbytes
        return self._compressor.compress(data)

    def flush(self, mode: int = zlib.Z_FINISH) -> bytes:
        """The rest of the output: ``Z_FINISH`` ends the stream with its final block,
        ``Z_SYNC_FLUSH`` / ``Z_FULL_FLUSH`` end a segment on a byte boundary without one."""
        return self._compressor.flush(mode)
