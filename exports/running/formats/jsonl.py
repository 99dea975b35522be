"""JSON Lines: one JSON object per row (docs/export-types.md, "JSON Lines and Parquet"); it
continues from a checkpoint like CSV. Not split (docs/fan-out.md, "Formats that do not split"):
JSON Lines continues from checkpoints instead."""

from __future__ import annotations

from exports.core.errors import ExportFailed
from exports.core.task import ExportFormat
from exports.running.formats.lines import LineWriter, RowStream
from exports.running.formats.run import ExportRun
from exports.running.formats.spec import FormatSpec
from exports.running.writers import jsonl_writer
from exports.running.writers.byte_sink import ByteStream
from exports.running.writers.zones import ZoneStyle, jsonl_text

# A JSON column's value that is no JSON text (a declared kind over other text).
JSON_VALUE_INVALID = "JSON_VALUE_INVALID"


def jsonl_stream(run: ExportRun, out: ByteStream, _fresh: bool) -> RowStream:
    """The rows as JSON objects into ``out`` (no header: a continued file starts alike)."""
    return jsonl_writer.JsonlStream(run.columns, out)


def invalid_json(error: Exception, rows: int) -> ExportFailed | None:
    """The export's error for a json column holding other text."""
    if not isinstance(error, jsonl_writer.InvalidJson):
        return None
    return ExportFailed(f"{error} after {rows} rows: a column of kind json holds other text", code=JSON_VALUE_INVALID)


def jsonl_format(gzip: bool) -> FormatSpec:
    """JSON Lines, or (``gzip``) jsonl.gz."""
    return FormatSpec(
        format=ExportFormat.JSONL_GZ if gzip else ExportFormat.JSONL,
        extension="jsonl.gz" if gzip else "jsonl",
        content_type=jsonl_writer.GZIP_CONTENT_TYPE if gzip else jsonl_writer.CONTENT_TYPE,
        write=LineWriter(jsonl_stream, gzip=gzip, refused=invalid_json),
        zone_style=ZoneStyle(jsonl_text),
        resumable=True,
    )


SPEC = jsonl_format(gzip=False)
