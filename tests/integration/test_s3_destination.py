"""The S3 kind's adapter against moto: a file past the multipart size goes up in parts and
appears whole with its sha256 metadata and the bucket's encryption; a bucket that is not there
is the customer's PATH sentence, and no upload is left behind."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import boto3
import pytest

from exports.finishing.destinations.kinds.s3 import S3Destinations, S3Target, permissions_policy
from exports.finishing.destinations.problems import DestinationProblem, ProblemStep
from tests.integration.conftest import Resources

REGION = "us-east-1"
PRINCIPAL = "arn:aws:iam::123456789012:role/exports-callback"
# S3's smallest part (every part but the last): the adapter's size, lowered for the test.
PART = 5 * 1024 * 1024


def _target(bucket: str) -> S3Target:
    return S3Target(
        bucket=bucket,
        prefix="drop/",
        region=REGION,
        role_arn="arn:aws:iam::210987654321:role/exports-delivery",
        external_id="9f2c" * 12,
    )


def _adapter() -> S3Destinations:
    def assumed(region: str, credentials: Mapping[str, str]) -> Any:
        return boto3.client(
            "s3",
            region_name=region,
            aws_access_key_id=credentials["AccessKeyId"],
            aws_secret_access_key=credentials["SecretAccessKey"],
            aws_session_token=credentials["SessionToken"],
        )

    return S3Destinations(boto3.client("sts", region_name=REGION), assumed, PRINCIPAL, multipart_bytes=PART)


def test_a_file_past_the_multipart_size_arrives_whole_in_parts_with_its_sha256(aws: Resources, tmp_path: Path) -> None:
    s3 = boto3.client("s3", region_name=REGION)
    s3.create_bucket(Bucket="acme-lake")
    local = tmp_path / "orders.csv"
    local.write_bytes(os.urandom(2 * PART + 1234))
    digest = hashlib.sha256(local.read_bytes()).hexdigest()
    target = _target("acme-lake")

    _adapter().put("dst_1", target, None, local, target.remote_path("orders.csv"), digest)

    head = s3.head_object(Bucket="acme-lake", Key="drop/orders.csv")
    assert head["ETag"].strip('"').endswith("-3")  # three parts, completed as one object
    assert head["Metadata"] == {"sha256": digest} and head["ServerSideEncryption"] == "AES256"
    body = s3.get_object(Bucket="acme-lake", Key="drop/orders.csv")["Body"].read()
    assert hashlib.sha256(body).hexdigest() == digest
    assert s3.list_multipart_uploads(Bucket="acme-lake").get("Uploads", []) == []


def test_a_bucket_that_is_not_there_is_the_customers_path_problem(aws: Resources, tmp_path: Path) -> None:
    local = tmp_path / "orders.csv"
    local.write_bytes(os.urandom(PART + 1))
    target = _target("not-there-bucket")

    with pytest.raises(DestinationProblem) as refused:
        _adapter().put("dst_1", target, None, local, target.remote_path("orders.csv"), "0" * 64)

    assert refused.value.step is ProblemStep.PATH and "not-there-bucket" in refused.value.message


def test_the_role_the_customer_pastes_may_abort_what_a_failed_upload_left() -> None:
    (statement,) = permissions_policy(_target("acme-lake"))["Statement"]
    assert statement["Action"] == ["s3:PutObject", "s3:AbortMultipartUpload", "s3:DeleteObject"]
    assert statement["Resource"] == "arn:aws:s3:::acme-lake/drop/*"
