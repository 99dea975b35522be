"""The formats' registry: the member of :class:`~exports.core.task.ExportFormat` is a format's
only registration, its module (``exports.running.formats.<member name in lower case>``) its only home.

A format's module is imported the first time a run asks for it, so a worker loads the writers of
the formats it writes and no others (pyarrow, fontTools, the XLSX engine each cost at cold start).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from functools import cache

from exports.core.task import ExportFormat
from exports.running.formats.spec import FormatSpec


def format_module(export_format: ExportFormat) -> str:
    """The name of ``export_format``'s module."""
    return f"{__package__}.{export_format.name.lower()}"


@cache
def format_spec(export_format: ExportFormat) -> FormatSpec:
    """What the service knows of ``export_format`` (its module's ``SPEC``)."""
    spec = getattr(importlib.import_module(format_module(export_format)), "SPEC", None)
    if not isinstance(spec, FormatSpec) or spec.format is not export_format:
        raise LookupError(f"{format_module(export_format)} has no SPEC of format {export_format.value}")
    return spec


def every_format() -> Mapping[ExportFormat, FormatSpec]:
    """Every format's spec, in the enum's order (imports every format's module)."""
    return {export_format: format_spec(export_format) for export_format in ExportFormat}
