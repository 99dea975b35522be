"""What the worker's role may call for a SigV4 source, as narrow as its declaration says: on
API Gateway, ``execute-api:Invoke`` on the declared API's stage, for GET only, on the paths its
types ask for (each ``{placeholder}`` a ``*``); on a Lambda function URL, invoking the declared
function (or alias) through its URL with IAM auth only, and nothing else of it.

Also what the loader checks of the declaration for that: the keys each service needs, and that
a base URL on AWS's own host for the API or function agrees with them."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final
from urllib.parse import urlsplit

from exports.declared.templates import placeholders
from exports.sources.http.model import HttpReadDecl, HttpSource, SigV4Auth, SigV4Service
from exports.sources.kind import Fail, InvokeGrant

# The host API Gateway gives an API: <api id>.execute-api.<region>.amazonaws.com (.com.cn in China).
_API_HOST: Final = re.compile(r"^(?P<api>[a-z0-9]{10})\.execute-api\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(\.cn)?$")
# The host Lambda gives a function URL: <url id>.lambda-url.<region>.on.aws.
_FUNCTION_URL_HOST: Final = re.compile(r"^[a-z0-9]+\.lambda-url\.(?P<region>[a-z0-9-]+)\.on\.aws$")
# What the service's IAM authorization asks of the caller (the grant's actions and conditions).
INVOKE_API: Final = "execute-api:Invoke"
INVOKE_FUNCTION_URL: Final = "lambda:InvokeFunctionUrl"
# Function URLs created since October 2025 also check lambda:InvokeFunction; the condition
# keeps it to calls made through the URL (no direct Invoke of the function).
INVOKE_FUNCTION: Final = "lambda:InvokeFunction"
IAM_AUTH_ONLY: Final = ("StringEquals", "lambda:FunctionUrlAuthType", "AWS_IAM")
THROUGH_URL_ONLY: Final = ("Bool", "lambda:InvokedViaFunctionUrl", "true")
DEFAULT_STAGE: Final = "$default"

# The keys each service needs for its grant, and those that belong to the other.
_NEEDS: Final = {
    SigV4Service.EXECUTE_API: ("api_id", "stage"),
    SigV4Service.LAMBDA: ("function_name",),
}
_MEANS: Final = {
    "api_id": "the API's id (the first label of its execute-api host)",
    "stage": 'the stage the base URL calls ("$default" for an HTTP API\'s default stage)',
    "function_name": "the function whose URL it is",
}


def check_sigv4(fail: Fail, source: HttpSource, auth: SigV4Auth) -> None:
    """The keys of the grant the service needs, none of the other service's, and a base URL on
    AWS's own host for the API or function that agrees with them (id, region, stage)."""
    for key in _NEEDS[auth.service]:
        if getattr(auth, key) is None:
            what = f"{_MEANS[key]}, what the worker is granted"
            raise fail(f"auth.{key}", f"is needed to sign for {auth.service.value}: {what}")
    for service, keys in _NEEDS.items():
        for key in (*keys, "qualifier") if service is SigV4Service.LAMBDA else keys:
            if service is not auth.service and getattr(auth, key) is not None:
                raise fail(f"auth.{key}", f"is for {service.value}, not {auth.service.value}")
    if source.base_url is not None:
        url = urlsplit(source.base_url)
        _check_host(fail, auth, url.hostname or "", url.path)


def _check_host(fail: Fail, auth: SigV4Auth, host: str, path: str) -> None:
    api, function = _API_HOST.match(host), _FUNCTION_URL_HOST.match(host)
    if api is not None and auth.service is SigV4Service.EXECUTE_API:
        if api["api"] != auth.api_id:
            raise fail("auth.api_id", f"is {auth.api_id} but base_url is API {api['api']}'s host")
        if auth.stage != DEFAULT_STAGE and _first_segment(path) != auth.stage:
            raise fail("auth.stage", f"is {auth.stage} but base_url's path does not start with /{auth.stage}")
    found = api or function
    if found is not None and auth.region is not None and found["region"] != auth.region:
        raise fail("auth.region", f"is {auth.region} but base_url's host is in {found['region']}")
    if (api is not None and auth.service is SigV4Service.LAMBDA) or (
        function is not None and auth.service is SigV4Service.EXECUTE_API
    ):
        raise fail("auth.service", f"is {auth.service.value} but base_url is the other service's host")


def _first_segment(path: str) -> str:
    return path.lstrip("/").split("/", 1)[0]


def invoke_grants(source: HttpSource, reads: Sequence[HttpReadDecl]) -> list[InvokeGrant]:
    """What the worker's role is granted to call ``source`` for the types reading ``reads``
    (none unless it signs with SigV4)."""
    auth = source.auth
    if not isinstance(auth, SigV4Auth):
        return []
    if auth.service is SigV4Service.LAMBDA:
        name = f"{auth.function_name}:{auth.qualifier}" if auth.qualifier else str(auth.function_name)
        return [
            InvokeGrant((action,), "lambda", auth.region, auth.account, "function", name, ":", (condition,))
            for action, condition in ((INVOKE_FUNCTION_URL, IAM_AUTH_ONLY), (INVOKE_FUNCTION, THROUGH_URL_ONLY))
        ]
    prefix = _resource_prefix(source, auth)
    paths = sorted({prefix + _wildcards(read.path) for read in reads})
    return [
        InvokeGrant(
            (INVOKE_API,), "execute-api", auth.region, auth.account, str(auth.api_id), f"{auth.stage}/GET{path}", "/"
        )
        for path in paths
    ]


def _resource_prefix(source: HttpSource, auth: SigV4Auth) -> str:
    """The API's resource path the base URL points at: its path after the stage on the API's
    own host; on another host (a custom domain, whose base path mapping the declaration does
    not say) or from a variable, any prefix (``*``)."""
    url = urlsplit(source.base_url or "")
    if not _API_HOST.match(url.hostname or ""):
        return "*"
    path = url.path.rstrip("/")
    if auth.stage != DEFAULT_STAGE:
        path = path.removeprefix(f"/{auth.stage}")
    return path


def _wildcards(path: str) -> str:
    """A path template with each placeholder a ``*`` (IAM's wildcard: any value filled in)."""
    for name in placeholders(path):
        path = path.replace(f"{{{name}}}", "*")
    return path
