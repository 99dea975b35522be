"""MultipartSink: fixed-size parts, a hook before each part, a hash of everything sent."""

import hashlib
import io
import random

import pytest

from exports.core.config.worker import Worker
from exports.core.export_type import Column
from exports.running.writers.csv_writer import write_csv
from exports.running.writers.sink import MIN_PART_BYTES, MultipartSink
from tests.unit.fakes import FakeUpload

MIB = 1024 * 1024
PART = MIN_PART_BYTES


def payload(size):
    return random.Random(size).randbytes(size)


def write_in_chunks(sink, data, chunk):
    for start in range(0, len(data), chunk):
        assert sink.write(data[start : start + chunk]) == len(data[start : start + chunk])


def test_minimum_part_size_is_5_mib():
    assert MIN_PART_BYTES == 5 * MIB
    with pytest.raises(ValueError, match="5 MiB"):
        MultipartSink(FakeUpload(), PART - 1)
    MultipartSink(FakeUpload(), PART)


def test_default_part_size_is_allowed():
    assert Worker.UPLOAD_PART_BYTES >= MIN_PART_BYTES
    MultipartSink(FakeUpload())


def test_every_part_but_the_last_is_exactly_the_part_size():
    upload = FakeUpload()
    sink = MultipartSink(upload, PART)
    data = payload(2 * PART + 2 * MIB + 123)

    write_in_chunks(sink, data, chunk=MIB - 7)
    sink.finish()

    assert [len(part) for part in upload.bodies] == [PART, PART, 2 * MIB + 123]
    assert upload.content == data
    assert (sink.parts_sent, sink.bytes_written) == (3, len(data))


def test_parts_are_sent_as_soon_as_they_fill_up():
    upload = FakeUpload()
    sink = MultipartSink(upload, PART)

    sink.write(payload(PART - 1))
    assert upload.bodies == []
    sink.write(b"x")
    assert [len(part) for part in upload.bodies] == [PART]


def test_one_large_write_is_split_into_parts():
    upload = FakeUpload()
    sink = MultipartSink(upload, PART)
    data = payload(3 * PART + 1)

    sink.write(data)
    sink.finish()

    assert [len(part) for part in upload.bodies] == [PART, PART, PART, 1]
    assert upload.content == data


def test_an_exact_multiple_sends_no_empty_last_part():
    upload = FakeUpload()
    sink = MultipartSink(upload, PART)

    sink.write(payload(2 * PART))
    sink.finish()

    assert [len(part) for part in upload.bodies] == [PART, PART]


def test_empty_output_still_sends_one_empty_part():
    upload = FakeUpload()
    sink = MultipartSink(upload, PART)

    digest = sink.finish()

    assert upload.bodies == [b""]
    assert digest == hashlib.sha256(b"").hexdigest()


def test_sha256_is_the_hash_of_all_bytes_written():
    sink = MultipartSink(FakeUpload(), PART)
    data = payload(PART + 12_345)

    write_in_chunks(sink, data, chunk=300_001)

    assert sink.finish() == hashlib.sha256(data).hexdigest()


def test_accepts_bytearray_and_memoryview():
    upload = FakeUpload()
    sink = MultipartSink(upload, PART)

    sink.write(bytearray(b"abc"))
    sink.write(memoryview(b"def"))
    digest = sink.finish()

    assert upload.bodies == [b"abcdef"]
    assert digest == hashlib.sha256(b"abcdef").hexdigest()


def test_before_part_runs_before_each_part():
    upload = FakeUpload()
    parts_already_sent = []

    def before_part():
        upload.events.append("before_part")
        parts_already_sent.append(len(upload.bodies))

    sink = MultipartSink(upload, PART, before_part=before_part)
    write_in_chunks(sink, payload(2 * PART + 10), chunk=MIB)
    sink.finish()

    assert upload.events == ["before_part", "upload_part"] * 3
    assert parts_already_sent == [0, 1, 2]


def test_a_failing_before_part_stops_the_part_from_being_sent():
    class Cancelled(Exception):
        pass

    def before_part():
        raise Cancelled

    upload = FakeUpload()
    sink = MultipartSink(upload, PART, before_part=before_part)

    with pytest.raises(Cancelled):
        sink.write(payload(PART))
    assert upload.bodies == []


def test_never_completes_or_aborts_on_its_own():
    upload = FakeUpload()
    sink = MultipartSink(upload, PART)
    sink.write(b"data")
    sink.finish()

    assert not upload.completed
    assert not upload.aborted


def test_csv_streams_through_the_sink_unchanged():
    columns = [Column("name", "Name")]
    rows = [(f"王芳 {n}",) for n in range(20_000)]
    expected = io.BytesIO()
    write_csv(columns, rows, expected, bom=True)
    upload = FakeUpload()
    sink = MultipartSink(upload, PART)

    write_csv(columns, rows, sink, bom=True)
    digest = sink.finish()

    assert upload.content == expected.getvalue()
    assert digest == hashlib.sha256(expected.getvalue()).hexdigest()
