"""The push channel's resources (infra/push.py, docs/push.md): the WebSocket API and its routes,
who authenticates $connect, the stream mapping, each function's exact grants, and the alarms."""

import json

import pytest

from exports.config.env import Env
from exports.config.push import Push
from exports.config.retry import PUSH_BATCH_RETRY
from exports.config.tables import TaskTable
from exports.domain.ids import TASK_ID_PREFIX
from infra.push import MESSAGE_ROUTES, STAGE
from infra.settings import StageSettings
from tests.infra.test_infra_resources import alarms_by_name, allowed_pairs, common_grants, expected_pairs, of_type

pytestmark = pytest.mark.infra
# What the stream mapping itself grants the push function (read the stream, send to its on-failure queue).
MAPPING_ACTIONS = {
    "dynamodb:ListStreams",
    "dynamodb:DescribeStream",
    "dynamodb:GetRecords",
    "dynamodb:GetShardIterator",
    "sqs:SendMessage",
    "sqs:GetQueueAttributes",
    "sqs:GetQueueUrl",
}


def websocket_routes(synth):
    api = synth.ref(synth.stack.push.websocket_api)
    return {
        route["Properties"]["RouteKey"]: route["Properties"]
        for route in of_type(synth, "AWS::ApiGatewayV2::Route").values()
        if route["Properties"]["ApiId"] == api
    }


def test_the_websocket_api_routes_every_message_to_the_stream_function(dev):
    props = dev.props(dev.stack.push.websocket_api)
    assert props["ProtocolType"] == "WEBSOCKET"
    assert props["RouteSelectionExpression"] == "$request.body.action"
    routes = websocket_routes(dev)
    assert set(routes) == {"$connect", "$disconnect", "$default", *MESSAGE_ROUTES}
    # $connect is authenticated by the function (a ticket or a JWT in Sec-WebSocket-Protocol),
    # which must echo the subprotocol: no API Gateway authorizer on any route.
    assert all(route.get("AuthorizationType", "NONE") == "NONE" for route in routes.values())
    uris = {
        json.dumps(integration["Properties"]["IntegrationUri"])
        for integration in of_type(dev, "AWS::ApiGatewayV2::Integration").values()
        if integration["Properties"]["ApiId"] == dev.ref(dev.stack.push.websocket_api)
    }
    (uri,) = uris
    # Through the alias of its newest published version (SnapStart: tests/infra/test_infra_snapstart.py).
    assert dev.logical_id(dev.stack.functions.stream.invocable) in uri


def test_the_stage_logs_only_where_the_account_has_the_logs_role(dev, prod):
    """A WebSocket stage with access logs fails to create on an account without API Gateway's
    CloudWatch Logs role, and the first deploy rolls back: the default stage does not log."""
    assert "AccessLogSettings" not in dev.props(dev.stack.push.stage)
    assert dev.stack.push.access_logs is None
    assert prod.props(prod.stack.push.stage)["AccessLogSettings"]["DestinationArn"] == prod.arn(
        prod.stack.push.access_logs
    )
    # Asked for without the stack setting the role (the account has one): logs, and no role made.
    assert StageSettings.from_context({"websocket_access_logs": "true"}.get).websocket_access_logs
    assert not StageSettings.from_context(dict[str, str]().get).websocket_access_logs
    both = {"apigateway_cloudwatch_role": "true", "websocket_access_logs": "false"}
    assert not StageSettings.from_context(both.get).websocket_access_logs


def test_the_stage_throttles_and_logs_without_the_credential(prod):
    props = prod.props(prod.stack.push.stage)
    assert props["StageName"] == STAGE and props["AutoDeploy"] is True
    assert props["DefaultRouteSettings"] == {
        "ThrottlingRateLimit": Push.THROTTLE_RATE,
        "ThrottlingBurstLimit": Push.THROTTLE_BURST,
    }
    log_format = json.loads(props["AccessLogSettings"]["Format"])
    assert log_format["connectionId"] == "$context.connectionId"
    assert "protocol" not in json.dumps(log_format).lower()


def test_the_tasks_stream_feeds_the_push_function_task_items_only(dev):
    assert dev.props(dev.stack.tables.tasks)["StreamSpecification"] == {"StreamViewType": "NEW_AND_OLD_IMAGES"}
    (mapping,) = (
        m["Properties"]
        for m in of_type(dev, "AWS::Lambda::EventSourceMapping").values()
        if m["Properties"]["FunctionName"] == dev.ref(dev.stack.functions.push.function)
    )
    assert mapping["StartingPosition"] == "LATEST"
    assert mapping["BatchSize"] == Push.BATCH_SIZE
    assert mapping["MaximumBatchingWindowInSeconds"] == Push.BATCHING_WINDOW_SEC
    assert mapping["BisectBatchOnFunctionError"] is True
    assert mapping["MaximumRetryAttempts"] == PUSH_BATCH_RETRY.retries
    assert mapping["MaximumRecordAgeInSeconds"] == PUSH_BATCH_RETRY.max_age_sec
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["DestinationConfig"]["OnFailure"]["Destination"] == dev.arn(dev.stack.push.failed_batches)
    (pattern,) = (json.loads(f["Pattern"]) for f in mapping["FilterCriteria"]["Filters"])
    assert pattern == {"dynamodb": {"Keys": {TaskTable.PARTITION_KEY: {"S": [{"prefix": TASK_ID_PREFIX}]}}}}


def test_the_connections_table_has_its_keys_and_ttl(dev):
    props = dev.props(dev.stack.tables.connections)
    assert props["KeySchema"] == [
        {"AttributeName": Push.PARTITION_KEY, "KeyType": "HASH"},
        {"AttributeName": Push.SORT_KEY, "KeyType": "RANGE"},
    ]
    assert props["TimeToLiveSpecification"] == {"AttributeName": Push.TTL_ATTRIBUTE, "Enabled": True}


def test_the_api_gives_out_the_websocket_url_and_the_stream_function_verifies_the_apis_jwts(dev, prod):
    api = dev.props(dev.stack.functions.api.function)["Environment"]["Variables"]
    assert STAGE in json.dumps(api[Env.WEBSOCKET_URL])
    stream = prod.props(prod.stack.functions.stream.function)["Environment"]["Variables"]
    assert stream[Env.JWT_ISSUER] == prod.settings.jwt.issuer
    assert stream[Env.JWT_AUDIENCE] == ",".join(prod.settings.jwt.audience)
    dev_stream = dev.props(dev.stack.functions.stream.function)["Environment"]["Variables"]
    assert "cognito-idp" in json.dumps(dev_stream[Env.JWT_ISSUER])


def test_the_cognito_issuer_is_the_same_for_the_http_api_and_dollar_connect_and_follows_the_partition(dev):
    (authorizer,) = of_type(dev, "AWS::ApiGatewayV2::Authorizer").values()
    http_issuer = authorizer["Properties"]["JwtConfiguration"]["Issuer"]
    stream_issuer = dev.props(dev.stack.functions.stream.function)["Environment"]["Variables"][Env.JWT_ISSUER]

    assert http_issuer == stream_issuer
    # amazonaws.com.cn in the China regions: the partition's domain, never a literal suffix.
    assert dev.rendered(stream_issuer) == (
        f"https://cognito-idp.<AWS::Region>.<AWS::URLSuffix>/{dev.stand_in(dev.stack.api.user_pool)}"
    )


def test_the_account_logs_role_is_opt_in_and_comes_before_the_websocket_stage(dev, prod):
    """A WebSocket stage with access logs fails on an account without API Gateway's CloudWatch
    Logs role; ``-c apigateway_cloudwatch_role=true`` (prod here) sets it, dev leaves it alone."""
    dev.template.resource_count_is("AWS::ApiGateway::Account", 0)
    ((account_id, account),) = prod.template.find_resources("AWS::ApiGateway::Account").items()
    role_id = account["Properties"]["CloudWatchRoleArn"]["Fn::GetAtt"][0]
    role = prod.template.to_json()["Resources"][role_id]

    assert role["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {
        "Service": "apigateway.amazonaws.com"
    }
    assert "AmazonAPIGatewayPushToCloudWatchLogs" in json.dumps(role["Properties"]["ManagedPolicyArns"])
    assert account_id in prod.resource(prod.stack.push.stage)["DependsOn"]
    # Kept when the stack goes (other APIs of the account may log through it), not after a failed create.
    assert {account["DeletionPolicy"], role["DeletionPolicy"]} == {"RetainExceptOnCreate"}


def test_each_push_function_may_do_exactly_what_its_code_does(dev):
    stack = dev.stack
    connections = dev.arn(stack.tables.connections)
    (results,) = {pair for pair in allowed_pairs(dev, stack.functions.api) if pair[0] == "s3:GetObject"}
    (manage,) = {
        pair for pair in allowed_pairs(dev, stack.functions.push) if pair[0] == "execute-api:ManageConnections"
    }
    assert allowed_pairs(dev, stack.functions.stream) == expected_pairs(
        [
            *common_grants(dev, stack.functions.stream),
            (["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:DeleteItem", "dynamodb:Query"], connections),
            (["dynamodb:GetItem"], dev.arn(stack.tables.tasks)),
        ]
    ) | {results, manage}
    own = expected_pairs(
        [
            *common_grants(dev, stack.functions.push),
            (["dynamodb:GetItem", "dynamodb:Query", "dynamodb:DeleteItem"], connections),
        ]
    ) | {results, manage}
    push = allowed_pairs(dev, stack.functions.push)
    assert own <= push
    # Nothing else but what the mapping needs: no write of a task, so a push failure cannot
    # change an export.
    assert {action for action, _ in push - own} <= MAPPING_ACTIONS


def test_push_faults_page(dev):
    alarms = alarms_by_name(dev)
    assert {"StreamErrors", "PushErrors", "StreamThrottles", "PushThrottles", "PushFailed"} <= set(alarms)
    assert alarms["PushFailed"]["Threshold"] == 1
    assert "push-failed" in alarms["PushFailed"]["AlarmDescription"]
