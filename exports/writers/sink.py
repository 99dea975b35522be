"""A write-only byte stream that uploads itself as multipart parts and hashes what it sends."""

from __future__ import annotations

import hashlib
import io
from collections.abc import Callable

from exports.config import Worker
from exports.ports import MultipartUpload

MIN_PART_BYTES = 5 * 1024 * 1024


class MultipartSink(io.RawIOBase):
    """Buffers writes and sends a part each time ``part_bytes`` have gathered.

    ``before_part`` runs before each part is sent, so the caller can stop the export between
    parts (e.g. when the task was cancelled). The sink never completes or aborts the upload on its
    own: :meth:`finish` sends the last part, the caller completes or aborts.
    """

    def __init__(
        self,
        upload: MultipartUpload,
        part_bytes: int = Worker.UPLOAD_PART_BYTES,
        before_part: Callable[[], None] | None = None,
    ) -> None:
        super().__init__()
        if part_bytes < MIN_PART_BYTES:
            raise ValueError("S3 parts other than the last must be at least 5 MiB")
        self._upload = upload
        self._part_bytes = part_bytes
        self._before_part = before_part or (lambda: None)
        self._buffer = bytearray()
        self._sha256 = hashlib.sha256()
        self.bytes_written = 0
        self.parts_sent = 0

    def writable(self) -> bool:
        """Always: this stream only writes."""
        return True

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        """Take ``data``; send full parts as they fill up."""
        view = memoryview(data).cast("B")
        self._buffer += view
        self._sha256.update(view)
        self.bytes_written += len(view)
        while len(self._buffer) >= self._part_bytes:
            self._send(bytes(self._buffer[: self._part_bytes]))
            del self._buffer[: self._part_bytes]
        return len(view)

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
