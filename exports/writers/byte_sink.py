"""What the writers need of where their bytes go.

Most writers only call ``write`` (:class:`ByteSink`; the CSV and JSON Lines writers through
:class:`ChunkedBytes`). The Parquet writer hands the stream to pyarrow's file wrapper, which also
asks whether it is closed, readable, writable or seekable and flushes it (:class:`ByteStream`). The
upload sinks (write-only :class:`io.RawIOBase` subclasses), :class:`typing.BinaryIO` files and
:class:`io.BytesIO` are both.
"""

from __future__ import annotations

from typing import Protocol

# Text reaches the byte stream in chunks of this size (fewer, larger writes into the sink).
TEXT_CHUNK_BYTES = 64 * 1024


class ByteSink(Protocol):
    """Takes bytes: an upload sink, a gzip member, the zip assembler's glue, a file."""

    def write(self, data: bytes, /) -> int | None:
        """Take all of ``data``."""
        ...


class ByteStream(ByteSink, Protocol):
    """A byte sink with the file methods :class:`io.TextIOWrapper` and pyarrow call on a
    write-only stream. One whose :meth:`seekable` is true must also have ``tell``."""

    @property
    def closed(self) -> bool:
        """Whether the stream was closed."""
        ...

    def flush(self) -> object:
        """Push what was written on (the upload sinks send parts only when one is full)."""
        ...

    def readable(self) -> bool:
        """Whether the stream can be read (false for the sinks)."""
        ...

    def writable(self) -> bool:
        """Whether the stream can be written."""
        ...

    def seekable(self) -> bool:
        """Whether the stream can seek (false for the sinks)."""
        ...


class ChunkedBytes:
    """Bytes gathered for ``out`` and written in chunks of :data:`TEXT_CHUNK_BYTES` or more
    (fewer, larger writes into the sink): the CSV and JSON Lines streams' buffer."""

    def __init__(self, out: ByteSink) -> None:
        self._out = out
        self._pending: list[bytes] = []
        self._pending_bytes = 0

    def write(self, data: bytes) -> None:
        """Take ``data``; a full chunk goes on to ``out``."""
        self._pending.append(data)
        self._pending_bytes += len(data)
        if self._pending_bytes >= TEXT_CHUNK_BYTES:
            self.flush()

    def flush(self) -> None:
        """Write everything taken so far into ``out``."""
        if self._pending:
            self._out.write(b"".join(self._pending))
            self._pending.clear()
            self._pending_bytes = 0
