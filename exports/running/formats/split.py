"""How a format is written in partitions at once (:mod:`exports.running.fan_out`): the plan's layout, one
partition's segments, and the glue the assembler writes between them (docs/fan-out.md).

A format that splits gives its :class:`~exports.running.formats.spec.FormatSpec` a :class:`SplitLayout`;
the fan-out's steps ask it and never name a format.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from exports.core.export_type import Column, Row
from exports.core.ports import ResultUpload
from exports.core.task import Task
from exports.running.writers.partitioned import DeflatedPiece, SheetPiece
from exports.running.writers.segment_upload import SegmentUpload


@dataclass(frozen=True)
class FileLayout:
    """What a split file's partitions and assembler share besides the rows, fixed by the plan:
    a workbook's column widths and sheet pieces; nothing for CSV."""

    widths: Sequence[int] = ()
    pieces: Sequence[SheetPiece] = ()


@dataclass(frozen=True)
class FirstRows:
    """The export's first rows and its columns, in the task's zone (what a layout may fit to)."""

    columns: Sequence[Column]
    rows: Sequence[Row]


@dataclass(frozen=True)
class PartitionResult:
    """What one partition hands to the assembler: its rows, its segments as uploaded and, for
    XLSX, its pieces' CRC-32s and lengths (one per segment)."""

    rows: int
    segments: tuple[SegmentUpload, ...]
    pieces: tuple[DeflatedPiece, ...] = ()


@dataclass(frozen=True)
class PartitionWrite:
    """One partition to write: its rows (``pages``, in the task's zone) into numbered parts of the
    file's one ``upload``; ``before_part`` runs before each part (it stops a task that ended)."""

    task: Task
    upload: ResultUpload
    columns: Sequence[Column]
    layout: FileLayout
    partition: int
    partitions: int
    pages: Iterable[Sequence[Row]]
    part_bytes: int
    before_part: Callable[[], None]


class SplitLayout(Protocol):
    """A format's bytes cut in segments written apart and joined by glue (exports.running.writers.partitioned)."""

    def plan(self, first_rows: Callable[[], FirstRows], partition_rows: Sequence[int]) -> FileLayout:
        """The layout of a file whose partitions have ``partition_rows`` rows; ``first_rows``
        reads the export's columns and first rows, for a layout that needs them."""
        ...

    def write_partition(self, part: PartitionWrite) -> PartitionResult:
        """Write and upload one partition's segments."""
        ...

    def glue(self, layout: FileLayout, results: Sequence[PartitionResult]) -> list[bytes]:
        """The bytes around the segments of ``results`` (every partition's, in file order)."""
        ...
