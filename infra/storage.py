"""S3: the results bucket (private, encrypted, TLS only, short-lived objects) and its access log."""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_s3 as s3
from constructs import Construct

from exports.core.config.results import Results
from infra.function_factory import removal_policy
from infra.settings import StageSettings

ACCESS_LOG_PREFIX = "results-bucket/"
# CDK feature flag: grant log delivery by bucket policy instead of the LogDeliveryWrite ACL.
ACCESS_LOGS_VIA_BUCKET_POLICY = "@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy"


def _private_bucket(scope: Construct, construct_id: str, settings: StageSettings, **props: Any) -> s3.Bucket:
    return s3.Bucket(
        scope,
        construct_id,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        encryption=s3.BucketEncryption.S3_MANAGED,
        enforce_ssl=True,
        minimum_tls_version=1.2,
        object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
        removal_policy=removal_policy(settings),
        # An unprotected stage's stack deletes its buckets: empty them first (a custom resource
        # deletes every object), or the delete fails on a non-empty bucket.
        auto_delete_objects=not settings.protect_data,
        **props,
    )


class ResultsStorage(Construct):
    """Result files live under ``results/`` until the retention period is over.

    Objects expire after :attr:`infra.settings.StageSettings.results_expiry_days`; multipart
    uploads a crashed worker left behind are aborted after
    :attr:`exports.core.config.results.Results.ABORT_INCOMPLETE_UPLOAD_DAYS`. Every download (a presigned GET)
    is recorded in the server access log bucket. On a stage whose data is not protected the
    buckets are emptied and deleted with the stack (auto-delete objects); a protected stage keeps them.
    """

    def __init__(self, scope: Construct, construct_id: str, *, settings: StageSettings) -> None:
        super().__init__(scope, construct_id)
        # Deliver access logs through a bucket policy (ACLs stay disabled), whatever the app's flags.
        self.node.set_context(ACCESS_LOGS_VIA_BUCKET_POLICY, True)
        self.access_logs = _private_bucket(
            self,
            "AccessLogs",
            settings,
            lifecycle_rules=[s3.LifecycleRule(id="expire-logs", expiration=Duration.days(settings.log_retention_days))],
        )
        cors = (
            [s3.CorsRule(allowed_methods=[s3.HttpMethods.GET], allowed_origins=list(settings.cors_allowed_origins))]
            if settings.cors_allowed_origins
            else None
        )
        self.bucket = _private_bucket(
            self,
            "Results",
            settings,
            server_access_logs_bucket=self.access_logs,
            server_access_logs_prefix=ACCESS_LOG_PREFIX,
            cors=cors,
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="expire-results",
                    prefix=f"{Results.KEY_PREFIX}/",
                    expiration=Duration.days(settings.results_expiry_days),
                ),
                s3.LifecycleRule(
                    id="abort-incomplete-uploads",
                    abort_incomplete_multipart_upload_after=Duration.days(Results.ABORT_INCOMPLETE_UPLOAD_DAYS),
                ),
            ],
        )

    def results_objects_arn(self) -> str:
        """The ARN pattern of every result file (the only keys the functions touch)."""
        return self.bucket.arn_for_objects(f"{Results.KEY_PREFIX}/*")
