"""Reading a declared HTTP source's pages with urllib3: only its declared hosts, at its
declared pace, within its timeout, retried as ``HTTP_SOURCE_RETRY`` and the service's own
``Retry-After`` say, its failures turned into ours.

Redirects are followed by hand (at most :data:`MAX_REDIRECTS`), each to a declared host only:
the declaration is the allow-list, so a service, a ``next`` link or a redirect cannot send a
worker to an address the operator did not name (the instance metadata service, another tenant's
backend). Messages name the source, the status and the path, never the query (it holds caller
values) nor a credential.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from email.utils import parsedate_to_datetime
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urljoin, urlsplit

import urllib3
from urllib3.exceptions import HTTPError, NewConnectionError, SSLError
from urllib3.exceptions import TimeoutError as Urllib3Timeout

from exports.core.aws.errors import AwsError, translated
from exports.core.config.retry import HTTP_SOURCE_RETRY, HTTP_SOURCE_RETRY_AFTER_MAX_SEC, Backoff
from exports.core.errors import ExportFailed, LostOwnership, SourceCode
from exports.core.export_type import RunControl
from exports.sources.errors import SourceUnavailable

if TYPE_CHECKING:
    from botocore.credentials import Credentials
    from types_boto3_secretsmanager import SecretsManagerClient

# Redirects followed for one page, each to a declared host.
MAX_REDIRECTS: Final = 5
# The largest page read (a page is parsed whole): larger is a declaration to page smaller.
PAGE_MAX_BYTES: Final = 64 * 1024 * 1024
# Answers worth asking again: the service is slow, overloaded or restarting.
RETRIED_STATUSES: Final = frozenset({408, 429, 500, 502, 503, 504})
_REDIRECTS: Final = frozenset({301, 302, 303, 307, 308})
# A secret is read again after this long (rotations are picked up).
SECRET_MAX_AGE_SEC: Final = 300

Signer = Callable[[str], Mapping[str, str]]


@dataclass(frozen=True)
class Origin:
    """A host a source may be called on: ``port`` None is any port of it."""

    host: str
    port: int | None


def origins(base_url: str | None, hosts: Iterable[str]) -> frozenset[Origin]:
    """The base URL's host and port (when given), and each declared host (``host`` or ``host:port``)."""
    allowed = set()
    if base_url is not None:
        allowed.add(Origin((urlsplit(base_url).hostname or "").lower(), _port(base_url)))
    for entry in hosts:
        name = urlsplit(f"//{entry}")
        allowed.add(Origin((name.hostname or "").lower(), name.port))
    return frozenset(allowed)


def permits(allowed: frozenset[Origin], url: str) -> bool:
    """Whether ``url`` is an http(s) URL on one of the ``allowed`` hosts."""
    parts = urlsplit(url)
    try:
        port = _port(url)
    except ValueError:  # not a port number
        return False
    host = (parts.hostname or "").lower()
    return parts.scheme in ("http", "https") and any(
        origin.host == host and origin.port in (None, port) for origin in allowed
    )


def _port(url: str) -> int:
    parts = urlsplit(url)
    return parts.port or (443 if parts.scheme == "https" else 80)


class HttpJsonReader:
    """:class:`exports.sources.http.ports.JsonPages` over urllib3 for one source: one pool per process,
    requests spaced by ``rate_per_sec``, each bounded by ``timeout_sec`` and the run's time left."""

    def __init__(
        self,
        source: str,
        allowed: frozenset[Origin],
        *,
        timeout_sec: float,
        rate_per_sec: float | None = None,
        headers: Mapping[str, str] | None = None,
        sign: Signer | None = None,
        retry: Backoff = HTTP_SOURCE_RETRY,
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
        draw: Callable[[], float] = random.random,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._source = source
        self._allowed = allowed
        self._timeout_sec = timeout_sec
        self._interval = 1 / rate_per_sec if rate_per_sec else 0.0
        self._headers = {"Accept": "application/json", **(headers or {})}
        self._sign = sign
        self._retry = retry
        self._sleep = sleep
        self._monotonic = monotonic
        self._draw = draw
        self._now = now
        self._pool = urllib3.PoolManager(retries=False)
        self._pace_lock = threading.Lock()
        self._next_start = 0.0

    def get(self, url: str, control: RunControl) -> Any:
        """The page's JSON (numbers with a fraction as Decimals), redirects to declared hosts followed."""
        self._check(url, None)
        for _ in range(MAX_REDIRECTS + 1):
            status, headers, body = self._answer(url, control)
            if status not in _REDIRECTS:
                return self._json(url, headers, body)
            location = headers.get("Location")
            if not location:
                raise self._final(url, f"answered {_status(status)} without a Location", SourceCode.QUERY_FAILED)
            target = urljoin(url, location)
            self._check(target, url)
            url = target
        raise self._final(url, f"redirected more than {MAX_REDIRECTS} times", SourceCode.QUERY_FAILED)

    def _check(self, url: str, redirected_from: str | None) -> None:
        """Refuse a URL off the declared hosts (or a redirect from https to http)."""
        parts = urlsplit(url)
        allowed = permits(self._allowed, url)
        if redirected_from is not None and urlsplit(redirected_from).scheme == "https" and parts.scheme != "https":
            allowed = False
        if not allowed:
            # The host and port only: a link's user information may be a credential.
            where = f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"
            why = f"was redirected to {where}" if redirected_from is not None else f"was asked to call {where}"
            raise ExportFailed(
                f"data source {self._source!r} {why}, which is not among its declared hosts; not called "
                "(add it to the source's hosts if it is yours)",
                code=SourceCode.ACCESS_DENIED,
            )

    def _answer(self, url: str, control: RunControl) -> tuple[int, Mapping[str, str], bytes]:
        """One answer that is not worth asking again for, or the error once the retries are spent."""
        retry = 0
        while True:
            self._pace()
            left = control.seconds_left()
            timeout = self._timeout_sec if left is None else max(0.1, min(self._timeout_sec, left))
            retry_after = None
            try:
                status, headers, body = self._send(url, timeout)
            except SSLError as error:
                raise self._final(
                    url, f"presented a TLS certificate the worker cannot verify ({error})", SourceCode.TLS_UNVERIFIED
                ) from None
            except NewConnectionError:
                # Before the timeout: urllib3 makes a refused connection a kind of timeout.
                problem = "refused the connection"
            except Urllib3Timeout:
                problem = f"did not answer within {timeout:g} s"
            except HTTPError as error:
                problem = f"could not be reached ({type(error).__name__})"
            else:
                if status not in RETRIED_STATUSES:
                    if status >= 400:
                        raise self._refused(url, status)
                    return status, headers, body
                problem = f"answered {_status(status)}"
                retry_after = self._retry_after(headers.get("Retry-After"))
            wait = max(self._retry.wait_sec(retry, self._draw()), retry_after or 0.0)
            left = control.seconds_left()
            if (
                retry >= self._retry.retries
                or (retry_after is not None and retry_after > HTTP_SOURCE_RETRY_AFTER_MAX_SEC)
                or (left is not None and wait >= left)
            ):
                asking = f" and asked to wait {retry_after:g} s" if retry_after is not None else ""
                raise SourceUnavailable(
                    f"data source {self._source!r} {problem} to GET {_path(url)}{asking} "
                    f"({retry + 1} attempt{'s' if retry else ''}); the task is retried later"
                )
            if control.stop_requested():
                raise LostOwnership(f"task {control.task_id} was stopped while its source was retried")
            self._sleep(wait)
            retry += 1

    def _send(self, url: str, timeout: float) -> tuple[int, Mapping[str, str], bytes]:
        headers = dict(self._headers)
        if self._sign is not None:
            headers.update(self._sign(url))
        response = self._pool.urlopen(
            "GET",
            url,
            headers=headers,
            redirect=False,
            retries=False,
            timeout=urllib3.Timeout(connect=timeout, read=timeout),
            preload_content=False,
        )
        try:
            body = response.read(PAGE_MAX_BYTES + 1)
        finally:
            response.release_conn()
        if len(body) > PAGE_MAX_BYTES:
            too_large = f"answered a page over {PAGE_MAX_BYTES} bytes (declare smaller pages)"
            raise self._final(url, too_large, SourceCode.DATA_INVALID)
        return response.status, response.headers, body

    def _pace(self) -> None:
        """Wait for this request's turn at the declared rate."""
        if not self._interval:
            return
        with self._pace_lock:
            start = max(self._monotonic(), self._next_start)
            self._next_start = start + self._interval
        delay = start - self._monotonic()
        if delay > 0:
            self._sleep(delay)

    def _retry_after(self, value: str | None) -> float | None:
        """``Retry-After`` in seconds (a number of seconds or an HTTP date); None when absent or unreadable."""
        if not value:
            return None
        if value.strip().isdigit():
            return float(value.strip())
        try:
            moment = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return max(0.0, (moment - self._now()).total_seconds())

    def _json(self, url: str, headers: Mapping[str, str], body: bytes) -> Any:
        try:
            return json.loads(body, parse_float=Decimal)
        except ValueError:
            kind = headers.get("Content-Type") or "no content type"
            raise self._final(url, f"answered a page that is not JSON ({kind})", SourceCode.DATA_INVALID) from None

    def _refused(self, url: str, status: int) -> ExportFailed:
        """A 4xx or 5xx that asking again does not change: final."""
        codes = {401: SourceCode.AUTH_FAILED, 403: SourceCode.ACCESS_DENIED}
        return self._final(url, f"answered {_status(status)}", codes.get(status, SourceCode.QUERY_FAILED))

    def _final(self, url: str, problem: str, code: str) -> ExportFailed:
        return ExportFailed(f"data source {self._source!r} {problem} to GET {_path(url)}; not retried", code=code)


def _status(status: int) -> str:
    try:
        return f"{status} {HTTPStatus(status).phrase}"
    except ValueError:
        return str(status)


def _path(url: str) -> str:
    return urlsplit(url).path or "/"


def secret_header(
    client: Callable[[], SecretsManagerClient],
    secret_arn: str,
    secret_key: str | None,
    header: str,
    prefix: str = "",
    monotonic: Callable[[], float] = time.monotonic,
) -> Signer:
    """A header whose value is a secret's (the whole string, or one key of its JSON), read again
    after ``SECRET_MAX_AGE_SEC``."""
    cached: list[tuple[float, str]] = []

    def value() -> str:
        if cached and monotonic() - cached[0][0] < SECRET_MAX_AGE_SEC:
            return cached[0][1]
        try:
            with translated("GetSecretValue"):
                text = client().get_secret_value(SecretId=secret_arn).get("SecretString", "")
        except AwsError as error:
            raise ExportFailed(
                f"the secret of an HTTP source cannot be read ({error.aws_code}); not retried",
                code=SourceCode.NOT_CONFIGURED,
            ) from None
        if secret_key is not None:
            try:
                document = json.loads(text)
                text = document[secret_key]
            except (ValueError, KeyError, TypeError):
                raise ExportFailed(
                    f"the secret of an HTTP source holds no JSON key {secret_key!r}; not retried",
                    code=SourceCode.NOT_CONFIGURED,
                ) from None
        if not isinstance(text, str) or not text:
            raise ExportFailed("the secret of an HTTP source is empty; not retried", code=SourceCode.NOT_CONFIGURED)
        cached[:] = [(monotonic(), text)]
        return text

    return lambda _url: {header: prefix + value()}


def sigv4_signer(credentials: Callable[[], Credentials | None], service: str, region: str) -> Signer:
    """Each request signed with AWS Signature Version 4 (API Gateway IAM authorization, Lambda
    function URLs with ``AWS_IAM``), with the worker's own credentials."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest

    def sign(url: str) -> Mapping[str, str]:
        found = credentials()
        if found is None:
            raise ExportFailed(
                "no AWS credentials to sign requests to an HTTP source with; not retried",
                code=SourceCode.NOT_CONFIGURED,
            )
        request = AWSRequest(method="GET", url=url)
        SigV4Auth(found, service, region).add_auth(request)
        return dict(request.headers.items())

    return sign
