"""An upload whose next part is sent from a thread of its own while the writer goes on.

:class:`~exports.running.writers.sink.MultipartSink` sends a part each time 8 MiB have gathered; sent
in the writer's thread, the request (an S3 ``UploadPart``) stopped the writer, and a source
that streams (PostgreSQL's COPY) stopped with it, its socket full (docs/performance.md,
"Fourth round: PostgreSQL to CSV"). :class:`PartsInBackground` sends one part at a time in a
thread while the writer fills the next: at most one part is in flight (one part of memory
more), in order, and every other call (the parts so far, completing, aborting, a numbered
part) first waits for it, so a checkpoint, the completed object and an abort see every part
sent. A part that failed raises its error in the writer's thread at the next call.
"""

from __future__ import annotations

import contextvars
import threading

from exports.core.ports import ResultUpload


class PartsInBackground:
    """``upload`` (a :class:`~exports.core.ports.ResultUpload`) with :meth:`upload_part` sent from a
    thread, one part in flight at most."""

    def __init__(self, upload: ResultUpload) -> None:
        self._upload = upload
        self._sending: threading.Thread | None = None
        self._failed: BaseException | None = None

    @property
    def upload_id(self) -> str:
        """The store's id of the upload."""
        return self._upload.upload_id

    @property
    def parts(self) -> list[tuple[int, str]]:
        """Parts sent so far, the one in flight included once it is sent."""
        self._wait()
        return self._upload.parts

    def upload_part(self, data: bytes) -> None:
        """Send the next part from a thread, once the one before it is sent."""
        self._wait()
        # The thread runs in the writer's context (the log's task keys).
        context = contextvars.copy_context()
        self._sending = threading.Thread(target=context.run, args=(self._send, data), name="upload-part", daemon=True)
        self._sending.start()

    def _send(self, data: bytes) -> None:
        try:
            self._upload.upload_part(data)
        except BaseException as error:  # raised in the writer's thread by the next call
            self._failed = error

    def upload_part_number(self, number: int, data: bytes) -> str:
        """Send ``data`` as part ``number`` now; returns its ETag."""
        self._wait()
        return self._upload.upload_part_number(number, data)

    def complete(self) -> None:
        """Complete the upload once the part in flight is sent."""
        self._wait()
        self._upload.complete()

    def abort(self) -> None:
        """Drop the upload once the part in flight has ended (its failure does not matter now)."""
        self._join()
        self._failed = None
        self._upload.abort()

    def _join(self) -> None:
        if self._sending is not None:
            self._sending.join()
            self._sending = None

    def _wait(self) -> None:
        """Wait for the part in flight; raise its error if sending it failed."""
        self._join()
        if self._failed is not None:
            failed, self._failed = self._failed, None
            raise failed
