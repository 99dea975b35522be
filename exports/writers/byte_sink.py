"""What the writers need of where their bytes go.

Most writers only call ``write`` (:class:`ByteSink`). The CSV and JSON Lines writers hand the
stream to :class:`io.TextIOWrapper`, and the Parquet writer to pyarrow's file wrapper, which also
ask whether it is closed, readable, writable or seekable and flush it (:class:`ByteStream`). The
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
