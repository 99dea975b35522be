"""A zip archive written forward only, into a stream that cannot seek (PKWARE APPNOTE 6.3).

Each entry is deflated as it is written; its CRC-32 and sizes follow its data in a data
descriptor (flag bit 3), and the central directory ends the file. Nothing is seeked, and
nothing is held but zlib's window. An entry's data may also have been deflated elsewhere, in
segments (:meth:`ZipStream.add_deflated`): the archive then counts it without writing it, and
what it does write is the zip structure around those segments (see
:mod:`exports.running.writers.partitioned`).

No ZIP64 record is ever written, because none would be read: Excel reads no ZIP64 central
directory (Apache POI's findings, bug 57342), and LibreOffice 7.4 opens no package over 2 GiB at
all (tried: a 2.27 GB file with plain 32-bit fields and every entry under 2 GiB is refused, a
2.01 GB one opens; so is a small file holding a 2.5 GB entry). Python's ``zipfile`` switches to
ZIP64 records at 2 GiB. So an archive stays under 2 GiB and an entry under 4 GiB (32-bit sizes,
which both read); what would pass raises :class:`ArchiveTooLarge` instead of writing a file that
spreadsheet programs cannot open.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from exports.running.writers.byte_sink import ByteSink
from exports.running.writers.deflate import DeflateLevel, RawDeflate, crc32_combine

# An entry's uncompressed size: 32-bit fields hold up to 0xFFFFFFFE (0xFFFFFFFF means "see the
# ZIP64 record").
MAX_ENTRY_BYTES = 0xFFFF_FFFE
# The whole file, central directory included: what LibreOffice still opens. Read when an
# archive is started, so tests can lower it.
MAX_ARCHIVE_BYTES = 2**31 - 1
_MAX_ENTRIES = 0xFFFE

_LOCAL_HEADER = struct.Struct("<IHHHHHIIIHH")
_DATA_DESCRIPTOR = struct.Struct("<IIII")
_CENTRAL_HEADER = struct.Struct("<IHHHHHHIIIHHHHHII")
_END_OF_CENTRAL_DIRECTORY = struct.Struct("<IHHHHIIH")
_VERSION = 20  # 2.0: deflate; made by MS-DOS (no file attributes)
_FLAGS = 0x08  # sizes and CRC in the data descriptor
_DEFLATED = 8
# Every entry is dated 1980-01-01 00:00 (the earliest MS-DOS date): the same rows give the same
# bytes, so the same sha256.
_DOS_TIME, _DOS_DATE = 0, (1 << 5) | 1


class ArchiveTooLarge(ValueError):
    """The archive would pass 2 GiB, or an entry 4 GiB (see the module's docstring)."""


@dataclass
class _Entry:
    name: bytes
    offset: int
    data_start: int
    deflate: RawDeflate
    crc: int = 0
    size: int = 0
    compressed: int = 0
    # Data deflated elsewhere, counted by add_deflated: the end of its stream is in there too.
    elsewhere: bool = False


class ZipStream:
    """Entries written one at a time into ``out``: :meth:`start`, :meth:`write` (any number of
    times), :meth:`end`; then :meth:`close` writes the central directory. After a failure,
    :meth:`discard` makes every later write go nowhere."""

    def __init__(self, out: ByteSink, level: DeflateLevel) -> None:
        self.bytes_written = 0
        self._out: ByteSink | None = out
        self._level = level
        self._max_bytes = MAX_ARCHIVE_BYTES
        self._entries: list[_Entry] = []
        self._entry: _Entry | None = None

    def start(self, name: str) -> None:
        """Begin the entry ``name`` (ASCII, as every OOXML part name here)."""
        if self._entry is not None:
            raise ValueError("the previous entry is not ended")
        if len(self._entries) == _MAX_ENTRIES:
            raise ArchiveTooLarge("too many entries for a zip without ZIP64 records")
        encoded = name.encode("ascii")
        header = _LOCAL_HEADER.pack(
            0x04034B50, _VERSION, _FLAGS, _DEFLATED, _DOS_TIME, _DOS_DATE, 0, 0, 0, len(encoded), 0
        )
        offset = self.bytes_written
        self._emit(header + encoded)
        self._entry = _Entry(encoded, offset, self.bytes_written, RawDeflate(self._level))

    def write(self, data: bytes) -> None:
        """Add ``data`` to the open entry."""
        entry = self._open_entry()
        if entry.elsewhere:
            raise ValueError("the entry's data is deflated elsewhere")
        self._grow(entry, len(data))
        self._emit(entry.deflate.compress(data))
        entry.crc = entry.deflate.crc32

    def add_deflated(self, crc32: int, size: int, compressed: int) -> None:
        """Count the next segment of the open entry's deflate stream, written elsewhere:
        ``compressed`` bytes of raw deflate of ``size`` bytes whose CRC-32 is ``crc32``. The
        archive's offsets move on by ``compressed``; nothing is written. The entry's last
        segment must end the deflate stream (a final block), the others end on a byte boundary."""
        entry = self._open_entry()
        if entry.size and not entry.elsewhere:
            raise ValueError("the entry's data is deflated here")
        self._grow(entry, size)
        if self.bytes_written + compressed > self._max_bytes:
            raise ArchiveTooLarge("the archive would pass 2 GiB")
        entry.crc = crc32_combine(entry.crc, crc32, size)
        entry.elsewhere = True
        self.bytes_written += compressed

    def end(self) -> None:
        """End the open entry: the rest of its deflate stream, then its data descriptor."""
        entry = self._open_entry()
        if not entry.elsewhere:
            self._emit(entry.deflate.flush())
        entry.compressed = self.bytes_written - entry.data_start
        self._emit(_DATA_DESCRIPTOR.pack(0x08074B50, entry.crc, entry.compressed, entry.size))
        self._entries.append(entry)
        self._entry = None

    def add(self, name: str, data: bytes) -> None:
        """An entry of ``data`` at once."""
        self.start(name)
        self.write(data)
        self.end()

    def close(self) -> None:
        """Write the central directory and its end: the archive is complete."""
        if self._entry is not None:
            raise ValueError("the last entry is not ended")
        start = self.bytes_written
        for entry in self._entries:
            self._emit(
                _CENTRAL_HEADER.pack(
                    0x02014B50,
                    _VERSION,
                    _VERSION,
                    _FLAGS,
                    _DEFLATED,
                    _DOS_TIME,
                    _DOS_DATE,
                    entry.crc,
                    entry.compressed,
                    entry.size,
                    len(entry.name),
                    0,
                    0,
                    0,
                    0,
                    0,
                    entry.offset,
                )
                + entry.name
            )
        count = len(self._entries)
        size = self.bytes_written - start
        self._emit(_END_OF_CENTRAL_DIRECTORY.pack(0x06054B50, 0, 0, count, count, size, start, 0))

    def discard(self) -> None:
        """Write nothing more into ``out`` (the file is being thrown away)."""
        self._out = None

    def _open_entry(self) -> _Entry:
        if self._entry is None:
            raise ValueError("no entry is open")
        return self._entry

    @staticmethod
    def _grow(entry: _Entry, size: int) -> None:
        entry.size += size
        if entry.size > MAX_ENTRY_BYTES:
            raise ArchiveTooLarge(f"{entry.name.decode()} would pass 4 GiB")

    def _emit(self, data: bytes) -> None:
        if not data:
            return
        if self.bytes_written + len(data) > self._max_bytes:
            raise ArchiveTooLarge("the archive would pass 2 GiB")
        if self._out is not None:
            self._out.write(data)
        self.bytes_written += len(data)
