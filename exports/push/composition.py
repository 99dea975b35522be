"""Building the push channel's adapters from the environment (the WebSocket routes' function
and the stream consumer share one root; local mode serves the management API they post to)."""

from __future__ import annotations

import os
from collections.abc import Mapping

from exports.audit.composition import compose_audit
from exports.core.aws.clients import aws_client
from exports.core.aws.s3_results import S3ResultStore
from exports.core.config.settings import PushSettings
from exports.core.ports import BusinessMetrics
from exports.export_types.composition import declared_export_types
from exports.export_types.registry import ExportTypeRegistry
from exports.push.dynamodb_connections import DynamoConnections, DynamoTickets
from exports.push.jwt_tokens import JwksTokenVerifier
from exports.push.service import PushDependencies
from exports.push.task_stream import DynamoTaskVersions
from exports.push.websocket_posts import ApiGatewayPoster


def compose_push(metrics: BusinessMetrics, environ: Mapping[str, str] = os.environ) -> PushDependencies:
    """The adapters on the shared boto3 clients; the registry is built the first time a task's
    tenancy-bound values are checked; posts go to the WebSocket API's management endpoint."""
    settings = PushSettings.from_env(environ)
    verifier = (
        JwksTokenVerifier(settings.jwt_issuer, settings.jwt_audience)
        if settings.jwt_issuer and settings.jwt_audience
        else None
    )
    dynamodb = aws_client("dynamodb")
    return PushDependencies(
        settings=settings,
        connections=DynamoConnections(dynamodb, settings.connections_table),
        tickets=DynamoTickets(dynamodb, settings.connections_table),
        tasks=DynamoTaskVersions(dynamodb, settings.tasks_table),
        # Its endpoint is the stage's URL (Env.WEBSOCKET_ENDPOINT, which boto3 reads itself).
        poster=ApiGatewayPoster(aws_client("apigatewaymanagementapi")),
        results=S3ResultStore(aws_client("s3"), settings.results_bucket),
        registry=ExportTypeRegistry.on_first_use(lambda: declared_export_types(settings, environ)),
        metrics=metrics,
        verifier=verifier,
        audit=compose_audit(metrics, settings.audit_table, settings.exports_config) if settings.audit_table else None,
    )
