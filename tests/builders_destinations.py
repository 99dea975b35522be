"""Builders of valid destinations of each kind, for the destination tests."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from exports.finishing.destinations.kinds.s3 import S3Target
from exports.finishing.destinations.kinds.sftp import SftpAuth, SftpTarget
from exports.finishing.destinations.model import Destination, DestinationState, Encryption

NOW = datetime(2026, 12, 6, 9, tzinfo=UTC)
HOST_KEY = "SHA256:" + "A" * 43
PUBLIC_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGRlc3RpbmF0aW9uLWtleS1mb3ItdGVzdHMtb25seQ== dst"


def destination_id(n: int) -> str:
    """A valid, time-sortable id: a larger ``n`` is newer."""
    return f"dst_01JNCS6Z0000000000000000{n:02d}"


def s3_target(**changes: Any) -> S3Target:
    values: dict[str, Any] = {
        "bucket": "acme-exports",
        "prefix": "daily/",
        "region": "eu-west-1",
        "role_arn": "arn:aws:iam::210987654321:role/exports-delivery",
        "external_id": "9f2c" * 12,
    }
    return S3Target.model_validate({**values, **changes})


def sftp_target(**changes: Any) -> SftpTarget:
    values: dict[str, Any] = {
        "host": "sftp.acme.example",
        "username": "exports",
        "path": "/upload",
        "auth": SftpAuth.KEY,
        "host_key_fingerprint": HOST_KEY,
        "public_key": PUBLIC_KEY,
    }
    return SftpTarget.model_validate({**values, **changes})


def destination(n: int = 1, tenant: str = "acme", **changes: Any) -> Destination:
    """An S3 destination ``n`` of ``tenant``, with ``changes``."""
    values: dict[str, Any] = {
        "destination_id": destination_id(n),
        "tenant": tenant,
        "name": f"Warehouse {n}",
        "target": s3_target(),
        "encryption": Encryption(),
        "state": DestinationState.ACTIVE,
        "created_by": "alice",
        "created_at": NOW,
        "updated_at": NOW,
    }
    return Destination.model_validate({**values, **changes})
