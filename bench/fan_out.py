"""The fan-out case: one export written by 1, 2 and 4 partitions at once, one process each, and
assembled into one file; wall time per format and its ratio to one partition, in one run.

Each partition generates its share of the bench's rows (the same rows as ``bench.cases``, in
pages of 1,000) and writes it through the service's fan-out path
(:mod:`exports.running.fan_out.partition`, :mod:`exports.running.fan_out.assemble`) into a file-backed multipart
upload (a file per part); the assembler then uploads the joins, "completes" the upload (the
parts concatenated in number order) and hashes the completed file, as it reads an S3 object
back. The time runs from the partitions' start (their processes already forked) to the sha256;
the CPU seconds of every process are shown next to it (on a shared machine the wall time also
shows others' load). The CSV's sha256 is the same for every partition count (the file is the
same, byte for byte); csv.gz and XLSX are checked by length only here
(tests/processes/test_partitioned.py checks their contents).

On this machine's 2 cores the best a ratio can be is 0.5 at 2 partitions, and 4 partitions
share the same 2 cores (the ratio shows the overhead of more, smaller partitions); on Lambda
each partition has its own function, so the ratio at N partitions tends to 1/N plus the
assembly (joins and one read of the file) over the single worker's time.

``python -m bench.fan_out [--rows 5000000]``; ``make bench`` runs it after
the writer cases.
"""

from __future__ import annotations

import argparse
import multiprocessing
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Final

from bench.cases import PAGE_ROWS, page
from examples.demo_plugins.orders import ORDER_COLUMNS
from exports.running.fan_out.assemble import assemble
from exports.running.formats.csv import upload_csv_partition
from exports.running.formats.split import PartitionResult
from exports.running.formats.xlsx import upload_xlsx_partition
from exports.running.writers.cells import WIDTH_SAMPLE_ROWS, fitted_widths
from exports.running.writers.partitioned_csv import csv_glue
from exports.running.writers.partitioned_xlsx import XlsxLayout, plan_sheets, xlsx_glue

FORMATS: Final = ("csv", "csv.gz", "xlsx")
PARTITIONS: Final = (1, 2, 4)
_CHUNK_BYTES: Final = 1024 * 1024


class FileUpload:
    """A multipart upload whose parts are files in ``folder``, named by their numbers; completing
    concatenates them, in number order, into ``target``."""

    upload_id = "bench"

    def __init__(self, folder: Path, target: Path) -> None:
        self.folder = folder
        self.target = target

    @property
    def parts(self) -> list[tuple[int, str]]:
        """The parts in the folder, their "ETag" their number."""
        return [(int(part.name), str(int(part.name))) for part in sorted(self.folder.iterdir())]

    def upload_part(self, data: bytes) -> None:
        """Write the next part."""
        self.upload_part_number(len(self.parts) + 1, data)

    def upload_part_number(self, number: int, data: bytes) -> str:
        """Write part ``number``; its "ETag" is its number."""
        (self.folder / f"{number:05d}").write_bytes(data)
        return str(number)

    def complete(self) -> None:
        """Write the file from its parts."""
        with self.target.open("wb") as out:
            for part in sorted(self.folder.iterdir()):
                with part.open("rb") as source:
                    shutil.copyfileobj(source, out)

    def abort(self) -> None:
        """Drop the parts."""
        for part in self.folder.iterdir():
            part.unlink()

    def read_back(self) -> Iterator[bytes]:
        """The completed file, in chunks."""
        with self.target.open("rb") as source:
            while chunk := source.read(_CHUNK_BYTES):
                yield chunk


def _sizes(rows: int, partitions: int) -> list[int]:
    return [rows // partitions + (index < rows % partitions) for index in range(partitions)]


def _pages(first: int, last: int) -> Iterator[list[tuple[Any, ...]]]:
    for start in range(first, last, PAGE_ROWS):
        yield page(start, min(start + PAGE_ROWS, last))


def _partition(
    fmt: str, partition: int, sizes: list[int], layout: XlsxLayout | None, folder: str
) -> tuple[PartitionResult, float]:
    """One partition's worker (in its own process); its result and the CPU seconds it took."""
    started = time.process_time()
    first = sum(sizes[:partition])
    pages = _pages(first, first + sizes[partition])
    upload = FileUpload(Path(folder), Path(folder).parent / f"file.{fmt}")
    if layout is not None:
        result = upload_xlsx_partition(upload, layout, partition, pages)
    else:
        result = upload_csv_partition(
            upload, ORDER_COLUMNS, partition, len(sizes), pages, gzip=fmt == "csv.gz", bom=True
        )
    return result, time.process_time() - started


def _ready() -> None:
    """Nothing: run once per worker process so that they exist before the clock starts."""


def run_once(fmt: str, rows: int, partitions: int, folder: Path) -> dict[str, Any]:
    """``rows`` rows in ``fmt`` by ``partitions`` processes, assembled in ``folder``."""
    parts, target = folder / "parts", folder / f"file.{fmt}"
    parts.mkdir()
    sizes = _sizes(rows, partitions)
    layout = None
    if fmt == "xlsx":
        widths = fitted_widths(ORDER_COLUMNS, page(0, min(rows, WIDTH_SAMPLE_ROWS)))
        layout = XlsxLayout(ORDER_COLUMNS, widths, plan_sheets(sizes))
    # fork: the workers start with everything imported, as warm functions would.
    with ProcessPoolExecutor(partitions, mp_context=multiprocessing.get_context("fork")) as pool:
        for ready in [pool.submit(_ready) for _ in range(partitions)]:
            ready.result()
        started, cpu_started = time.perf_counter(), time.process_time()
        futures = [pool.submit(_partition, fmt, index, sizes, layout, str(parts)) for index in range(partitions)]
        results = [future.result()[0] for future in futures]
        partitions_cpu = sum(future.result()[1] for future in futures)
        written = time.perf_counter()
        segments = [segment for result in results for segment in result.segments]
        if layout is None:
            glue = csv_glue(partitions)
        else:
            glue = xlsx_glue(layout, [piece for result in results for piece in result.pieces])
        upload = FileUpload(parts, target)
        done = assemble(upload, glue, segments, upload.read_back)
        seconds = time.perf_counter() - started
        cpu = partitions_cpu + time.process_time() - cpu_started
    assert sum(result.rows for result in results) == rows and target.stat().st_size == done.bytes
    return {
        "format": fmt,
        "partitions": partitions,
        "rows": rows,
        "seconds": seconds,
        "assemble_sec": seconds - (written - started),
        "cpu_sec": cpu,
        "bytes": done.bytes,
        "sha256": done.sha256,
    }


def measure(rows: int) -> list[dict[str, Any]]:
    """Every format at every partition count, once, each in a fresh folder."""
    results = []
    for fmt in FORMATS:
        for partitions in PARTITIONS:
            with tempfile.TemporaryDirectory(prefix="exports-fan-out-") as folder:
                result = run_once(fmt, rows, partitions, Path(folder))
            print(
                f"  fan_out {fmt:<6} {partitions} partitions  {result['seconds']:7.2f} s", file=sys.stderr, flush=True
            )
            results.append(result)
    csv_hashes = {result["sha256"] for result in results if result["format"] == "csv"}
    assert len(csv_hashes) == 1, "the CSV differs with the partition count"
    return results


def report(results: list[dict[str, Any]]) -> None:
    """The table: per format and partition count, the time and its ratio to one partition."""
    single = {result["format"]: result["seconds"] for result in results if result["partitions"] == 1}
    print()
    print("| fan-out | partitions | rows | seconds | of which assembly | CPU s | rows/s | file MiB | vs 1 partition |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for result in results:
        ratio = result["seconds"] / single[result["format"]]
        print(
            f"| {result['format']} | {result['partitions']} | {result['rows']:,} | {result['seconds']:.2f} |"
            f" {result['assemble_sec']:.2f} | {result['cpu_sec']:.2f} | {result['rows'] / result['seconds']:,.0f} |"
            f" {result['bytes'] / 2**20:.1f} | {ratio:.2f}x |"
        )
    print()
    print(
        f"(ratios on {multiprocessing.cpu_count()} cores: at best 1/min(partitions, cores); CPU s: every process"
        " together, the work a partition count costs whatever the machine's load)"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.fan_out", description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5_000_000, help="rows of the export")
    report(measure(parser.parse_args(argv).rows))


if __name__ == "__main__":
    main()
