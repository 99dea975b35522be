"""An HTTP server that plays API Gateway (HTTP API, payload format 2.0) with a JWT authorizer.

Bearer tokens map to users (:mod:`local_stack.local_users`); the user id and claims go exactly
where the JWT authorizer puts them, in its format (an array claim as ``"[a b]"``), so the API
function runs unchanged.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from werkzeug.exceptions import NotFound
from werkzeug.serving import BaseWSGIServer, make_server
from werkzeug.utils import redirect, send_from_directory
from werkzeug.wrappers import Request, Response

from exports.core.config.api import is_public
from local_stack import cors
from local_stack.lambda_context import LocalLambdaContext
from local_stack.local_users import LocalUser

logger = logging.getLogger("local_stack.gateway")
Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
_TEXT_TYPES = ("application/json", "text/", "application/xml")
# What a log line must not hold raw: C0 controls, DEL, C1 controls, the line and paragraph
# separators (some viewers break lines there), and the backslash the escapes start with.
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\\]")
# Where the export console's static files are served (clients/console; no token: the page asks).
CONSOLE_PATH = "/console"
# What a browser asks every origin for, without a token: no icon (204), never a 401.
FAVICON_PATH = "/favicon.ico"
# Local mode's own routes (a dev token required): the mailbox, the schedule loop's clock.
LOCAL_PREFIX = "/local/"
# A local route answers the request of a signed-in dev user.
LocalRoute = Callable[[Request, LocalUser], Any]


def printable(text: str) -> str:
    """``text`` for one log line: control characters (CR, LF, ESC, ...), DEL, C1 controls and
    Unicode's line and paragraph separators escaped as ``\\xNN`` / ``\\uNNNN``, and a backslash
    doubled, so a request path (decoded from ``%0d%0a`` or ``%1b[``) cannot end the line, forge
    another, or colour the terminal; and an escape in the log always means one in the path."""
    return _UNPRINTABLE.sub(_escaped, text)


def _escaped(match: re.Match[str]) -> str:
    character = match.group(0)
    if character == "\\":
        return "\\\\"
    code = ord(character)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def authorizer_claims(user: LocalUser) -> dict[str, str]:
    """The claims as API Gateway's JWT authorizer passes them: strings, arrays as ``"[a b]"``."""
    claims = {"sub": user.user_id, "iss": "local", "aud": "exports"}
    for name, value in user.claims.items():
        claims[name] = f"[{' '.join(value)}]" if isinstance(value, list) else value
    return claims


def to_event(request: Request, body: bytes, user: LocalUser | None) -> dict[str, Any]:
    """The HTTP API v2 event API Gateway would send for ``request``."""
    headers: dict[str, str] = {}
    for name, value in request.headers.items():
        key = name.lower()
        headers[key] = f"{headers[key]},{value}" if key in headers else value
    is_text = not body or headers.get("content-type", "").startswith(_TEXT_TYPES)
    try:
        text_body = body.decode("utf-8") if is_text else None
    except UnicodeDecodeError:
        text_body = None
    query = request.query_string.decode("latin-1")
    # API Gateway says which scheme the client used (the permalink's URL is built with it).
    headers.setdefault("x-forwarded-proto", request.scheme)
    now = time.time()
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": request.path,
        "rawQueryString": query,
        "headers": headers,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "local",
            "domainName": request.host,
            "domainPrefix": "local",
            "http": {
                "method": request.method,
                "path": request.path,
                "protocol": request.environ.get("SERVER_PROTOCOL", "HTTP/1.1"),
                "sourceIp": request.remote_addr or "127.0.0.1",
                "userAgent": headers.get("user-agent", ""),
            },
            "requestId": str(uuid.uuid4()),
            "routeKey": "$default",
            "stage": "$default",
            "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
            "timeEpoch": int(now * 1000),
        },
        "isBase64Encoded": text_body is None,
    }
    if request.args:
        event["queryStringParameters"] = {key: ",".join(request.args.getlist(key)) for key in request.args}
    if body:
        event["body"] = text_body if text_body is not None else base64.b64encode(body).decode()
    if request.cookies:
        event["cookies"] = [f"{key}={value}" for key, value in request.cookies.items()]
    if user is not None:
        scope = user.claims.get("scope")
        scopes = scope.split() if isinstance(scope, str) else None
        event["requestContext"]["authorizer"] = {"jwt": {"claims": authorizer_claims(user), "scopes": scopes}}
    return event


def from_result(result: Mapping[str, Any]) -> Response:
    """The HTTP response for a Lambda proxy result (payload format 2.0)."""
    body = result.get("body") or ""
    data = base64.b64decode(body) if result.get("isBase64Encoded") else body.encode("utf-8")
    response = Response(data, status=int(result.get("statusCode", 200)))
    for name, value in (result.get("headers") or {}).items():
        response.headers[name] = value
    for name, values in (result.get("multiValueHeaders") or {}).items():
        for value in values:
            response.headers.add(name, value)
    for cookie in result.get("cookies") or []:
        response.headers.add("Set-Cookie", cookie)
    return response


def _unauthorized() -> Response:
    body = {"error": {"code": "UNAUTHORIZED", "message": "a valid bearer token is required"}}
    return Response(
        json.dumps(body), status=401, content_type="application/json", headers={"WWW-Authenticate": "Bearer"}
    )


class Gateway:
    """The local HTTP API in front of the API function."""

    def __init__(
        self,
        handler: Handler,
        tokens: Mapping[str, LocalUser],
        host: str = "127.0.0.1",
        port: int = 8000,
        console_dir: Path | None = None,
        cors_allowed_origins: tuple[str, ...] = (),
        local_routes: Mapping[tuple[str, str], LocalRoute] | None = None,
    ) -> None:
        self._handler = handler
        self._console_dir = console_dir
        # CORS as the CDK app's cors_allowed_origins sets it on the HTTP API (none: CORS off).
        self._cors_origins = cors_allowed_origins
        # (method, path) -> a function of the request returning a JSON-ready body.
        self._local_routes = dict(local_routes or {})
        # Lambda gives an execution environment one event at a time, and the function relies on it
        # (Powertools' resolver keeps the current event in a module global): requests served on
        # the server's threads take turns, or one request could run as another request's user.
        self._one_at_a_time = threading.Lock()
        self._tokens = dict(tokens)
        self._server: BaseWSGIServer = make_server(host, port, self._wsgi, threaded=True)
        self.url = f"http://{host}:{self._server.server_port}"

    def _wsgi(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        request = Request(environ)
        started = time.monotonic()
        response = self._dispatch(request)
        logger.info(
            "%s %s %s %.0fms",
            printable(request.method),
            printable(request.full_path.rstrip("?")),
            response.status_code,
            (time.monotonic() - started) * 1000,
        )
        return response(environ, start_response)

    def _dispatch(self, request: Request) -> Response:
        if self._cors_origins and cors.is_preflight(request.method, request.headers):
            # On AWS the preflight route needs no token, and API Gateway answers with the configured
            # CORS headers (it ignores the function's own): the same answer, without the function.
            return Response(status=204, headers=cors.preflight_headers(request.headers, self._cors_origins))
        response = self._route(request)
        if self._cors_origins:
            response.headers.update(cors.response_headers(request.headers, self._cors_origins))
        return response

    def _route(self, request: Request) -> Response:
        if self._console_dir and (request.path == CONSOLE_PATH or request.path.startswith(f"{CONSOLE_PATH}/")):
            return self._console(request, self._console_dir)
        if request.path == FAVICON_PATH and request.method in ("GET", "HEAD"):
            return Response(status=204, headers={"Cache-Control": "public, max-age=86400"})
        user = self._user_of(request)
        # API Gateway's routes without the authorizer: GET on the documentation (the CDK app's).
        if user is None and not (request.method == "GET" and is_public(request.path)):
            return _unauthorized()
        if request.path.startswith(LOCAL_PREFIX) and user is not None:
            return self._local(request, user)
        body = request.get_data(cache=False)
        event = to_event(request, body, user)
        with self._one_at_a_time:
            result = self._handler(event, LocalLambdaContext("exports-api", timeout_sec=29))
        return from_result(result)

    def _local(self, request: Request, user: LocalUser) -> Response:
        route = self._local_routes.get((request.method, request.path))
        if route is None:
            body: Any = {"error": {"code": "NOT_FOUND", "message": f"no local route {request.method} {request.path}"}}
            return Response(json.dumps(body), status=404, content_type="application/json")
        try:
            body = route(request, user)
        except ValueError as error:
            body = {"error": {"code": "VALIDATION_ERROR", "message": str(error)}}
            return Response(json.dumps(body), status=422, content_type="application/json")
        return Response(json.dumps(body), status=200, content_type="application/json")

    @staticmethod
    def _console(request: Request, folder: Path) -> Response:
        """A file of the console's build (its page for the folder itself); 404 for any other."""
        if request.path == CONSOLE_PATH:  # the page's relative links need the trailing slash
            return redirect(f"{CONSOLE_PATH}/")
        name = request.path.removeprefix(f"{CONSOLE_PATH}/") or "index.html"
        try:
            return send_from_directory(folder, name, request.environ)
        except NotFound:
            body = {"error": {"code": "NOT_FOUND", "message": f"no console file {name} (build it: make console)"}}
            return Response(json.dumps(body), status=404, content_type="application/json")

    def _user_of(self, request: Request) -> LocalUser | None:
        scheme, _, token = (request.headers.get("Authorization") or "").partition(" ")
        if scheme.lower() != "bearer":
            return None
        return self._tokens.get(token.strip())

    def serve_forever(self) -> None:
        """Serve until :meth:`shutdown`."""
        self._server.serve_forever()

    def shutdown(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._server.server_close()
