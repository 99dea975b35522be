"""The checkpoint of an export that continues in a new worker invocation.

It holds everything the next invocation needs to append to the same file: the multipart upload
(id, parts sent with their ETags), the counts so far, the running sha256 and gzip states, the
source's cursor, and the bytes written but not yet sent (less than one part, since S3 parts but
the last must be at least 5 MiB). It is stored as one object: a magic line, the JSON of
:class:`ExportCheckpoint`, then those bytes.
"""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

MAGIC = b"exports-checkpoint/1\n"
_LENGTH = struct.Struct(">Q")


class PartRecord(BaseModel):
    """One part already uploaded."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    number: int
    etag: str


class ExportCheckpoint(BaseModel):
    """Where a suspended export stands."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    version: Literal[1] = 1
    task_id: str
    # What the file is made of (type, format, filters, columns): a checkpoint only fits the same.
    fingerprint: str
    key: str
    upload_id: str
    parts: list[PartRecord]
    rows: int
    bytes: int
    sha256: dict[str, Any]
    gzip: dict[str, Any] | None = None
    cursor: dict[str, Any] | None = None
    saved_at: datetime
    # The rows the export is measured against (its source's count): the next invocation goes on
    # with it instead of counting again.
    expected_rows: int | None = None


def fingerprint(values: dict[str, Any]) -> str:
    """A stable digest of JSON-ready ``values``."""
    return hashlib.sha256(json.dumps(values, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def encode_checkpoint(checkpoint: ExportCheckpoint, tail: bytes) -> bytes:
    """The stored form: magic, length of the JSON, the JSON, the unsent bytes."""
    document = checkpoint.model_dump_json().encode()
    return MAGIC + _LENGTH.pack(len(document)) + document + tail


def decode_checkpoint(blob: bytes) -> tuple[ExportCheckpoint, bytes]:
    """The checkpoint and the unsent bytes; ``ValueError`` if ``blob`` is not one."""
    if not blob.startswith(MAGIC) or len(blob) < len(MAGIC) + _LENGTH.size:
        raise ValueError("not an export checkpoint")
    start = len(MAGIC) + _LENGTH.size
    (length,) = _LENGTH.unpack_from(blob, len(MAGIC))
    if start + length > len(blob):
        raise ValueError("truncated export checkpoint")
    try:
        checkpoint = ExportCheckpoint.model_validate_json(blob[start : start + length])
    except ValidationError as error:
        raise ValueError(f"invalid export checkpoint: {error.error_count()} errors") from error
    return checkpoint, blob[start + length :]


def part_records(parts: Sequence[tuple[int, str]]) -> list[PartRecord]:
    """Parts as (number, ETag) pairs, as records."""
    return [PartRecord(number=number, etag=etag) for number, etag in parts]
