"""One lazy, cached factory for boto3 clients, on one boto3 Session per process.

Clients are built on first use, never at import, so a client cannot escape a test's mock and
cold starts pay only for the clients a function uses. They all come from one Session: each
Session loads its own copy of the endpoint data, credential chain and service models, so a
Session per client (``boto3.client(...)`` builds one each time) costs a cold start about twice
the time of one shared Session (``make bench``, case ``cold_start``). A Session is not safe to
share across threads while it builds clients, so building is serialized; the clients themselves
are thread-safe. ``AWS_ENDPOINT_URL`` (read by boto3 itself) points every client at the local
stack in local mode.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal, cast, overload

import boto3
from botocore.config import Config

from exports.core.config.retry import SDK_RETRY

if TYPE_CHECKING:
    # Stubs only (dev dependencies): the clients' methods, arguments and answers, typed.
    from botocore.client import BaseClient
    from botocore.credentials import Credentials
    from types_boto3_dynamodb import DynamoDBClient
    from types_boto3_rds import RDSClient
    from types_boto3_s3 import S3Client
    from types_boto3_scheduler import EventBridgeSchedulerClient
    from types_boto3_secretsmanager import SecretsManagerClient
    from types_boto3_sesv2 import SESV2Client
    from types_boto3_sqs import SQSClient
    from types_boto3_stepfunctions import SFNClient

# The services the product uses (their stubs are in the dev dependencies).
Service = Literal["dynamodb", "rds", "s3", "scheduler", "secretsmanager", "sesv2", "sqs", "stepfunctions"]

# botocore's standard retry mode; its max_attempts counts the retries only (botocore adds the first).
_CONFIG = Config(retries={"mode": "standard", "max_attempts": SDK_RETRY.retries}, connect_timeout=5, read_timeout=30)


# Presigned download links use Signature Version 4: S3 no longer accepts version 2 everywhere.
_SERVICE_CONFIG = {"s3": _CONFIG.merge(Config(signature_version="s3v4"))}


class ClientFactory:
    """The shared clients of this process, by service name, all on one Session."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._session: boto3.session.Session | None = None
        self._clients: dict[str, BaseClient] = {}

    @overload
    def __call__(self, service: Literal["dynamodb"]) -> DynamoDBClient: ...
    @overload
    def __call__(self, service: Literal["rds"]) -> RDSClient: ...
    @overload
    def __call__(self, service: Literal["s3"]) -> S3Client: ...
    @overload
    def __call__(self, service: Literal["scheduler"]) -> EventBridgeSchedulerClient: ...
    @overload
    def __call__(self, service: Literal["secretsmanager"]) -> SecretsManagerClient: ...
    @overload
    def __call__(self, service: Literal["sesv2"]) -> SESV2Client: ...
    @overload
    def __call__(self, service: Literal["sqs"]) -> SQSClient: ...
    @overload
    def __call__(self, service: Literal["stepfunctions"]) -> SFNClient: ...
    @overload
    def __call__(self, service: str) -> BaseClient: ...  # a plugin's other service: untyped
    def __call__(self, service: str) -> BaseClient:
        """The shared client for ``service`` (e.g. ``"dynamodb"``)."""
        client = self._clients.get(service)
        if client is not None:
            return client
        with self._lock:
            if service not in self._clients:
                # The stubs type only named services; any other name builds a client all the same.
                name = cast("Service", service)
                self._clients[service] = self.session().client(name, config=_SERVICE_CONFIG.get(service, _CONFIG))
            return self._clients[service]

    def session(self) -> boto3.session.Session:
        """The process's Session, made on first use (call under the lock)."""
        if self._session is None:
            self._session = boto3.session.Session()
        return self._session

    def credentials(self) -> Credentials | None:
        """The Session's credentials (what signs a request outside a client: SigV4 to an HTTP source)."""
        with self._lock:
            return self.session().get_credentials()

    def assumed_s3(self, region: str, credentials: Mapping[str, str]) -> S3Client:
        """An S3 client in ``region`` signing with an assumed role's temporary ``credentials``
        (STS's ``AccessKeyId``, ``SecretAccessKey``, ``SessionToken``): a customer's bucket.
        Not cached: the credentials expire, and each is one destination's."""
        with self._lock:
            session = self.session()
            return session.client(
                "s3",
                region_name=region,
                aws_access_key_id=credentials["AccessKeyId"],
                aws_secret_access_key=credentials["SecretAccessKey"],
                aws_session_token=credentials["SessionToken"],
                config=_SERVICE_CONFIG["s3"],
            )

    def services(self) -> tuple[str, ...]:
        """The services that have a client so far."""
        return tuple(self._clients)

    def cache_clear(self) -> None:
        """Forget the Session and every client (tests: the next client sees a new mock)."""
        with self._lock:
            self._session = None
            self._clients.clear()


aws_client = ClientFactory()
