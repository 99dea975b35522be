"""How an HTTP source is declared (``kind = "http"``): where the service is, the hosts it may
be reached on, how to authenticate, how fast to ask; and what its types read (their ``http``
table: the path and query templates, the JSON pointer of the rows, the pagination)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Final, Literal

from pydantic import Field, StringConstraints

from exports.declared.model import EnvName, SourceDecl, SourceHead, StrictModel, TypeDecl

# The key of an HTTP type that says what it reads.
TYPE_KEY: Final = "http"
# The keys that say where an HTTP source is (one of them).
CONNECTION_KEYS: Final = frozenset({"base_url", "base_url_env"})
# A JSON pointer (RFC 6901): "" is the whole document, otherwise "/" then the reference tokens.
JsonPointer = Annotated[str, StringConstraints(pattern=r"^(/[^/]*)*$", max_length=512)]
# A host the source may call: a name or an address, optionally with ":port".
HostName = Annotated[str, StringConstraints(pattern=r"^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(:[0-9]{1,5})?$")]
SecretArn = Annotated[str, StringConstraints(pattern=r"^arn:[a-z-]+:secretsmanager:")]


class BearerAuth(StrictModel):
    """``Authorization: Bearer <token>``, the token read from a Secrets Manager secret."""

    type: Literal["bearer"]
    secret_arn: SecretArn
    # The secret's JSON key holding the token; none: the whole secret string is the token.
    secret_key: str | None = None


class HeaderAuth(StrictModel):
    """One header (an API key) whose value is read from a Secrets Manager secret."""

    type: Literal["header"]
    header: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9-]{1,64}$")]
    secret_arn: SecretArn
    secret_key: str | None = None


class SigV4Service(StrEnum):
    """What AWS SigV4 signs for: API Gateway's APIs, Lambda function URLs."""

    EXECUTE_API = "execute-api"
    LAMBDA = "lambda"


class SigV4Auth(StrictModel):
    """Requests signed with the worker's own AWS credentials (IAM authorization), and what the
    CDK app grants the worker's role to make them: ``execute-api:Invoke`` on the API's stage
    and the types' paths, or invoking the function through its URL (``exports/sources/http/grants.py``)."""

    type: Literal["sigv4"]
    service: SigV4Service = Field(strict=False)
    # None: the deployment's region.
    region: str | None = Field(default=None, pattern=r"^[a-z]{2}(-[a-z]+)+-[0-9]$")
    # The account that owns the API or the function (None: the deployment's).
    account: str | None = Field(default=None, pattern=r"^[0-9]{12}$")
    # execute-api: the API's id (the first label of its execute-api host) and the stage called
    # ("$default" for an HTTP API's default stage, which is not in the URL).
    api_id: str | None = Field(default=None, pattern=r"^[a-z0-9]{10}$")
    stage: str | None = Field(default=None, pattern=r"^(\$default|[A-Za-z0-9_-]{1,128})$")
    # lambda: the function's name, and the alias its URL belongs to (None: the function's own).
    function_name: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_-]{1,64}$")
    qualifier: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_-]{1,128}$")


AuthDecl = Annotated[BearerAuth | HeaderAuth | SigV4Auth, Field(discriminator="type")]


class HttpConnection(SourceHead):
    """Where an HTTP source is and how it is asked.

    ``base_url`` (in the file) or ``base_url_env`` (a variable the deployment sets) says where;
    the hosts it may be called on are the base URL's, and those ``hosts`` adds: no request,
    ``next`` link or redirect goes anywhere else.
    """

    base_url: str | None = Field(default=None, pattern=r"^https?://[^/?#@]+(/[^?#]*)?$")
    base_url_env: EnvName | None = None
    hosts: list[HostName] = Field(default_factory=list)
    auth: AuthDecl | None = None
    # Seconds one request may take (connecting, then each read of the answer).
    timeout_sec: float = Field(default=30, gt=0, le=300)
    # Requests per second one export makes at most (None: as fast as the service answers).
    rate_per_sec: float | None = Field(default=None, gt=0, le=1000)
    # Headers sent with every request (not secrets: they are in the file).
    headers: dict[Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9-]{1,64}$")], str] = Field(default_factory=dict)


class HttpSource(SourceDecl, HttpConnection):
    """A JSON API the workers can reach (an internal microservice, API Gateway, a function URL)."""

    kind: Literal["http"]


class PaginationStyle(StrEnum):
    """How the service hands out its pages."""

    # The body names the next page's cursor, sent back in a query parameter.
    CURSOR = "cursor"
    # The body holds the next page's URL.
    NEXT_LINK = "next_link"
    # Numbered pages, asked for in a query parameter until one comes back empty.
    PAGE = "page"


class PaginationDecl(StrictModel):
    """How to ask for the page after this one, and how to tell the last page."""

    style: PaginationStyle = Field(strict=False)
    # cursor: the pointer of the next cursor in the body (absent, null or "": the last page),
    # and the query parameter it goes back in.
    cursor_field: JsonPointer | None = None
    cursor_param: str | None = Field(default=None, min_length=1)
    # next_link: the pointer of the next page's URL in the body (absent or null: the last page).
    next_field: JsonPointer | None = None
    # page: the query parameter of the page number, and the first page's number.
    page_param: str | None = Field(default=None, min_length=1)
    first_page: int = Field(default=1, ge=0)


class HttpReadDecl(StrictModel):
    """Which pages of the service an HTTP type reads and where the rows are in each."""

    # Relative to the base URL; ``{name}`` placeholders are parameters and caller values,
    # each filled in percent-encoded (a value never adds a path segment).
    path: str = Field(pattern=r"^/[^?#]*$")
    query: dict[str, str] = Field(default_factory=dict)
    # The pointer of the rows' array in each page ("": the page is the array).
    rows: JsonPointer = ""
    pagination: PaginationDecl | None = None


def declared_read(declared: TypeDecl) -> HttpReadDecl:
    """The HTTP type's ``http`` table (the registry hands the kind only its types)."""
    read = getattr(declared, TYPE_KEY, None)
    if not isinstance(read, HttpReadDecl):
        raise TypeError("not an HTTP type")
    return read
