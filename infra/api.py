"""The HTTP API: JWT-protected ``/v1`` routes, public docs, throttling, access logs and CORS.

Tokens come from an OIDC provider named in context (``jwt_issuer`` + ``jwt_audience``: Cognito,
Auth0, Okta, Entra ID, ...) or, when none is named, from a Cognito user pool created here.
The functions read the caller's id from the verified token's ``sub`` claim, and the declaration's
caller values and access rules from its other claims: a user pool created here defines the
custom attributes and groups the declaration names.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import jsii
from aws_cdk import Duration, Stack
from aws_cdk import aws_apigateway as apigw_v1
from aws_cdk import aws_apigatewayv2 as apigw
from aws_cdk import aws_apigatewayv2_authorizers as authorizers
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_cognito as cognito
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from exports.core.config.api import API_VERSION_PREFIX, PUBLIC_PATHS, Cors
from exports.core.config.limits import Capacity
from exports.core.config.names import SERVICE_NAME
from infra.function_factory import log_group, removal_policy
from infra.nag import acknowledge
from infra.settings import StageSettings

GET: Final = apigw.HttpMethod.GET
POST: Final = apigw.HttpMethod.POST
PATCH: Final = apigw.HttpMethod.PATCH
DELETE: Final = apigw.HttpMethod.DELETE
# Every route the API function serves under the version prefix but the public ones
# (exports.core.config.api.PUBLIC_PATHS); each needs a valid token.
PROTECTED_ROUTES: Final = (
    (f"{API_VERSION_PREFIX}/exports", (GET, POST)),
    (f"{API_VERSION_PREFIX}/exports/{{task_id}}", (GET,)),
    (f"{API_VERSION_PREFIX}/exports/{{task_id}}/download", (GET,)),
    (f"{API_VERSION_PREFIX}/exports/{{task_id}}/cancel", (POST,)),
    (f"{API_VERSION_PREFIX}/exports/{{task_id}}/retry", (POST,)),
    (f"{API_VERSION_PREFIX}/exports/{{task_id}}/deliveries/{{destination_id}}/retry", (POST,)),
    (f"{API_VERSION_PREFIX}/schedules", (GET, POST)),
    (f"{API_VERSION_PREFIX}/schedules/{{schedule_id}}", (GET, PATCH, DELETE)),
    (f"{API_VERSION_PREFIX}/schedules/{{schedule_id}}/run", (POST,)),
    (f"{API_VERSION_PREFIX}/schedules/{{schedule_id}}/latest", (GET,)),
    (f"{API_VERSION_PREFIX}/schedules/{{schedule_id}}/permalink", (POST, DELETE)),
    (f"{API_VERSION_PREFIX}/destinations", (GET, POST)),
    (f"{API_VERSION_PREFIX}/destinations/{{destination_id}}", (GET, PATCH, DELETE)),
    (f"{API_VERSION_PREFIX}/destinations/{{destination_id}}/confirm", (POST,)),
    (f"{API_VERSION_PREFIX}/destinations/{{destination_id}}/verify", (POST,)),
    (f"{API_VERSION_PREFIX}/export-types", (GET,)),
    (f"{API_VERSION_PREFIX}/export-types/{{name}}", (GET,)),
    (f"{API_VERSION_PREFIX}/stream-tickets", (POST,)),
    (f"{API_VERSION_PREFIX}/me", (GET,)),
    (f"{API_VERSION_PREFIX}/audit", (GET,)),
    (f"{API_VERSION_PREFIX}/audit/usage", (GET,)),
)
# One JSON line per request (HTTP API $context variables).
ACCESS_LOG_FORMAT: Final = {
    "requestId": "$context.requestId",
    "ip": "$context.identity.sourceIp",
    "requestTime": "$context.requestTime",
    "httpMethod": "$context.httpMethod",
    "routeKey": "$context.routeKey",
    "path": "$context.path",
    "status": "$context.status",
    "responseLength": "$context.responseLength",
    "responseLatency": "$context.responseLatency",
    "integrationLatency": "$context.integrationLatency",
    "integrationError": "$context.integrationErrorMessage",
    "authorizerError": "$context.authorizer.error",
    "userId": "$context.authorizer.claims.sub",
}
# The unauthenticated route of CORS preflights (with CORS on): every path.
PREFLIGHT_PATH: Final = "/{proxy+}"


@dataclass(frozen=True)
class CallerIdentity:
    """What the declaration reads from callers' tokens that a user pool created here must define:
    custom attributes (``custom:<name>`` claims) and groups (``cognito:groups``)."""

    custom_attributes: Sequence[str] = ()
    groups: Sequence[str] = ()


class ExportsApi(Construct):
    """An HTTP API in front of the API function."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: StageSettings,
        handler: lambda_.IFunction,
        identity: CallerIdentity = CallerIdentity(),
    ) -> None:
        super().__init__(scope, construct_id)
        self._identity = identity
        self.user_pool: cognito.UserPool | None = None
        self.user_pool_client: cognito.UserPoolClient | None = None
        self.http_api = apigw.HttpApi(
            self,
            "HttpApi",
            description=f"{SERVICE_NAME} API ({settings.stage})",
            create_default_stage=False,
            cors_preflight=_cors(settings),
            default_authorizer=self._authorizer(settings),
        )
        self.access_logs = log_group(self, "AccessLogs", settings)
        self.stage = self.http_api.add_stage(
            "DefaultStage",
            stage_name="$default",
            auto_deploy=True,
            throttle=apigw.ThrottleSettings(
                rate_limit=Capacity.API_THROTTLE_RATE_PER_SEC, burst_limit=Capacity.API_THROTTLE_BURST
            ),
            access_log_settings=AccessLogs(self.access_logs, ACCESS_LOG_FORMAT),
        )
        integration = integrations.HttpLambdaIntegration("ApiFunction", handler)
        for path, methods in PROTECTED_ROUTES:
            self.http_api.add_routes(path=path, methods=list(methods), integration=integration)
        # Everything else (another method on a known path, an unknown path) reaches the function
        # too, with a token, so that it answers 405 with ``Allow`` or its JSON 404 rather than
        # API Gateway's own ``{"message": "Not Found"}``.
        apigw.HttpRoute(
            self,
            "CatchAll",
            http_api=self.http_api,
            route_key=apigw.HttpRouteKey.DEFAULT,
            integration=integration,
        )
        if settings.cors_allowed_origins:
            # $default catches OPTIONS too, behind the authorizer: a browser's preflight carries no
            # token, so it would get 401 and every cross-origin call would fail. This route ranks
            # above $default and needs none (AWS: "Configuring CORS for an HTTP API with a $default
            # route and an authorizer").
            preflight = apigw.HttpRoute(
                self,
                "Preflight",
                http_api=self.http_api,
                route_key=apigw.HttpRouteKey.with_(PREFLIGHT_PATH, apigw.HttpMethod.OPTIONS),
                integration=integration,
                authorizer=apigw.HttpNoneAuthorizer(),
            )
            acknowledge(
                preflight,
                "AwsSolutions-APIG4",
                "CORS preflight requests carry no credentials by the browser's rules; the function answers "
                "them with an empty 204 and reads nothing.",
            )
        for path in PUBLIC_PATHS:
            routes = self.http_api.add_routes(
                path=path, methods=[GET], integration=integration, authorizer=apigw.HttpNoneAuthorizer()
            )
            for route in routes:
                acknowledge(
                    route,
                    "AwsSolutions-APIG4",
                    "The API's OpenAPI document and Swagger UI are public on purpose and hold no data; a"
                    " schedule's permalink checks its own secret key (revocable, off by default).",
                )

    @property
    def url(self) -> str:
        """The base URL of the API."""
        return self.stage.url

    def _authorizer(self, settings: StageSettings) -> apigw.IHttpRouteAuthorizer:
        if settings.jwt is not None:
            return authorizers.HttpJwtAuthorizer(
                "Jwt", jwt_issuer=settings.jwt.issuer, jwt_audience=list(settings.jwt.audience)
            )
        self.user_pool, self.user_pool_client = _user_pool(self, settings, self._identity)
        # A JWT authorizer on the pool's issuer rather than CDK's HttpUserPoolAuthorizer, which
        # writes the issuer with the amazonaws.com suffix in every partition.
        return authorizers.HttpJwtAuthorizer(
            "Cognito",
            jwt_issuer=cognito_issuer(Stack.of(self), self.user_pool.user_pool_id),
            jwt_audience=[self.user_pool_client.user_pool_client_id],
        )


@jsii.implements(apigw.IAccessLogSettings)
class AccessLogs:
    """Access log settings of a stage (this HTTP API's, the push channel's WebSocket API's): a
    log group and one JSON object per line with ``fields``."""

    def __init__(self, group: logs.ILogGroup, fields: Mapping[str, str]) -> None:
        self._destination = apigw.LogGroupLogDestination(group)
        self._fields = dict(fields)

    @property
    def destination(self) -> apigw.IAccessLogDestination:
        """Where the lines go."""
        return self._destination

    @property
    def format(self) -> apigw_v1.AccessLogFormat:
        """One JSON object per request or event."""
        return apigw_v1.AccessLogFormat.custom(json.dumps(self._fields))


def cognito_issuer(stack: Stack, user_pool_id: str) -> str:
    """The issuer (``iss``) of a user pool's tokens, in the stack's partition: the region's
    ``cognito-idp`` endpoint under the partition's domain (``amazonaws.com``,
    ``amazonaws.com.cn`` in the China regions)."""
    return f"https://cognito-idp.{stack.region}.{stack.url_suffix}/{user_pool_id}"


def _cors(settings: StageSettings) -> apigw.CorsPreflightOptions | None:
    if not settings.cors_allowed_origins:
        return None
    return apigw.CorsPreflightOptions(
        allow_origins=list(settings.cors_allowed_origins),
        allow_methods=[apigw.CorsHttpMethod(method) for method in Cors.ALLOW_METHODS],
        allow_headers=list(Cors.ALLOW_HEADERS),
        expose_headers=list(Cors.EXPOSE_HEADERS),
        max_age=Duration.seconds(Cors.MAX_AGE_SEC),
    )


def _user_pool(
    scope: Construct, settings: StageSettings, identity: CallerIdentity
) -> tuple[cognito.UserPool, cognito.UserPoolClient]:
    """A user pool whose users an administrator creates, with the custom attributes and groups
    the declaration reads, and an app client without a secret that cannot write them."""
    pool = cognito.UserPool(
        scope,
        "Users",
        self_sign_up_enabled=False,
        sign_in_aliases=cognito.SignInAliases(email=True),
        auto_verify=cognito.AutoVerifiedAttrs(email=True),
        password_policy=cognito.PasswordPolicy(
            min_length=12, require_lowercase=True, require_uppercase=True, require_digits=True, require_symbols=True
        ),
        account_recovery=cognito.AccountRecovery.EMAIL_ONLY,
        mfa=cognito.Mfa.OPTIONAL,
        mfa_second_factor=cognito.MfaSecondFactor(otp=True, sms=False),
        deletion_protection=settings.protect_data,
        removal_policy=removal_policy(settings),
        # Mutable so that an administrator can move a user (admin-update-user-attributes); only
        # administrators can: the app client below may read them, never write them.
        custom_attributes={
            name: cognito.StringAttribute(min_len=1, max_len=256, mutable=True) for name in identity.custom_attributes
        },
    )
    for group in identity.groups:
        cognito.CfnUserPoolGroup(
            scope, f"Group{_construct_name(group)}", user_pool_id=pool.user_pool_id, group_name=group
        )
    acknowledge(
        pool,
        "AwsSolutions-COG2",
        "MFA is offered (TOTP) but not required: the pool is the getting-started option; production "
        "deployments name their own identity provider with jwt_issuer and enforce MFA there.",
    )
    acknowledge(
        pool,
        "AwsSolutions-COG8",
        "Threat protection needs the Cognito Plus feature plan (paid per active user); here users are "
        "created by an administrator only, with self sign-up disabled.",
    )
    # Only the flows the deploy guide uses (USER_PASSWORD_AUTH, SRP for SDKs, and refresh, which
    # Cognito always allows): no hosted-UI OAuth flows, so no implicit grant and no callback URL
    # (CDK's default would enable the code and implicit grants with https://example.com).
    client = pool.add_client(
        "ApiClient",
        auth_flows=cognito.AuthFlow(user_password=True, user_srp=True),
        disable_o_auth=True,
        generate_secret=False,
        prevent_user_existence_errors=True,
        id_token_validity=Duration.hours(1),
        access_token_validity=Duration.hours(1),
        # Cognito's default lets a signed-in user write every mutable attribute with their own
        # token (UpdateUserAttributes): they could set their own custom:tenant_id. Users may
        # read the custom attributes and change only their name.
        read_attributes=cognito.ClientAttributes()
        .with_standard_attributes(email=True, email_verified=True, fullname=True)
        .with_custom_attributes(*identity.custom_attributes),
        write_attributes=cognito.ClientAttributes().with_standard_attributes(fullname=True),
    )
    return pool, client


def _construct_name(group: str) -> str:
    """A group name as part of a construct id (letters and digits)."""
    return "".join(part.capitalize() for part in re.split(r"[^A-Za-z0-9]+", group)) or "Group"
