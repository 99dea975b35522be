"""A write-only byte stream that uploads itself as multipart parts and hashes what it sends."""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass

from exports.core.config.worker import Worker
from exports.core.ports import ResultUpload
from exports.running.writers.resumable_sha256 import RunningSha256, Sha256State, new_sha256

MIN_PART_BYTES = 5 * 1024 * 1024


@dataclass(frozen=True)
class SinkState:
    """Where a suspended sink stands: counts, the running hash and the bytes not yet sent
    (less than one part: they become the start of the next part)."""

    bytes_written: int
    parts_sent: int
    sha256: Sha256State
    tail: bytes


class MultipartSink(io.RawIOBase):
    """Buffers writes and sends a part each time ``part_bytes`` have gathered.

    ``before_part`` runs before each part is sent, so the caller can stop the export between
    parts (e.g. when the task was cancelled). The sink never completes or aborts the upload on its
    own: :meth:`finish` sends the last part, the caller completes or aborts. :meth:`snapshot` and
    ``state`` let another process continue the same file.
    """

    def __init__(
        self,
        upload: ResultUpload,
        part_bytes: int = Worker.UPLOAD_PART_BYTES,
        before_part: Callable[[], None] | None = None,
        state: SinkState | None = None,
    ) -> None:
        super().__init__()
        if part_bytes < MIN_PART_BYTES:
            raise ValueError("S3 parts other than the last must be at least 5 MiB")
        self._upload = upload
        self._part_bytes = part_bytes
        self._before_part = before_part or (lambda: None)
        self._buffer = bytearray(state.tail if state else b"")
        self._sha256: RunningSha256 = new_sha256(state.sha256 if state else None)
        self.bytes_written = state.bytes_written if state else 0
        self.parts_sent = state.parts_sent if state else 0

    def writable(self) -> bool:
        """Always: this stream only writes."""
        return True

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        """Take ``data``; send full parts as they fill up."""
        chunk = data if isinstance(data, bytes) else bytes(memoryview(data).cast("B"))
        self._buffer += chunk
        self._sha256.update(chunk)
        self.bytes_written += len(chunk)
        while len(self._buffer) >= self._part_bytes:
            with memoryview(self._buffer) as view:
                part = bytes(view[: self._part_bytes])
            del self._buffer[: self._part_bytes]
            self._send(part)
        return len(chunk)

    def snapshot(self) -> SinkState:
        """The state to continue from in another process (raises
        :class:`exports.running.writers.resumable_sha256.NotResumable` if the hash cannot be saved)."""
        return SinkState(
            bytes_written=self.bytes_written,
            parts_sent=self.parts_sent,
            sha256=self._sha256.snapshot(),
            tail=bytes(self._buffer),
        )

    def finish(self) -> str:
        """Send what is left as the last part; returns the sha256 of everything written."""
        if self._buffer or self.parts_sent == 0:
            self._send(bytes(self._buffer))
            self._buffer.clear()
        return self._sha256.hexdigest()

    def _send(self, part: bytes) -> None:
        self._before_part()
        self._upload.upload_part(part)
        self.parts_sent += 1
