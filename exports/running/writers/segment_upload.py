"""The segments of one file (see :mod:`exports.running.writers.partitioned`) uploaded in parallel as the
parts of one S3 multipart upload, in order, within S3's rules: at most 10,000 parts, numbered
1..10,000 and completed in ascending order (gaps allowed), each but the last at least 5 MiB.

Numbering: of ``m`` segments, segment ``i`` owns the numbers ``i * R + 1 .. (i + 1) * R`` with
``R = 9,999 // m``, and ``m * R + 1`` is the file's last part. The first number of a segment's
range is its *join*: the bytes before the segment's first interior part, which the assembler
uploads; the rest are the segment's *interior* parts, which its partition uploads as they fill.

Sizes: a segment cannot know whether its first and last bytes will be in a part of at least
5 MiB (its neighbours' bytes, and the assembler's glue, go in that part), so it holds them back:
its *head*, the first 5 MiB (all of it if it is smaller), and its *tail*, what is left after its
last full interior part (less than one part). Interior parts are full parts. The assembler
uploads each join as ``tail of the segment before + glue + head``; the head makes it at least
5 MiB whenever interior parts follow it. A segment too small for an interior part is held whole
and joins the next one's part (or the last part): partitions of any size, even empty, make a
valid upload, and a well-sized plan (partitions of a few parts or more) uploads almost every
byte from its own partition. A segment holds at most 5 MiB + one part, and has ``R - 1``
interior parts of room: ``part_bytes * (R - 1)`` bytes (198 parts of 8 MiB, 1.5 GiB, each with
50 segments); past it a partition fails rather than break the numbering.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from exports.core.config.worker import Worker
from exports.core.ports import ResultUpload
from exports.running.writers.sink import MIN_PART_BYTES

MAX_PARTS = 10_000


def _per_segment(segments: int) -> int:
    per = (MAX_PARTS - 1) // segments
    if per < 2:
        raise ValueError(f"{segments} segments leave no room for parts")
    return per


def part_numbers(segment: int, segments: int) -> range:
    """The part numbers of segment ``segment`` (0-based) of ``segments``: its join first, then
    its interior parts."""
    per = _per_segment(segments)
    return range(segment * per + 1, (segment + 1) * per + 1)


def last_part_number(segments: int) -> int:
    """The number of the file's last part (after every segment's range)."""
    return segments * _per_segment(segments) + 1


@dataclass(frozen=True)
class SegmentUpload:
    """A segment as its partition uploaded it: the interior parts sent, the head and tail held
    back for the assembler, and the segment's length."""

    parts: tuple[tuple[int, str], ...]
    head: bytes
    tail: bytes
    bytes: int


class SegmentSink(io.RawIOBase):
    """A write-only stream that uploads one segment's interior parts as they fill (numbers of
    ``numbers`` after its first) and holds its head and tail; :meth:`finish` tells what the
    assembler needs. ``before_part`` runs before each part is sent (to stop a cancelled export
    between parts)."""

    def __init__(
        self,
        upload: ResultUpload,
        numbers: range,
        part_bytes: int = Worker.UPLOAD_PART_BYTES,
        before_part: Callable[[], None] | None = None,
    ) -> None:
        super().__init__()
        if part_bytes < MIN_PART_BYTES:
            raise ValueError("S3 parts other than the last must be at least 5 MiB")
        self._upload = upload
        self._numbers = iter(numbers[1:])
        self._part_bytes = part_bytes
        self._before_part = before_part or (lambda: None)
        self._head = bytearray()
        self._buffer = bytearray()
        self._parts: list[tuple[int, str]] = []
        self.bytes_written = 0

    def writable(self) -> bool:
        """Always: this stream only writes."""
        return True

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        """Take ``data``: the head first, then full parts sent as they fill."""
        chunk = memoryview(data).cast("B")
        size = len(chunk)
        self.bytes_written += size
        if len(self._head) < MIN_PART_BYTES:
            taken = MIN_PART_BYTES - len(self._head)
            self._head += chunk[:taken]
            chunk = chunk[taken:]
        self._buffer += chunk
        while len(self._buffer) >= self._part_bytes:
            with memoryview(self._buffer) as view:
                part = bytes(view[: self._part_bytes])
            del self._buffer[: self._part_bytes]
            self._send(part)
        return size

    def finish(self) -> SegmentUpload:
        """The segment as uploaded (what is not sent is its head and tail)."""
        return SegmentUpload(tuple(self._parts), bytes(self._head), bytes(self._buffer), self.bytes_written)

    def _send(self, part: bytes) -> None:
        number = next(self._numbers, None)
        if number is None:
            raise ValueError("the segment needs more parts than its range holds: plan more partitions or larger parts")
        self._before_part()
        self._parts.append((number, self._upload.upload_part_number(number, part)))


def joins(glue: Sequence[bytes], segments: Iterable[SegmentUpload]) -> Iterator[tuple[int, bytes]]:
    """The parts the assembler uploads, as (number, bytes), in order: the bytes between the
    segments' interior parts (``glue``: the runs around the segments, one more than they are).
    Each part but the last is at least 5 MiB. Lazy, so that the segments' held bytes can be
    read one segment at a time."""
    count = len(glue) - 1
    run = bytearray()
    sent = 0
    for index, segment in enumerate(segments):
        run += glue[index]
        run += segment.head
        if segment.parts:
            yield part_numbers(index, count)[0], bytes(run)
            sent += 1
            run = bytearray(segment.tail)
        else:
            run += segment.tail
    run += glue[count]
    if run or not sent:
        yield last_part_number(count), bytes(run)
