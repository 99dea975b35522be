"""Building the push channel's adapters from the environment (the WebSocket routes' function
and the stream consumer share one root; local mode serves the management API they post to)."""

from __future__ import annotations

import os
from collections.abc import Mapping

from exports.adapters.clients import aws_client
from exports.adapters.dynamodb_connections import DynamoConnections, DynamoTickets
from exports.adapters.jwt_tokens import JwksTokenVerifier
from exports.adapters.s3_results import S3ResultStore
from exports.adapters.task_stream import DynamoTaskVersions
from exports.adapters.websocket_posts import ApiGatewayPoster
from exports.composition import compose_audit, declared_export_types
from exports.config.settings import PushSettings
from exports.export_types.registry import ExportTypeRegistry
from exports.ports import BusinessMetrics
from exports.services.push import PushDependencies


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
