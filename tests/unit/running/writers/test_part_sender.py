"""PartsInBackground: the writer goes on while a part is sent; every other call waits for it."""

from __future__ import annotations

import threading

import pytest

from exports.core.errors import RetryableError
from exports.running.writers.part_sender import PartsInBackground
from tests.unit.fakes import FakeUpload


class HeldUpload(FakeUpload):
    """Sends a part only once the test lets it go; or fails it."""

    def __init__(self, fail: bool = False) -> None:
        super().__init__()
        self.release = threading.Event()
        self.fail = fail

    def upload_part(self, data: bytes) -> None:
        assert self.release.wait(timeout=10), "never released"
        if self.fail:
            raise RetryableError("upload part: SlowDown")
        super().upload_part(data)


def test_the_writer_goes_on_while_its_part_is_sent_and_the_parts_wait_for_it() -> None:
    upload = HeldUpload()
    sender = PartsInBackground(upload)

    sender.upload_part(b"first")  # returns with the part still held
    assert upload.bodies == []
    upload.release.set()
    sender.upload_part(b"second")

    assert sender.parts == [(1, '"etag-1"'), (2, '"etag-2"')] and upload.content == b"firstsecond"
    sender.complete()
    assert upload.completed


def test_a_part_that_failed_raises_at_the_next_call_and_abort_still_drops_the_upload() -> None:
    upload = HeldUpload(fail=True)
    sender = PartsInBackground(upload)
    sender.upload_part(b"first")
    upload.release.set()

    with pytest.raises(RetryableError, match="SlowDown"):
        sender.complete()
    assert not upload.completed

    sender.upload_part(b"second")
    sender.abort()  # the second part's failure does not matter any more
    assert upload.aborted and upload.bodies == []
