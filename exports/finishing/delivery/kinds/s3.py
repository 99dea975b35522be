"""Delivery to a customer's S3 bucket through the role they made for us (assumed with the
destination's ExternalId): one PutObject, so the object appears whole or not at all, and a retry
replaces it; its sha256 is the object's ``sha256`` metadata; server-side encryption as the bucket
requires."""

from __future__ import annotations

from pathlib import Path

from exports.core.aws.errors import AwsError, translated
from exports.core.errors import RetryableError
from exports.finishing.destinations.model import Destination, S3Target
from exports.finishing.destinations.problems import DestinationProblem, ProblemStep, s3_problem
from exports.finishing.destinations.s3_destination import S3Destinations, encryption_arguments
from exports.finishing.destinations.secrets import DestinationSecrets

# S3's answers for a bucket that is not there (or not in the region asked).
_NO_BUCKET = frozenset({"NoSuchBucket", "PermanentRedirect", "AuthorizationHeaderMalformed"})


class S3Deliverer:
    """The S3 :class:`exports.finishing.delivery.kinds.FileDeliverer`."""

    def __init__(self, destinations: S3Destinations) -> None:
        self._destinations = destinations

    def remote_path(self, destination: Destination, relative_path: str) -> str:
        """The object's key: the destination's prefix, then the rendered template."""
        target = destination.target
        assert isinstance(target, S3Target)
        return target.prefix + relative_path

    def put(
        self, destination: Destination, secrets: DestinationSecrets | None, local: Path, remote: str, sha256: str
    ) -> None:
        """One PutObject of the file under the role's credentials."""
        target, bucket = self._destinations.bucket_client(destination)
        try:
            with translated("put delivered object"), local.open("rb") as body:
                bucket.put_object(
                    Bucket=target.bucket,
                    Key=remote,
                    Body=body,
                    Metadata={"sha256": sha256},
                    **encryption_arguments(target),
                )
        except RetryableError:
            raise _problem(ProblemStep.TCP, target) from None
        except AwsError as error:
            step = ProblemStep.PATH if error.aws_code in _NO_BUCKET else ProblemStep.PERMISSION
            raise _problem(step, target) from None


def _problem(step: ProblemStep, target: S3Target) -> DestinationProblem:
    return s3_problem(step, target.bucket, target.prefix, target.role_arn)
