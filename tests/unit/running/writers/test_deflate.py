"""Raw deflate in segments: the CRC-32 combination, and segments compressed apart that
concatenate into one valid deflate stream."""

import random
import zlib

import pytest

from exports.running.writers.deflate import DeflateLevel, DeflateLibrary, RawDeflate, crc32_combine
from exports.running.writers.gzip_stream import GZIP_LEVEL
from exports.running.writers.xlsx_engine.workbook import ZIP_LEVEL


@pytest.mark.parametrize("seed", range(20))
def test_combined_crc_is_the_crc_of_the_concatenation(seed):
    rng = random.Random(seed)
    first, second = rng.randbytes(rng.randrange(0, 5000)), rng.randbytes(rng.randrange(0, 5000))

    assert crc32_combine(zlib.crc32(first), zlib.crc32(second), len(second)) == zlib.crc32(first + second)


def test_combined_crc_over_long_and_empty_pieces():
    long = bytes(9 * 2**20) + b"end"

    assert crc32_combine(zlib.crc32(b"abc"), zlib.crc32(long), len(long)) == zlib.crc32(b"abc" + long)
    assert crc32_combine(zlib.crc32(b"abc"), 0, 0) == zlib.crc32(b"abc")
    assert crc32_combine(0, zlib.crc32(b"abc"), 3) == zlib.crc32(b"abc")


@pytest.mark.parametrize("library", list(DeflateLibrary))
def test_segments_deflated_apart_inflate_as_one_stream(library):
    pieces = [b"<row>%d</row>" % n * 500 for n in range(4)]
    stream, crc = b"", 0
    for index, piece in enumerate(pieces):
        deflate = RawDeflate(DeflateLevel(library, 2))
        body = deflate.compress(piece)
        body += deflate.flush(zlib.Z_FINISH if index == len(pieces) - 1 else zlib.Z_SYNC_FLUSH)
        stream += body
        crc = crc32_combine(crc, deflate.crc32, deflate.size)

    inflate = zlib.decompressobj(-zlib.MAX_WBITS)
    assert inflate.decompress(stream) == b"".join(pieces)
    assert inflate.eof and not inflate.unused_data
    assert crc == zlib.crc32(b"".join(pieces))


@pytest.mark.parametrize("level", [ZIP_LEVEL, GZIP_LEVEL])
def test_segments_at_the_levels_in_use_are_what_the_standard_zlib_inflates(level):
    rng = random.Random(level.level)
    words = ['<c r="A1"><v>', "王芳", "</v></c>", "1.25", "Noah Müller", '<row r="7">']
    pieces = ["".join(rng.choice(words) for _ in range(rng.randrange(1, 40_000))).encode() for _ in range(5)]
    stream, crc, size = b"", 0, 0
    for index, piece in enumerate(pieces):
        # Each segment as another process deflates it: a compressor of its own, the counts carried on.
        deflate = RawDeflate(level)
        stream += deflate.compress(piece[: len(piece) // 2]) + deflate.compress(memoryview(piece)[len(piece) // 2 :])
        stream += deflate.flush(zlib.Z_FINISH if index == len(pieces) - 1 else zlib.Z_SYNC_FLUSH)
        crc, size = crc32_combine(crc, deflate.crc32, deflate.size), size + deflate.size

    whole = b"".join(pieces)
    inflate = zlib.decompressobj(-zlib.MAX_WBITS)
    assert inflate.decompress(stream) == whole and inflate.eof and not inflate.unused_data
    assert (crc, size) == (zlib.crc32(whole), len(whole))
