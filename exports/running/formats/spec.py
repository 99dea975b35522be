"""What the service knows of one file format: :class:`FormatSpec`, one per format module."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from exports.core.task import ExportFormat, ExportResult, Task
from exports.running.formats.run import ExportRun, HandedOver
from exports.running.formats.split import SplitLayout
from exports.running.writers.zones import ZoneStyle


@dataclass(frozen=True)
class FormatSpec:
    """One file format: its name, download name and type, its writer, how it writes instants in
    a time zone, and whether a long export of it continues in a new invocation or splits."""

    format: ExportFormat
    # The download name's extension (after the type's file stem).
    extension: str
    content_type: str
    # Writes the file of one run (exports.running.formats.run.ExportRun).
    write: Callable[[ExportRun], ExportResult | HandedOver]
    zone_style: ZoneStyle
    # A long export of it hands over to a new invocation from a checkpoint (else it must fit
    # in one invocation, and stops in time when it does not).
    resumable: bool = False
    # How the fan-out writes it in partitions at once; None: one worker writes it.
    split: SplitLayout | None = None
    # The content type of one task's file, when its options change it (a CSV's charset).
    task_content_type: Callable[[Task], str] | None = None

    def content_type_of(self, task: Task) -> str:
        """The content type of ``task``'s file."""
        return self.content_type if self.task_content_type is None else self.task_content_type(task)

    @property
    def splittable(self) -> bool:
        """Whether the fan-out may write it in partitions at once."""
        return self.split is not None
