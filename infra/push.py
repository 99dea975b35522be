"""The push channel on AWS (docs/push.md): an API Gateway WebSocket API whose routes the stream
function serves, and the push function fed by the tasks table's stream, filtered to task items.

``$connect`` is authenticated by the stream function itself: the credential travels in
``Sec-WebSocket-Protocol`` (a single-use ticket, or a JWT verified against the HTTP API's issuer
and audience), and the answer must echo the ``exports.v1`` subprotocol, which an authorizer
cannot. The other routes ride on a connection that passed ``$connect``.
"""

from __future__ import annotations

from typing import Final

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_apigateway as apigw_v1
from aws_cdk import aws_apigatewayv2 as apigw
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from exports.config.env import Env
from exports.config.names import SERVICE_NAME
from exports.config.push import Push
from exports.config.queues import Queue
from exports.config.retry import PUSH_BATCH_RETRY
from exports.config.tables import TaskTable
from exports.domain.ids import TASK_ID_PREFIX
from infra.api import AccessLogs, ExportsApi, cognito_issuer
from infra.function_factory import ServiceFunction, log_group
from infra.nag import acknowledge
from infra.settings import StageSettings
from infra.storage import ResultsStorage
from infra.tables import Tables

STAGE: Final = "live"
# The client's messages, by their ``action`` (route selection ``$request.body.action``).
MESSAGE_ROUTES: Final = ("subscribe", "unsubscribe", "ping")
# One JSON line per connection event and message ($context variables of a WebSocket API): never
# the Sec-WebSocket-Protocol header, which carries the credential.
ACCESS_LOG_FORMAT: Final = {
    "requestId": "$context.requestId",
    "ip": "$context.identity.sourceIp",
    "requestTime": "$context.requestTime",
    "eventType": "$context.eventType",
    "routeKey": "$context.routeKey",
    "connectionId": "$context.connectionId",
    "status": "$context.status",
    "integrationError": "$context.integrationErrorMessage",
}
# The AWS managed policy of API Gateway's CloudWatch Logs role (what the console and AWS's guide use).
API_GATEWAY_LOGS_POLICY: Final = "service-role/AmazonAPIGatewayPushToCloudWatchLogs"
# The mapping's filter: records of task items only (quota counters, dedup markers, statistics
# and the other items of the single table never reach the push function).
TASK_RECORDS: Final = {"dynamodb": {"Keys": {TaskTable.PARTITION_KEY: {"S": [{"prefix": TASK_ID_PREFIX}]}}}}


class PushChannel(Construct):
    """The WebSocket API, its stage, the stream mapping and the permissions of both functions."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: StageSettings,
        tables: Tables,
        storage: ResultsStorage,
        api: ExportsApi,
        api_function: ServiceFunction,
        stream: ServiceFunction,
        push: ServiceFunction,
    ) -> None:
        super().__init__(scope, construct_id)
        integration = integrations.WebSocketLambdaIntegration("Stream", stream.invocable)
        self.websocket_api = apigw.WebSocketApi(
            self,
            "WebSocketApi",
            description=f"{SERVICE_NAME} push channel ({settings.stage})",
            route_selection_expression="$request.body.action",
            connect_route_options=apigw.WebSocketRouteOptions(integration=integration),
            disconnect_route_options=apigw.WebSocketRouteOptions(integration=integration),
            default_route_options=apigw.WebSocketRouteOptions(integration=integration),
        )
        for route in MESSAGE_ROUTES:
            self.websocket_api.add_route(route, integration=integration)
        # A WebSocket stage that logs needs the account's CloudWatch Logs role first, or its create
        # fails ("CloudWatch Logs role ARN must be set in account settings") and the deploy rolls
        # back: it logs only when asked to (the account has the role) or when the stack sets it.
        self.access_logs = log_group(self, "AccessLogs", settings) if settings.websocket_access_logs else None
        self.stage = apigw.WebSocketStage(
            self,
            "Stage",
            web_socket_api=self.websocket_api,
            stage_name=STAGE,
            auto_deploy=True,
            throttle=apigw.ThrottleSettings(rate_limit=Push.THROTTLE_RATE, burst_limit=Push.THROTTLE_BURST),
            access_log_settings=AccessLogs(self.access_logs, ACCESS_LOG_FORMAT) if self.access_logs else None,
        )
        if settings.apigateway_cloudwatch_role:
            self.stage.node.add_dependency(account_logs_role(self))
        if self.access_logs is None:
            acknowledge(
                self.stage,
                "AwsSolutions-APIG1",
                "Access logs of a WebSocket stage need API Gateway's account-level CloudWatch Logs role, which a "
                "fresh account lacks: they are on with -c websocket_access_logs=true (the account has the role) or "
                "-c apigateway_cloudwatch_role=true (the stack sets it), docs/deploy.md. The stream function logs "
                "every connect, refusal and message meanwhile.",
            )
        acknowledge(
            self.websocket_api,
            "AwsSolutions-APIG4",
            "$connect is authenticated by the stream function: a single-use ticket or a JWT in "
            "Sec-WebSocket-Protocol (browsers cannot send headers), refused with 401/403; the connection must "
            "echo the exports.v1 subprotocol, which an authorizer cannot. The other routes run on a connection "
            "that passed $connect and answer only for its own viewer.",
        )
        # The stream function answers on the connection; the push function posts events.
        endpoint = self.stage.callback_url
        for function in (stream, push):
            function.function.add_environment(Env.WEBSOCKET_ENDPOINT, endpoint)
            self.websocket_api.grant_manage_connections(function.role)
        api_function.function.add_environment(Env.WEBSOCKET_URL, self.stage.url)
        issuer, audience = _jwt(settings, api)
        stream.function.add_environment(Env.JWT_ISSUER, issuer)
        stream.function.add_environment(Env.JWT_AUDIENCE, audience)

        connections = tables.connections.table_arn
        results = storage.results_objects_arn()
        # API: store a stream ticket (a conditional PutItem).
        api_function.allow(["dynamodb:PutItem"], [connections])
        # Stream function: use up a ticket (conditional DeleteItem), record the connection and
        # its subscriptions (PutItem, TransactWriteItems of two Puts), read and drop them on
        # $disconnect (GetItem, Query, DeleteItem); read the task a client subscribes to, with a
        # fresh download link for a completed one.
        stream.allow(["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:DeleteItem", "dynamodb:Query"], [connections])
        stream.allow(["dynamodb:GetItem"], [tables.tasks.table_arn])
        stream.allow(["s3:GetObject"], [results])
        # Push function: find the subscribers of a task (Query), forget a gone connection (GetItem,
        # Query, DeleteItem); sign download links. The stream read is granted by the mapping.
        push.allow(["dynamodb:GetItem", "dynamodb:Query", "dynamodb:DeleteItem"], [connections])
        push.allow(["s3:GetObject"], [results])

        self.failed_batches = sqs.Queue(
            self,
            "FailedPushes",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=Duration.seconds(Queue.DLQ_RETENTION_SEC),
        )
        acknowledge(
            self.failed_batches,
            "AwsSolutions-SQS3",
            "This queue is the on-failure destination of the push function's stream mapping (a dead-letter queue).",
        )
        push.function.add_event_source(
            event_sources.DynamoEventSource(
                tables.tasks,
                starting_position=lambda_.StartingPosition.LATEST,
                batch_size=Push.BATCH_SIZE,
                max_batching_window=Duration.seconds(Push.BATCHING_WINDOW_SEC),
                bisect_batch_on_error=True,
                retry_attempts=PUSH_BATCH_RETRY.retries,
                max_record_age=Duration.seconds(PUSH_BATCH_RETRY.max_age_sec),
                report_batch_item_failures=True,
                on_failure=event_sources.SqsDlq(self.failed_batches),
                filters=[lambda_.FilterCriteria.filter(TASK_RECORDS)],
            )
        )
        acknowledge(
            push.role,
            "AwsSolutions-IAM5[Resource::*]",
            "dynamodb:ListStreams (granted with the stream mapping) supports no resource-level scoping.",
        )
        for function in (stream, push):
            acknowledge(
                function.role,
                f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:execute-api:<AWS::Region>:<AWS::AccountId>:"
                f"<{Stack.of(self).get_logical_id(self.websocket_api.node.default_child)}>/*/*/@connections/*]",  # type: ignore[arg-type]
                "Connection ids are made by API Gateway per connection: the grant is this API's @connections only.",
            )

    @property
    def url(self) -> str:
        """The wss URL clients open."""
        return self.stage.url


def _jwt(settings: StageSettings, api: ExportsApi) -> tuple[str, str]:
    """The issuer and audiences (comma-separated) the HTTP API's JWT authorizer accepts."""
    if settings.jwt is not None:
        return settings.jwt.issuer, ",".join(settings.jwt.audience)
    assert api.user_pool is not None and api.user_pool_client is not None
    return cognito_issuer(Stack.of(api), api.user_pool.user_pool_id), api.user_pool_client.user_pool_client_id


def account_logs_role(scope: Construct) -> apigw_v1.CfnAccount:
    """API Gateway's account-level CloudWatch Logs role (``AWS::ApiGateway::Account``) with a
    role of its own. Both are kept when the stack is deleted (other APIs of the account and
    region may log through it by then), except when their creation rolls back."""
    role = iam.Role(
        scope,
        "ApiGatewayLogsRole",
        assumed_by=iam.ServicePrincipal("apigateway.amazonaws.com"),
        description=f"{SERVICE_NAME}: API Gateway writes the account's API logs to CloudWatch Logs",
        managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(API_GATEWAY_LOGS_POLICY)],
    )
    account = apigw_v1.CfnAccount(scope, "ApiGatewayAccount", cloud_watch_role_arn=role.role_arn)
    for resource in (role, account):
        resource.apply_removal_policy(RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE)
    acknowledge(
        role,
        "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]",
        "AWS's managed policy for the API Gateway account's CloudWatch Logs role is what AWS documents for it: "
        "API Gateway creates the log groups of every API and stage of the account, whose names it chooses.",
    )
    acknowledge(
        role,
        "AwsSolutions-IAM5[Resource::*]",
        "The managed policy lets API Gateway write to log groups it names per API and stage, account-wide.",
    )
    return account
