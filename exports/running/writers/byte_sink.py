"""What the writers need of where their bytes go.

Most writers only call ``write`` (:class:`ByteSink`; the JSON Lines writer through
:class:`ChunkedBytes`). The CSV writer hands the stream to :class:`io.TextIOWrapper`, and the
Parquet writer to pyarrow's file wrapper, which also ask whether it is closed, readable, writable
or seekable and flush it (:class:`ByteStream`). The
upload sinks (write-only :class:`io.RawIOBase` subclasses), :class:`typing.BinaryIO` files and
:class:`io.BytesIO` are both.
"""

from __future__ import annotations

import io
from typing import BinaryIO, Protocol, cast

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


def utf8_text(out: ByteStream) -> io.TextIOWrapper:
    """UTF-8 text over ``out``, no newline translation, reaching ``out`` in chunks of
    :data:`TEXT_CHUNK_BYTES` (detach it when done: closing it would close ``out``)."""
    # typeshed types the wrapped buffer as a whole file (name, read, fileno, truncate...); on a
    # stream that is written and never read, the wrapper calls only ByteStream's methods.
    text = io.TextIOWrapper(cast(BinaryIO, out), encoding="utf-8", newline="", write_through=False)
    # Not a public setting: the C wrapper's default is 8 KiB, a write into the sink every 8 KiB.
    text._CHUNK_SIZE = TEXT_CHUNK_BYTES  # type: ignore[attr-defined]
    return text


class ChunkedBytes:
    """Bytes gathered for ``out`` and written in chunks of :data:`TEXT_CHUNK_BYTES` or more
    (fewer, larger writes into the sink), as :func:`utf8_text` does for text."""

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
