"""Python SDK for the exports service: submit exports, wait for them, download the files; schedule
recurring exports.

>>> with ExportsClient("http://127.0.0.1:8000", token) as client:  # doctest: +SKIP
...     task = client.wait(client.submit("orders", {"date_from": "2025-01-01", "date_to": "2025-03-31"}).task_id)
...     client.download(task.task_id, "out/")
"""

from importlib.metadata import version

from exports_client.client import UNSET, ExportsClient
from exports_client.errors import (
    APIError,
    AuthenticationError,
    ConflictError,
    ExportsError,
    GoneError,
    IntegrityError,
    InvalidRequestError,
    NetworkError,
    NotFoundError,
    RateLimitedError,
    ServerError,
    ServiceUnavailableError,
    UnexpectedResponseError,
    WaitTimeoutError,
    WebhookVerificationError,
)
from exports_client.models import (
    TERMINAL,
    CallbackView,
    CallerView,
    ErrorView,
    Every,
    EveryDays,
    EveryHours,
    EveryMinutes,
    ExportAccepted,
    ExportFormat,
    ExportTypeView,
    FeedRunView,
    LastRunView,
    MailMessage,
    NextRun,
    PausedReasonView,
    Permalink,
    ScheduleList,
    ScheduleState,
    ScheduleView,
    StreamTicketView,
    TaskList,
    TaskStatus,
    TaskView,
    WhenEmpty,
)
from exports_client.webhooks import parse_event, verify_webhook

__version__ = version("exports-client")
__all__ = [
    "TERMINAL",
    "UNSET",
    "APIError",
    "AuthenticationError",
    "CallbackView",
    "CallerView",
    "ConflictError",
    "ErrorView",
    "Every",
    "EveryDays",
    "EveryHours",
    "EveryMinutes",
    "ExportAccepted",
    "ExportFormat",
    "ExportTypeView",
    "ExportsClient",
    "ExportsError",
    "FeedRunView",
    "GoneError",
    "IntegrityError",
    "InvalidRequestError",
    "LastRunView",
    "MailMessage",
    "NetworkError",
    "NextRun",
    "NotFoundError",
    "PausedReasonView",
    "Permalink",
    "RateLimitedError",
    "ScheduleList",
    "ScheduleState",
    "ScheduleView",
    "ServerError",
    "ServiceUnavailableError",
    "StreamTicketView",
    "TaskList",
    "TaskStatus",
    "TaskView",
    "UnexpectedResponseError",
    "WaitTimeoutError",
    "WebhookVerificationError",
    "WhenEmpty",
    "parse_event",
    "verify_webhook",
]
