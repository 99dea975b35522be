"""A PDF file written forward only: objects in the order they come, their offsets kept, the
cross-reference table and the trailer at the end (ISO 32000-1, 7.5). Object numbers are handed
out before an object is written, so a page can point to its page tree node, its resources and
its fonts before they exist; nothing is ever seeked back to."""

from __future__ import annotations

import zlib
from array import array

from exports.running.writers.byte_sink import ByteSink

HEADER = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n"


class PdfObjects:
    """The objects of one file as they are written into ``out`` (which need not seek)."""

    def __init__(self, out: ByteSink) -> None:
        self._out = out
        self._position = 0
        # Offset of each object by number (0: object 0, the head of the free list); -1 until
        # written. 8 bytes an object: a million-row file has about 40,000 objects.
        self._offsets = array("q", [0])
        self._write(HEADER)

    @property
    def bytes_written(self) -> int:
        """Bytes written into ``out`` so far."""
        return self._position

    def reserve(self) -> int:
        """A new object number, to write later with :meth:`put`."""
        self._offsets.append(-1)
        return len(self._offsets) - 1

    def put(self, number: int, body: bytes) -> None:
        """Write object ``number`` (from :meth:`reserve`) with ``body``, a serialised PDF value."""
        if self._offsets[number] != -1:
            raise ValueError(f"object {number} is already written")
        self._offsets[number] = self._position
        self._write(b"%d 0 obj\n%s\nendobj\n" % (number, body))

    def put_stream(self, number: int, data: bytes, entries: bytes = b"", compress: bool = True) -> None:
        """Write object ``number`` as a stream of ``data`` (deflated unless told not to), with
        ``entries`` (serialised dictionary entries) besides its length and filter."""
        if compress:
            data = zlib.compress(data, 6)
            entries += b" /Filter /FlateDecode"
        self.put(number, b"<< /Length %d%s >>\nstream\n%s\nendstream" % (len(data), entries, data))

    def close(self, root: int, info: int) -> int:
        """Write the cross-reference table and the trailer; every reserved object must be written.
        Returns the file's size."""
        missing = [number for number, offset in enumerate(self._offsets) if offset == -1]
        if missing:
            raise ValueError(f"objects reserved and never written: {missing[:5]}")
        start = self._position
        self._write(b"xref\n0 %d\n0000000000 65535 f \n" % len(self._offsets))
        # In slices: the table of a million-row file is about 1 MiB, never held whole.
        for first in range(1, len(self._offsets), 4096):
            self._write(b"".join(b"%010d 00000 n \n" % offset for offset in self._offsets[first : first + 4096]))
        trailer = b"trailer\n<< /Size %d /Root %d 0 R /Info %d 0 R >>\nstartxref\n%d\n%%%%EOF\n"
        self._write(trailer % (len(self._offsets), root, info, start))
        return self._position

    def _write(self, data: bytes) -> None:
        self._out.write(data)
        self._position += len(data)


def text_string(text: str) -> bytes:
    """``text`` as a PDF text string (UTF-16BE with its byte order mark, in hex)."""
    return b"<FEFF" + text.encode("utf-16-be").hex().upper().encode("ascii") + b">"
