"""One lazy, cached factory for boto3 clients.

Clients are built on first use, never at import, so a client cannot escape a test's mock and
cold starts pay only for the clients a function uses. ``AWS_ENDPOINT_URL`` (read by boto3
itself) points every client at the local stack in local mode.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import boto3
from botocore.config import Config

_CONFIG = Config(retries={"mode": "standard", "max_attempts": 3}, connect_timeout=5, read_timeout=30)


# Presigned download links use Signature Version 4: S3 no longer accepts version 2 everywhere.
_SERVICE_CONFIG = {"s3": _CONFIG.merge(Config(signature_version="s3v4"))}


@cache
def aws_client(service: str) -> Any:
    """The shared client for ``service`` (e.g. ``"dynamodb"``)."""
    return boto3.session.Session().client(service, config=_SERVICE_CONFIG.get(service, _CONFIG))
