"""The customer's side of delivery destinations for ``make run`` and the end-to-end tests: a real
SFTP server on 127.0.0.1 (asyncssh's, :mod:`local_stack.sftp_server`) with one user who logs in
with a password, and, in a second account of the embedded AWS, a bucket and the role our service
assumes to write to it (docs/destinations.md). The banner shows a working destination of each.

The embedded AWS (moto) keeps accounts apart but does not evaluate trust policies: the role's
trust policy names our principal as a customer's would, and the ExternalId each destination
generates is passed on every AssumeRole as on AWS, yet nothing here refuses a wrong one.
"""

from __future__ import annotations

import json
import secrets
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3

from local_stack.embedded_aws import REGION
from local_stack.sftp_server import LocalSftpServer, SftpUser

# The customer's AWS account, its bucket and the role it made for us.
CUSTOMER_ACCOUNT = "210987654321"
CUSTOMER_BUCKET = "customer-exports"
CUSTOMER_ROLE_NAME = "exports-delivery"
CUSTOMER_ROLE = f"arn:aws:iam::{CUSTOMER_ACCOUNT}:role/{CUSTOMER_ROLE_NAME}"
# The customer's administrator, who sets the account up (moto: any role of the account).
_CUSTOMER_ADMIN = f"arn:aws:iam::{CUSTOMER_ACCOUNT}:role/admin"
SFTP_USER = "exports"
SFTP_DIRECTORY = "/upload"


@dataclass
class CustomerSide:
    """What the customer set up: their SFTP server (its files under ``sftp.root``) and their
    bucket with the role to assume."""

    sftp: LocalSftpServer
    sftp_password: str
    bucket: str = CUSTOMER_BUCKET
    role_arn: str = CUSTOMER_ROLE

    @property
    def sftp_files(self) -> Path:
        """Where delivered files land on this machine."""
        return self.sftp.root / SFTP_DIRECTORY.lstrip("/")

    def sftp_target(self) -> dict[str, Any]:
        """The ``target`` of a POST /v1/destinations that delivers to the SFTP server."""
        return {
            "kind": "sftp",
            "host": "127.0.0.1",
            "port": self.sftp.port,
            "username": SFTP_USER,
            "path": SFTP_DIRECTORY,
            "auth": "password",
            "password": self.sftp_password,
            "host_key_fingerprint": self.sftp.fingerprint,
        }

    def s3_target(self, region: str) -> dict[str, Any]:
        """The ``target`` of a POST /v1/destinations that delivers to the customer's bucket."""
        return {"kind": "s3", "bucket": self.bucket, "region": region, "role_arn": self.role_arn}

    def stop(self) -> None:
        """Stop the SFTP server."""
        self.sftp.shutdown()


def start_customer_side(
    endpoint_url: str | None, principal_arn: str, root: Path | None = None, sftp_port: int = 0
) -> CustomerSide:
    """Start the SFTP server (files under ``root``, a fresh temporary directory by default) and
    create the customer's bucket and role (trusting ``principal_arn``) in their own account of
    the embedded AWS at ``endpoint_url`` (None: this process's moto)."""

    def make_client(service: str, **credentials: str) -> Any:
        signed = credentials or {"aws_access_key_id": "local", "aws_secret_access_key": "local"}
        return boto3.client(service, endpoint_url=endpoint_url, region_name=REGION, **signed)  # type: ignore[call-overload]

    files = root or Path(tempfile.mkdtemp(prefix="exports-sftp-"))
    (files / SFTP_DIRECTORY.lstrip("/")).mkdir(parents=True, exist_ok=True)
    password = secrets.token_urlsafe(12)
    server = LocalSftpServer(files, port=sftp_port)
    server.users[SFTP_USER] = SftpUser(password=password)
    server.start()
    credentials = make_client("sts").assume_role(RoleArn=_CUSTOMER_ADMIN, RoleSessionName="customer-setup")[
        "Credentials"
    ]
    as_customer = {
        "aws_access_key_id": credentials["AccessKeyId"],
        "aws_secret_access_key": credentials["SecretAccessKey"],
        "aws_session_token": credentials["SessionToken"],
    }
    make_client("s3", **as_customer).create_bucket(Bucket=CUSTOMER_BUCKET)
    trust = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"AWS": principal_arn}, "Action": "sts:AssumeRole"}],
    }
    make_client("iam", **as_customer).create_role(
        RoleName=CUSTOMER_ROLE_NAME, AssumeRolePolicyDocument=json.dumps(trust)
    )
    return CustomerSide(sftp=server, sftp_password=password)
