"""What lets a file be written by several processes: a sha256 whose state is saved and restored,
gzip that stops and goes on as one member, a sink that carries its unsent bytes, checkpoints."""

import gzip
import hashlib
import io
import json
import random
import struct
import subprocess
import sys
import zlib
from datetime import UTC, datetime
from typing import Any

import pytest

from exports.running.checkpoint import (
    ExportCheckpoint,
    PartRecord,
    decode_checkpoint,
    encode_checkpoint,
    fingerprint,
)
from exports.running.writers import resumable_sha256
from exports.running.writers.gzip_stream import GZIP_HEADER, GzipState, GzipStream
from exports.running.writers.resumable_sha256 import NotResumable, Sha256State, new_sha256, resumable_available
from exports.running.writers.sink import MIN_PART_BYTES, MultipartSink
from tests.unit.fakes import FakeUpload

DATA = random.Random(6).randbytes(300_000)


def test_openssl_sha256_is_available_here():
    # Lambda's Python and this machine both ship libcrypto; without it long CSV exports could not
    # hand over (see test_without_openssl_the_hash_works_but_cannot_be_saved).
    assert resumable_available()


@pytest.mark.parametrize("cuts", [(0,), (1,), (63,), (64,), (65,), (1000, 1001, 50_000), (len(DATA),)])
def test_a_hash_saved_and_restored_gives_the_digest_of_all_bytes(cuts):
    running = new_sha256()
    start = 0
    for cut in cuts:
        running.update(DATA[start:cut])
        state = Sha256State.from_json(json.loads(json.dumps(running.snapshot().to_json())))
        running = new_sha256(state)
        start = cut
    running.update(DATA[start:])
    assert running.hexdigest() == hashlib.sha256(DATA).hexdigest()


def test_a_state_restored_in_another_process_continues_the_same_hash():
    running = new_sha256()
    running.update(DATA[:123_457])
    script = (
        "import json, sys\n"
        "from exports.running.writers.resumable_sha256 import Sha256State, new_sha256\n"
        "state, rest = json.loads(sys.stdin.read())\n"
        "h = new_sha256(Sha256State.from_json(state))\n"
        "h.update(bytes.fromhex(rest))\n"
        "print(h.hexdigest())\n"
    )
    payload = json.dumps([running.snapshot().to_json(), DATA[123_457:].hex()])
    done = subprocess.run([sys.executable, "-c", script], input=payload, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == hashlib.sha256(DATA).hexdigest()


def test_the_digest_does_not_end_the_hash():
    running = new_sha256()
    running.update(b"abc")
    assert running.hexdigest() == hashlib.sha256(b"abc").hexdigest()
    running.update(b"def")
    assert running.hexdigest() == hashlib.sha256(b"abcdef").hexdigest()


def test_the_state_holds_the_chaining_words_length_and_unfinished_block():
    running = new_sha256()
    running.update(b"x" * 70)
    state = running.snapshot()
    assert (state.length_bits, state.pending) == (70 * 8, b"x" * 6)
    assert len(state.words) == 8


@pytest.mark.parametrize(
    "broken",
    [
        {"words": [1] * 7, "length_bits": 0, "pending": ""},
        {"words": [2**32] * 8, "length_bits": 0, "pending": ""},
        {"words": [1] * 8, "length_bits": 8, "pending": ""},
        {"words": [1] * 8, "length_bits": 7, "pending": ""},
        {"words": [1] * 8, "length_bits": 64 * 8, "pending": "00" * 64},
    ],
)
def test_a_state_that_cannot_be_one_is_refused(broken):
    with pytest.raises(ValueError):
        Sha256State.from_json(broken)


def test_without_openssl_the_hash_works_but_cannot_be_saved(monkeypatch):
    monkeypatch.setattr(resumable_sha256, "_libcrypto", lambda: None)
    running = new_sha256()
    running.update(b"abc")
    assert running.hexdigest() == hashlib.sha256(b"abc").hexdigest()
    with pytest.raises(NotResumable):
        running.snapshot()
    with pytest.raises(NotResumable):
        new_sha256(Sha256State((0,) * 8, 0, b""))


def gzip_in_pieces(data, cuts):
    """Compress ``data``, suspending at each cut and going on in a new stream from the saved state."""
    out = io.BytesIO()
    stream = GzipStream(out)
    start = 0
    for cut in cuts:
        stream.write(data[start:cut])
        state = GzipState.from_json(json.loads(json.dumps(stream.suspend().to_json())))
        stream = GzipStream(out, state=state)
        start = cut
    stream.write(data[start:])
    stream.finish()
    return out.getvalue()


TEXT = b"".join(b"%d,Noah M\xc3\xbcller,2025-03-01,12.50\r\n" % n for n in range(40_000))


@pytest.mark.parametrize("cuts", [(), (1,), (10_000, 10_001, 500_000), (len(TEXT),)])
def test_gzip_suspended_and_resumed_is_one_valid_member(cuts):
    body = gzip_in_pieces(TEXT, cuts)

    inflate = zlib.decompressobj(wbits=31)
    assert inflate.decompress(body) == TEXT
    assert inflate.eof and inflate.unused_data == b""
    assert gzip.decompress(body) == TEXT
    assert body.startswith(GZIP_HEADER) and body.count(GZIP_HEADER) == 1
    assert struct.unpack("<II", body[-8:]) == (zlib.crc32(TEXT), len(TEXT))


def test_gzip_accepted_by_the_gzip_tool():
    body = gzip_in_pieces(TEXT, (1234, 99_999))
    checked = subprocess.run(["gzip", "-t"], input=body, capture_output=True, check=False)
    assert checked.returncode == 0, checked.stderr


def test_empty_gzip_is_valid():
    assert gzip.decompress(gzip_in_pieces(b"", ())) == b""


def test_the_trailer_keeps_the_length_modulo_2_to_the_32():
    out = io.BytesIO()
    GzipStream(out, state=GzipState(crc32=0, size=2**32 + 5)).finish()
    assert struct.unpack("<II", out.getvalue()[-8:]) == (0, 5)


def test_a_sink_continued_from_its_snapshot_sends_the_same_parts_and_hash():
    data = random.Random(7).randbytes(2 * MIN_PART_BYTES + 777)
    upload = FakeUpload()
    first = MultipartSink(upload, MIN_PART_BYTES)
    first.write(data[: MIN_PART_BYTES + 100])
    state = first.snapshot()
    assert (state.parts_sent, len(state.tail), state.bytes_written) == (1, 100, MIN_PART_BYTES + 100)

    second = MultipartSink(upload, MIN_PART_BYTES, state=state)
    second.write(data[MIN_PART_BYTES + 100 :])
    digest = second.finish()

    assert [len(part) for part in upload.bodies] == [MIN_PART_BYTES, MIN_PART_BYTES, 777]
    assert upload.content == data
    assert digest == hashlib.sha256(data).hexdigest()
    assert (second.parts_sent, second.bytes_written) == (3, len(data))


def checkpoint(**changes):
    fields: dict[str, Any] = {
        "task_id": "exp_1",
        "fingerprint": fingerprint({"b": 1, "a": [1, 2]}),
        "key": "results/exp_1/orders.csv",
        "upload_id": "u-1",
        "parts": [PartRecord(number=1, etag='"e1"')],
        "rows": 10,
        "bytes": 5_242_900,
        "sha256": {"words": [0] * 8, "length_bits": 0, "pending": ""},
        "cursor": {"day": "2025-03-01", "skip": 3, "last_order_id": "ORD-1"},
        "saved_at": datetime(2025, 3, 1, tzinfo=UTC),
    }
    return ExportCheckpoint(**(fields | changes))


def test_a_checkpoint_round_trips_with_its_unsent_bytes():
    tail = bytes(range(256)) * 4
    blob = encode_checkpoint(checkpoint(), tail)
    assert decode_checkpoint(blob) == (checkpoint(), tail)


@pytest.mark.parametrize(
    "blob",
    [
        b"",
        b"something else",
        encode_checkpoint(checkpoint(), b"")[:40],
        b"exports-checkpoint/1\n" + b"\0" * 7 + b"\5{}",
    ],
)
def test_what_is_not_a_checkpoint_is_refused(blob):
    with pytest.raises(ValueError):
        decode_checkpoint(blob)


def test_fingerprints_ignore_key_order_and_see_values():
    assert fingerprint({"a": 1, "b": [1, 2]}) == fingerprint({"b": [1, 2], "a": 1})
    assert fingerprint({"a": 1}) != fingerprint({"a": 2})
