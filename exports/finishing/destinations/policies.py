"""The IAM documents an S3 destination's customer pastes into their account: the role's trust
policy (our principal, only with this destination's ExternalId) and its permissions (write and
remove objects under the prefix, and use the bucket's KMS key when it has one)."""

from __future__ import annotations

from typing import Any

from exports.finishing.destinations.model import S3Target, ServerSideEncryption


def trust_policy(target: S3Target, principal_arn: str) -> dict[str, Any]:
    """Lets ``principal_arn`` (the role our deliveries run as) assume the customer's role, with the
    destination's ExternalId only."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"AWS": principal_arn},
                "Action": "sts:AssumeRole",
                "Condition": {"StringEquals": {"sts:ExternalId": target.external_id}},
            }
        ],
    }


def permissions_policy(target: S3Target) -> dict[str, Any]:
    """What the customer's role needs: put (a file, its checksum) and delete (the verify probe)
    under the prefix, nothing else of the bucket; with SSE-KMS, the key's data keys."""
    partition = target.role_arn.split(":")[1]
    statements: list[dict[str, Any]] = [
        {
            "Effect": "Allow",
            "Action": ["s3:PutObject", "s3:DeleteObject"],
            "Resource": f"arn:{partition}:s3:::{target.bucket}/{target.prefix}*",
        }
    ]
    if target.server_side_encryption is ServerSideEncryption.SSE_KMS:
        statements.append(
            {"Effect": "Allow", "Action": ["kms:GenerateDataKey", "kms:Decrypt"], "Resource": target.kms_key_arn}
        )
    return {"Version": "2012-10-17", "Statement": statements}
