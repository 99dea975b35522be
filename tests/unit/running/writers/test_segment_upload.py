"""Segments uploaded as parts of one upload: ranges of part numbers, heads and tails held back,
and joins that keep every part but the last at least 5 MiB."""

import itertools
import random

import pytest

from exports.running.writers.segment_upload import (
    MAX_PARTS,
    SegmentSink,
    joins,
    last_part_number,
    part_numbers,
)
from exports.running.writers.sink import MIN_PART_BYTES
from tests.unit.fakes import FakeUpload

MIB = 1024 * 1024


def test_ranges_do_not_overlap_and_the_last_part_comes_after_them():
    for segments in (1, 2, 4, 7, 100, 4999):
        ranges = [part_numbers(index, segments) for index in range(segments)]
        for before, after in itertools.pairwise(ranges):
            assert before[-1] < after[0]
        assert ranges[0][0] == 1
        assert ranges[-1][-1] < last_part_number(segments) <= MAX_PARTS


def test_too_many_segments_are_refused():
    with pytest.raises(ValueError):
        part_numbers(0, 5000)


def upload(sizes, part_bytes=MIN_PART_BYTES, glue_bytes=100):
    """Segments of ``sizes`` bytes through sinks (in reverse order), then the joins."""
    rng = random.Random(sum(sizes))
    fake = FakeUpload()
    bodies = [rng.randbytes(size) for size in sizes]
    glue = [rng.randbytes(glue_bytes) for _ in range(len(sizes) + 1)]
    segments = {}
    for index in reversed(range(len(sizes))):
        sink = SegmentSink(fake, part_numbers(index, len(sizes)), part_bytes)
        for start in range(0, sizes[index], 777_777):
            sink.write(bodies[index][start : start + 777_777])
        segments[index] = sink.finish()
        assert segments[index].bytes == sizes[index]
    for number, data in joins(glue, [segments[index] for index in range(len(sizes))]):
        fake.upload_part_number(number, data)
    expected = b"".join(run + body for run, body in zip(glue, [*bodies, b""], strict=True))
    return fake.numbered, expected


@pytest.mark.parametrize(
    "sizes",
    [
        [0],
        [3 * MIB],
        [20 * MIB],
        [12 * MIB, 3 * MIB, 0, 11 * MIB],  # small segments join their neighbours' parts
        [1 * MIB, 2 * MIB, 1 * MIB],  # nothing reaches a part: one part, the last
        [5 * MIB, 10 * MIB, 15 * MIB, 5 * MIB + 1],  # exact multiples of the head and the part
    ],
)
def test_the_parts_in_number_order_are_the_file_and_all_but_the_last_are_at_least_5_mib(sizes):
    parts, expected = upload(sizes)

    numbers = sorted(parts)
    assert b"".join(parts[number] for number in numbers) == expected
    assert all(len(parts[number]) >= MIN_PART_BYTES for number in numbers[:-1])
    assert numbers[-1] <= MAX_PARTS


def test_a_segment_past_its_range_fails():
    sink = SegmentSink(FakeUpload(), range(1, 3), MIN_PART_BYTES)
    sink.write(bytes(2 * MIN_PART_BYTES))
    with pytest.raises(ValueError, match="more parts"):
        sink.write(bytes(MIN_PART_BYTES))


def test_parts_smaller_than_s3_allows_are_refused():
    with pytest.raises(ValueError):
        SegmentSink(FakeUpload(), range(1, 10), MIN_PART_BYTES - 1)


def test_before_part_can_stop_the_segment_before_a_part_is_sent():
    fake = FakeUpload()

    def cancelled():
        raise RuntimeError("cancelled")

    sink = SegmentSink(fake, range(1, 10), MIN_PART_BYTES, before_part=cancelled)
    sink.write(bytes(MIN_PART_BYTES))  # the head: held, nothing sent
    with pytest.raises(RuntimeError, match="cancelled"):
        sink.write(bytes(MIN_PART_BYTES))
    assert fake.numbered == {}
