"""The ``s3`` kind: the customer's bucket, reached through a role in their account that trusts
ours with an ExternalId the service generates per destination (the confused-deputy guidance).

Everything of the kind is here: what is stored and what a request gives (bucket, prefix, region,
role, the bucket's own server-side encryption), the IAM documents the customer pastes (the
role's trust policy and its permissions), the customer's sentences for what can fail, and the
adapter: assume the role, probe with an empty object, put a file (one PutObject, or past
``Destinations.S3_MULTIPART_BYTES`` a multipart upload through boto3's transfer manager,
s3transfer: either way the object appears whole or not at all, an upload that fails is aborted,
and a retry replaces the object) carrying its sha256 as metadata.
STS's and S3's refusals become :class:`DestinationProblem` here, and only here. botocore and
s3transfer are imported where the bucket is reached: the resource's models never load them.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from exports.core.config.destinations import Destinations
from exports.core.errors import InvalidRequest, RetryableError
from exports.finishing.destinations import keys
from exports.finishing.destinations.kind import (
    Kind,
    KindContext,
    Made,
    SpecBase,
    TargetBase,
    is_ip,
    no_control,
    no_parent_segment,
)
from exports.finishing.destinations.problems import DestinationProblem, ProblemStep
from exports.finishing.destinations.secrets import DestinationSecrets

if TYPE_CHECKING:
    from types_boto3_s3 import S3Client

NAME: Final = "s3"
# S3's rules for bucket names (general purpose buckets), less the forms S3 reserves.
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_RESERVED_BUCKET_PREFIXES = ("xn--", "sthree-", "amzn-s3-demo-")
_RESERVED_BUCKET_SUFFIXES = ("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3")
_REGION = r"^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-\d{1,2}$"
# An IAM role ARN in one of the commercial, China or GovCloud partitions (a path is allowed).
_ROLE_ARN = re.compile(r"^arn:(aws|aws-cn|aws-us-gov):iam::(\d{12}):role/[\w+=,.@/-]{1,576}$")
_KMS_KEY_ARN = re.compile(r"^arn:(aws|aws-cn|aws-us-gov):kms:([a-z0-9-]+):(\d{12}):(key|alias)/[\w/+=,.@-]{1,256}$")
# S3's answers for a bucket that is not there, or not in the region asked.
_NO_BUCKET = frozenset(
    {"NoSuchBucket", "PermanentRedirect", "AuthorizationHeaderMalformed", "IllegalLocationConstraintException"}
)
# How long the assumed credentials last: STS's minimum; a delivery or a probe needs far less.
SESSION_SEC = 900


class ServerSideEncryption(StrEnum):
    """How S3 encrypts the object at rest, as the customer's bucket requires."""

    SSE_S3 = "AES256"
    SSE_KMS = "aws:kms"


class S3Location(BaseModel):
    """The customer's bucket, prefix and region, the role in their account, and the bucket's own
    encryption: what a request gives."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # The patterns are stated for clients (the validators below say what is wrong in words).
    bucket: str = Field(json_schema_extra={"pattern": _BUCKET.pattern})
    prefix: str = Field(default="", max_length=Destinations.S3_PREFIX_MAX_LENGTH)
    region: str = Field(pattern=_REGION)
    role_arn: str = Field(json_schema_extra={"pattern": _ROLE_ARN.pattern})
    server_side_encryption: ServerSideEncryption = ServerSideEncryption.SSE_S3
    # The customer's KMS key for SSE-KMS (in the bucket's region); None with SSE-S3.
    kms_key_arn: str | None = None

    @field_validator("bucket")
    @classmethod
    def _bucket(cls, bucket: str) -> str:
        if not _BUCKET.fullmatch(bucket) or ".." in bucket:
            raise ValueError("bucket must be an S3 bucket name: 3 to 63 lower-case letters, digits, dots and hyphens")
        if bucket.startswith(_RESERVED_BUCKET_PREFIXES) or bucket.endswith(_RESERVED_BUCKET_SUFFIXES):
            raise ValueError("bucket uses a prefix or suffix S3 reserves")
        if is_ip(bucket):
            raise ValueError("bucket must not be formatted as an IP address")
        return bucket

    @field_validator("prefix")
    @classmethod
    def _prefix(cls, prefix: str) -> str:
        no_control(prefix, "prefix")
        if prefix.startswith("/") or "//" in prefix:
            raise ValueError("prefix must not start with '/' or hold an empty segment ('//')")
        return no_parent_segment(prefix, "prefix")

    @field_validator("role_arn")
    @classmethod
    def _role_arn(cls, role_arn: str) -> str:
        if not _ROLE_ARN.fullmatch(role_arn):
            raise ValueError("role_arn must be an IAM role ARN (arn:aws:iam::123456789012:role/name)")
        return role_arn

    @model_validator(mode="after")
    def _kms(self) -> S3Location:
        if self.server_side_encryption is ServerSideEncryption.SSE_S3:
            if self.kms_key_arn is not None:
                raise ValueError("kms_key_arn is for server_side_encryption aws:kms only")
            return self
        match = _KMS_KEY_ARN.fullmatch(self.kms_key_arn or "")
        if match is None:
            raise ValueError("kms_key_arn must be a KMS key ARN when server_side_encryption is aws:kms")
        if match.group(2) != self.region:
            raise ValueError("kms_key_arn must be in the bucket's region")
        return self

    @property
    def account_id(self) -> str:
        """The customer's AWS account (the role's)."""
        match = _ROLE_ARN.fullmatch(self.role_arn)
        assert match is not None  # validated
        return match.group(2)


class S3TargetSpec(SpecBase, S3Location):
    """An S3 destination's bucket and role (its ExternalId is generated)."""

    kind: Literal["s3"]


class S3Target(TargetBase, S3Location):
    """The location, reached through the role with ``external_id``: generated by the service,
    never chosen by the caller (the confused-deputy guidance)."""

    kind: Literal["s3"] = NAME
    external_id: str = Field(pattern=r"^[A-Za-z0-9_+=,.@:/-]{2,1224}$")

    def remote_path(self, relative_path: str) -> str:
        """The object's key: the prefix, then the rendered template."""
        return self.prefix + relative_path


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
    """What the customer's role needs: put (a file, in parts past the multipart size), abort an
    upload that failed (so no parts are left to pay for) and delete (the verify probe) under the
    prefix, nothing else of the bucket; with SSE-KMS, the key's data keys."""
    partition = target.role_arn.split(":")[1]
    statements: list[dict[str, Any]] = [
        {
            "Effect": "Allow",
            "Action": ["s3:PutObject", "s3:AbortMultipartUpload", "s3:DeleteObject"],
            "Resource": f"arn:{partition}:s3:::{target.bucket}/{target.prefix}*",
        }
    ]
    if target.server_side_encryption is ServerSideEncryption.SSE_KMS:
        statements.append(
            {"Effect": "Allow", "Action": ["kms:GenerateDataKey", "kms:Decrypt"], "Resource": target.kms_key_arn}
        )
    return {"Version": "2012-10-17", "Statement": statements}


def s3_problem(step: ProblemStep, target: S3Location) -> DestinationProblem:
    """The customer's sentence for an S3 destination's ``step``."""
    bucket, prefix, role_arn = target.bucket, target.prefix, target.role_arn
    messages = {
        ProblemStep.AUTH: f"we could not assume {role_arn}: check that its trust policy is the one this"
        " destination shows (our principal and its ExternalId).",
        ProblemStep.PERMISSION: f"the role may not write to s3://{bucket}/{prefix}: attach the permissions"
        " policy this destination shows (s3:PutObject, s3:AbortMultipartUpload, s3:DeleteObject; the KMS"
        " key's use with SSE-KMS).",
        ProblemStep.PATH: f"the bucket {bucket} does not exist in the destination's region.",
        ProblemStep.TCP: "S3 did not answer: we will try again.",
    }
    return DestinationProblem(step, messages[step])


def encryption_arguments(target: S3Target) -> dict[str, Any]:
    """PutObject's server-side encryption as the bucket requires."""
    if target.server_side_encryption is ServerSideEncryption.SSE_KMS:
        assert target.kms_key_arn is not None  # validated
        return {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": target.kms_key_arn}
    return {"ServerSideEncryption": "AES256"}


class S3Destinations:
    """The kind's adapter: the customer's bucket as their role sees it."""

    def __init__(
        self,
        sts: Any,
        assumed_s3: Callable[[str, Mapping[str, str]], S3Client],
        principal_arn: str | None,
        multipart_bytes: int = Destinations.S3_MULTIPART_BYTES,
    ) -> None:
        self._sts = sts
        self._assumed_s3 = assumed_s3
        self._principal_arn = principal_arn
        self._multipart_bytes = multipart_bytes

    def make(self, spec: SpecBase, destination_id: str, secrets_: DestinationSecrets) -> Made:
        """The target with a fresh ExternalId; refused when the deployment has no principal for
        customers' roles to trust."""
        if self._principal_arn is None:
            raise InvalidRequest("this deployment delivers to SFTP servers only", field="target.kind")
        values = spec.model_dump(exclude={"kind"})
        return Made(S3Target(**values, external_id=keys.new_external_id()), secrets_)

    def bucket_client(self, destination_id: str, target: S3Target) -> S3Client:
        """An S3 client acting as the destination's role."""
        from exports.core.aws.errors import AwsError, translated

        try:
            with translated("assume destination role"):
                assumed = self._sts.assume_role(
                    RoleArn=target.role_arn,
                    RoleSessionName=f"exports-{destination_id}",
                    ExternalId=target.external_id,
                    DurationSeconds=SESSION_SEC,
                )
        except RetryableError:
            raise s3_problem(ProblemStep.TCP, target) from None
        except AwsError:
            raise s3_problem(ProblemStep.AUTH, target) from None
        return self._assumed_s3(target.region, assumed["Credentials"])

    def probe(self, destination_id: str, target: TargetBase, secrets_: DestinationSecrets | None) -> None:
        """Put an empty probe object under the prefix (with the bucket's encryption), delete it."""
        from exports.core.aws.errors import translated

        assert isinstance(target, S3Target)
        bucket = self.bucket_client(destination_id, target)
        key = target.prefix + Destinations.PROBE_FILE_PREFIX + secrets.token_hex(8)
        with _answers(target):
            with translated("put probe object"):
                bucket.put_object(Bucket=target.bucket, Key=key, Body=b"", **encryption_arguments(target))
            with translated("delete probe object"):
                bucket.delete_object(Bucket=target.bucket, Key=key)

    def put(
        self,
        destination_id: str,
        target: TargetBase,
        secrets_: DestinationSecrets | None,
        local: Path,
        remote: str,
        sha256: str,
    ) -> None:
        """The file under the role's credentials, its sha256 as metadata: s3transfer's manager (not
        boto3's ``upload_file``, which hides S3's error code in a message) raises S3's own error,
        after aborting a multipart upload it started."""
        from s3transfer.manager import TransferConfig, TransferManager

        from exports.core.aws.errors import translated

        assert isinstance(target, S3Target)
        bucket = self.bucket_client(destination_id, target)
        parts = TransferConfig(multipart_threshold=self._multipart_bytes, multipart_chunksize=self._multipart_bytes)
        extra = {"Metadata": {"sha256": sha256}, **encryption_arguments(target)}
        with _answers(target), translated("put delivered object"), TransferManager(bucket, parts) as manager:
            manager.upload(str(local), target.bucket, remote, extra_args=extra).result()


@contextmanager
def _answers(target: S3Target) -> Iterator[None]:
    """S3's refusals as the customer's sentences: no bucket (or not in the region) is PATH,
    any other refusal PERMISSION, no answer TCP."""
    from exports.core.aws.errors import AwsError

    try:
        yield
    except RetryableError:
        raise s3_problem(ProblemStep.TCP, target) from None
    except AwsError as error:
        step = ProblemStep.PATH if error.aws_code in _NO_BUCKET else ProblemStep.PERMISSION
        raise s3_problem(step, target) from None


class S3Kind(Kind):
    """The registration of the kind."""

    name: ClassVar[str] = NAME
    target = S3Target
    spec = S3TargetSpec
    view = S3Target
    patch_fields: ClassVar[Mapping[str, Any]] = {"prefix": str | None}

    def shown(self, target: TargetBase, principal_arn: str | None) -> tuple[BaseModel, dict[str, Any]]:
        """The target as stored (its ExternalId is the customer's to paste), and the role's
        trust policy (with our principal) and permissions."""
        assert isinstance(target, S3Target)
        policies: dict[str, Any] = {"permissions_policy": permissions_policy(target)}
        if principal_arn:
            policies["trust_policy"] = trust_policy(target, principal_arn)
        return target, policies

    def adapter(self, context: KindContext) -> S3Destinations:
        """STS, and S3 clients acting as the customers' roles."""
        return S3Destinations(context.aws_client("sts"), context.assumed_s3, context.principal_arn)
