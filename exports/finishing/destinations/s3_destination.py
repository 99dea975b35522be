"""S3 destinations: assume the customer's role with the destination's ExternalId, then write to
their bucket with those credentials. STS's and S3's refusals become the customer's sentences of
:mod:`exports.finishing.destinations.problems` here, and only here."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from exports.core.aws.errors import AwsError, translated
from exports.core.config.destinations import Destinations
from exports.core.errors import RetryableError
from exports.finishing.destinations.model import Destination, S3Target, ServerSideEncryption
from exports.finishing.destinations.problems import DestinationProblem, ProblemStep, s3_problem
from exports.finishing.destinations.secrets import DestinationSecrets

if TYPE_CHECKING:
    from types_boto3_s3 import S3Client

# S3's answers for a bucket that is not there, or not in the region asked.
_NO_BUCKET = frozenset(
    {"NoSuchBucket", "PermanentRedirect", "AuthorizationHeaderMalformed", "IllegalLocationConstraintException"}
)
_DENIED = frozenset({"AccessDenied", "AllAccessDisabled", "KMS.DisabledException", "KMS.NotFoundException"})
# How long the assumed credentials last: STS's minimum; a delivery or a probe needs far less.
SESSION_SEC = 900


class S3Destinations:
    """The S3 :class:`exports.finishing.destinations.ports.DestinationProbe`, and the customer's bucket
    as the role sees it."""

    def __init__(self, sts: Any, assumed_s3: Callable[[str, Mapping[str, str]], S3Client]) -> None:
        self._sts = sts
        self._assumed_s3 = assumed_s3

    def bucket_client(self, destination: Destination) -> tuple[S3Target, S3Client]:
        """The destination's target and an S3 client acting as its role."""
        target = destination.target
        if not isinstance(target, S3Target):
            raise ValueError("an S3 destination")
        try:
            with translated("assume destination role"):
                assumed = self._sts.assume_role(
                    RoleArn=target.role_arn,
                    RoleSessionName=f"exports-{destination.destination_id}",
                    ExternalId=target.external_id,
                    DurationSeconds=SESSION_SEC,
                )
        except RetryableError:
            raise _problem(ProblemStep.TCP, target) from None
        except AwsError:
            raise _problem(ProblemStep.AUTH, target) from None
        return target, self._assumed_s3(target.region, assumed["Credentials"])

    def probe(self, destination: Destination, secrets_: DestinationSecrets | None) -> None:
        """Put an empty probe object under the prefix (with the bucket's encryption), delete it."""
        target, bucket = self.bucket_client(destination)
        key = target.prefix + Destinations.PROBE_FILE_PREFIX + secrets.token_hex(8)
        try:
            with translated("put probe object"):
                bucket.put_object(Bucket=target.bucket, Key=key, Body=b"", **encryption_arguments(target))
            with translated("delete probe object"):
                bucket.delete_object(Bucket=target.bucket, Key=key)
        except RetryableError:
            raise _problem(ProblemStep.TCP, target) from None
        except AwsError as error:
            step = ProblemStep.PATH if error.aws_code in _NO_BUCKET else ProblemStep.PERMISSION
            raise _problem(step, target) from None


def encryption_arguments(target: S3Target) -> dict[str, Any]:
    """PutObject's server-side encryption as the bucket requires."""
    if target.server_side_encryption is ServerSideEncryption.SSE_KMS:
        assert target.kms_key_arn is not None  # validated
        return {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": target.kms_key_arn}
    return {"ServerSideEncryption": "AES256"}


def _problem(step: ProblemStep, target: S3Target) -> DestinationProblem:
    return s3_problem(step, target.bucket, target.prefix, target.role_arn)
