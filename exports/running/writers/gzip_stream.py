"""gzip written as a stream that can stop in one process and go on in another.

The file is one gzip member (RFC 1952): a 10-byte header, a raw deflate stream and a trailer
with the CRC-32 and the length of the uncompressed data. A zlib compressor cannot be saved, so
:meth:`GzipStream.suspend` ends the deflate output with a full flush: the output so far ends on
a byte boundary and nothing later refers back to it. A new compressor then carries on in the
same deflate stream (its blocks simply follow), and the CRC-32 and length, two integers, are
all the state the trailer needs. The result is an ordinary single-member ``.gz`` file.
"""

from __future__ import annotations

import io
import struct
import zlib
from dataclasses import dataclass
from typing import Any, Final

from exports.running.writers.byte_sink import ByteSink
from exports.running.writers.deflate import DeflateLevel, DeflateLibrary, RawDeflate

# The deflate of csv.gz: level 6 is zlib's default balance of speed and size.
GZIP_LEVEL: Final = DeflateLevel(DeflateLibrary.ZLIB_NG, 6)

# Magic, deflate, no flags, no modification time, no extra flags, OS unknown.
GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"


@dataclass(frozen=True)
class GzipState:
    """What a suspended gzip stream needs to go on: the CRC-32 and length of the input so far."""

    crc32: int = 0
    size: int = 0

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {"crc32": self.crc32, "size": self.size}

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> GzipState:
        """The state :meth:`to_json` wrote."""
        return cls(crc32=int(value["crc32"]), size=int(value["size"]))


class GzipStream(io.RawIOBase):
    """Compresses what is written to it into ``out``; :meth:`finish` writes the trailer.

    ``state`` continues a stream another process suspended: no header is written again.
    """

    def __init__(self, out: ByteSink, level: DeflateLevel = GZIP_LEVEL, state: GzipState | None = None) -> None:
        super().__init__()
        self._out = out
        self._level = level
        self._deflate = RawDeflate(level, state.crc32, state.size) if state else RawDeflate(level)
        if state is None:
            out.write(GZIP_HEADER)

    def writable(self) -> bool:
        """Always: this stream only writes."""
        return True

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        """Compress ``data``; whatever deflate releases goes to ``out``."""
        before = self._deflate.size
        compressed = self._deflate.compress(data)
        if compressed:
            self._out.write(compressed)
        return self._deflate.size - before

    def suspend(self) -> GzipState:
        """Flush everything compressed so far to ``out`` and return the state to go on from."""
        self._out.write(self._deflate.flush(zlib.Z_FULL_FLUSH))
        state = GzipState(crc32=self._deflate.crc32, size=self._deflate.size)
        self._deflate = RawDeflate(self._level, state.crc32, state.size)
        return state

    def finish(self) -> None:
        """End the deflate stream and write the trailer (CRC-32, length mod 2**32)."""
        self._out.write(self._deflate.flush(zlib.Z_FINISH))
        self._out.write(struct.pack("<II", self._deflate.crc32 & 0xFFFFFFFF, self._deflate.size & 0xFFFFFFFF))
