"""A file written by 1 and 4 partitions at once (uploaded in reverse order) as the parts of
one S3 multipart upload on moto: a real completed object equal to the single worker's file
(CSV byte for byte, csv.gz inflated, XLSX entry for entry), every part but the last at least
5 MiB (moto refuses smaller ones, as S3 does), its sha256, bytes and rows right, and no upload
left open."""

import base64
import gzip
import hashlib
import io
import random
import zipfile
from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws

from exports.core.aws.s3_results import S3ResultStore
from exports.core.export_type import Column, ColumnKind
from exports.running.fan_out.assemble import assemble
from exports.running.formats.csv import upload_csv_partition
from exports.running.formats.xlsx import upload_xlsx_partition
from exports.running.writers.cells import WIDTH_SAMPLE_ROWS, fitted_widths
from exports.running.writers.csv_writer import write_csv
from exports.running.writers.partitioned_csv import csv_glue
from exports.running.writers.partitioned_xlsx import XlsxLayout, plan_sheets, xlsx_glue
from exports.running.writers.sink import MIN_PART_BYTES
from exports.running.writers.xlsx_engine import write_xlsx_stream

BUCKET = "fan-out-results"
COLUMNS = [Column("n", "N", ColumnKind.INTEGER), Column("text", "Text", width=40)]
# ~24 MB of CSV, ~19 MB of XLSX: several 5 MiB parts. Of the 4 partitions' CSV, one fills more
# than a part, one is too small for a part and one is empty: every case a split in 2 would add.
ROWS_TOTAL = 90_000
SIZES = {1: [90_000], 4: [35_000, 10_000, 0, 45_000]}
# A sheet boundary inside partitions, and on none of their edges.
SHEET_ROWS = 25_000


@pytest.fixture(scope="module")
def rows():
    rng = random.Random(17)
    return [(n, base64.b64encode(rng.randbytes(192)).decode()) for n in range(ROWS_TOTAL)]


@pytest.fixture
def store() -> Iterator[S3ResultStore]:
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        yield S3ResultStore(client, BUCKET)


def pages_of(rows, sizes, partition):
    start = sum(sizes[:partition])
    part = rows[start : start + sizes[partition]]
    return (part[i : i + 1000] for i in range(0, len(part), 1000))


def fan_out(store, key, sizes, write_partition, glue_of):
    """Partitions uploaded last first, then assembled; the object, the result and the parts."""
    upload = store.start_upload(key, "application/octet-stream", "file", {})
    results = {}
    for partition in reversed(range(len(sizes))):
        worker_upload = store.resume_upload(key, upload.upload_id, ())
        results[partition] = write_partition(worker_upload, partition)
        assert results[partition].rows == sizes[partition]
    in_order = [results[partition] for partition in range(len(sizes))]
    segments = [segment for result in in_order for segment in result.segments]
    sent = [part for segment in segments for part in segment.parts]
    assembler = store.resume_upload(key, upload.upload_id, sent)
    done = assemble(assembler, glue_of(in_order), segments, lambda: store.read_result(key))
    body = b"".join(store.read_result(key))
    client = store._client
    assert not client.list_multipart_uploads(Bucket=BUCKET).get("Uploads")
    numbers = sorted(number for number, _ in assembler.parts)
    assert client.head_object(Bucket=BUCKET, Key=key, PartNumber=numbers[0]).get("PartsCount", 1) == len(numbers)
    sizes_of_parts = [
        client.head_object(Bucket=BUCKET, Key=key, PartNumber=number)["ContentLength"] for number in numbers
    ]
    return body, done, sizes_of_parts


def check(body, done, part_sizes):
    assert done.bytes == len(body)
    assert done.sha256 == hashlib.sha256(body).hexdigest()
    assert sum(part_sizes) == len(body)
    assert all(size >= MIN_PART_BYTES for size in part_sizes[:-1])


def single_csv(rows):
    out = io.BytesIO()
    write_csv(COLUMNS, rows, out, bom=True)
    return out.getvalue()


@pytest.mark.parametrize("partitions", sorted(SIZES))
@pytest.mark.parametrize("compressed", [False, True], ids=["csv", "csv.gz"])
def test_csv_fanned_out_on_s3_is_the_single_workers_file(store, rows, partitions, compressed):
    sizes = SIZES[partitions]

    def write_partition(upload, partition):
        return upload_csv_partition(
            upload,
            COLUMNS,
            partition,
            partitions,
            pages_of(rows, sizes, partition),
            gzip=compressed,
            bom=True,
            part_bytes=MIN_PART_BYTES,
        )

    body, done, part_sizes = fan_out(store, "out.csv", sizes, write_partition, lambda _: csv_glue(partitions))

    check(body, done, part_sizes)
    assert (gzip.decompress(body) if compressed else body) == single_csv(rows)
    assert len(part_sizes) > 1 or compressed  # csv.gz of 4 partitions: none fills a part


@pytest.mark.parametrize("partitions", sorted(SIZES))
def test_xlsx_fanned_out_on_s3_is_the_single_workers_workbook(store, rows, partitions):
    sizes = SIZES[partitions]
    layout = XlsxLayout(COLUMNS, fitted_widths(COLUMNS, rows[:WIDTH_SAMPLE_ROWS]), plan_sheets(sizes, SHEET_ROWS))

    def write_partition(upload, partition):
        return upload_xlsx_partition(upload, layout, partition, pages_of(rows, sizes, partition), MIN_PART_BYTES)

    def glue_of(results):
        return xlsx_glue(layout, [piece for result in results for piece in result.pieces])

    body, done, part_sizes = fan_out(store, "out.xlsx", sizes, write_partition, glue_of)

    check(body, done, part_sizes)
    single = io.BytesIO()
    write_xlsx_stream(COLUMNS, rows, single, max_rows_per_sheet=SHEET_ROWS)
    ours, theirs = zipfile.ZipFile(io.BytesIO(body)), zipfile.ZipFile(single)
    assert ours.testzip() is None
    assert ours.namelist() == theirs.namelist()
    assert len([name for name in ours.namelist() if name.startswith("xl/worksheets/")]) == 4
    for name in ours.namelist():
        assert ours.read(name) == theirs.read(name), name
