"""Names, limits, schedules and timeouts the infrastructure (``infra/``) shares with the code.

Dependency-free on purpose: the CDK app imports it, and tests compare the synthesized template
with these values, so nothing here is typed twice. A constant only the code uses lives beside
the code that uses it, not here.
"""

from __future__ import annotations

from datetime import date
from typing import Final

SERVICE_NAME: Final = "exports"
METRICS_NAMESPACE: Final = "Exports"


def metrics_namespace(stack_name: str) -> str:
    """The business metrics' namespace of a deployed stack (``Exports/exports-dev``): two stacks
    in one account, of one stage or of two, never share a metric, an alarm's numbers or the
    dashboard's. Local mode, which has no stack, publishes under :data:`METRICS_NAMESPACE`."""
    return f"{METRICS_NAMESPACE}/{stack_name}"


API_VERSION_PREFIX: Final = "/v1"
OPENAPI_PATH: Final = "/openapi.json"
DOCS_PATH: Final = "/docs"
# The API's own documentation, served to GET without a token (on AWS and in local mode).
PUBLIC_PATHS: Final = (OPENAPI_PATH, DOCS_PATH)


class Env:
    """Environment variable names the functions read (set by the CDK app and by local mode)."""

    TASKS_TABLE: Final = "EXPORTS_TASKS_TABLE"
    # The demo tables' names, which the CDK app and local mode set for the functions that build
    # the registry when a declared type names them as its ``table_env`` (exports.toml's
    # orders_dynamodb does); no settings read them.
    ORDERS_TABLE: Final = "EXPORTS_ORDERS_TABLE"
    CUSTOMERS_TABLE: Final = "EXPORTS_CUSTOMERS_TABLE"
    # JSON object: priority lane name -> queue URL.
    TASK_QUEUE_URLS: Final = "EXPORTS_TASK_QUEUE_URLS"
    RESULTS_BUCKET: Final = "EXPORTS_RESULTS_BUCKET"
    DOWNLOAD_URL_TTL_SEC: Final = "EXPORTS_DOWNLOAD_URL_TTL_SEC"
    RETENTION_HOURS: Final = "EXPORTS_RETENTION_HOURS"
    LIFECYCLE_STATE_MACHINE_ARN: Final = "EXPORTS_LIFECYCLE_STATE_MACHINE_ARN"
    # The webhook signing secret: its Secrets Manager ARN on AWS, or the secret itself locally.
    WEBHOOK_SECRET_ARN: Final = "EXPORTS_WEBHOOK_SECRET_ARN"
    WEBHOOK_SECRET: Final = "EXPORTS_WEBHOOK_SECRET"
    MAX_ACTIVE_TASKS_PER_USER: Final = "EXPORTS_MAX_ACTIVE_TASKS_PER_USER"
    MAX_BACKLOG: Final = "EXPORTS_MAX_BACKLOG"
    HOT_KEY_RATE_PER_MINUTE: Final = "EXPORTS_HOT_KEY_RATE_PER_MINUTE"
    HOT_KEY_BURST: Final = "EXPORTS_HOT_KEY_BURST"
    # Local development only: allow plain-http callbacks to loopback addresses.
    ALLOW_LOCAL_CALLBACKS: Final = "EXPORTS_ALLOW_LOCAL_CALLBACKS"
    # Which code writes XLSX files: settings.XlsxEngine.STREAM (default) or .OPENPYXL.
    XLSX_ENGINE: Final = "EXPORTS_XLSX_ENGINE"
    # Seconds between a running task's progress writes (each is a push event and a DynamoDB write).
    PROGRESS_INTERVAL_SEC: Final = "EXPORTS_PROGRESS_INTERVAL_SEC"
    # The declaration file of sources and export types (TOML; default: Declarations.DEFAULT_FILE).
    EXPORTS_CONFIG: Final = "EXPORTS_CONFIG"
    # JSON object: source name -> keys that replace the declaration's (the CDK app's context
    # gives connections this way, e.g. {"shop": {"secret_arn": "arn:..."}}).
    SOURCE_OVERRIDES: Final = "EXPORTS_SOURCE_OVERRIDES"
    # The most partitions one export is split into (FanOut.MAX_PARTITIONS_DEFAULT if unset).
    MAX_PARTITIONS: Final = "EXPORTS_MAX_PARTITIONS"
    # Rows per partition: an export expected to have more is split (FanOut.PARTITION_ROWS if unset).
    PARTITION_ROWS: Final = "EXPORTS_PARTITION_ROWS"
    # The fan-out state machine (one execution per split export); unset: exports are not split.
    FAN_OUT_STATE_MACHINE_ARN: Final = "EXPORTS_FAN_OUT_STATE_MACHINE_ARN"
    # The push channel (docs/push.md): its connections table, the ws(s) URL clients open (given
    # out with stream tickets; unset: no push, clients poll), the https endpoint the push
    # function posts to (the WebSocket API's management API), and the JWT issuer and audience a
    # ``bearer.<jwt>`` subprotocol is verified against (unset: tickets only).
    CONNECTIONS_TABLE: Final = "EXPORTS_CONNECTIONS_TABLE"
    WEBSOCKET_URL: Final = "EXPORTS_WEBSOCKET_URL"
    # boto3's own variable of the service's endpoint: the shared client factory's client of the
    # management API posts to the stage's URL with it.
    WEBSOCKET_ENDPOINT: Final = "AWS_ENDPOINT_URL_APIGATEWAYMANAGEMENTAPI"
    JWT_ISSUER: Final = "EXPORTS_JWT_ISSUER"
    JWT_AUDIENCE: Final = "EXPORTS_JWT_AUDIENCE"
    # Scheduled exports (docs/schedules.md): the schedules table, the EventBridge Scheduler
    # group of this stage, the function its schedules invoke, the role Scheduler assumes to
    # invoke it and the dead-letter queue of that target.
    SCHEDULES_TABLE: Final = "EXPORTS_SCHEDULES_TABLE"
    SCHEDULE_GROUP: Final = "EXPORTS_SCHEDULE_GROUP"
    SCHEDULE_TARGET_ARN: Final = "EXPORTS_SCHEDULE_TARGET_ARN"
    SCHEDULER_ROLE_ARN: Final = "EXPORTS_SCHEDULER_ROLE_ARN"
    SCHEDULE_DLQ_ARN: Final = "EXPORTS_SCHEDULE_DLQ_ARN"
    MAX_SCHEDULES_PER_USER: Final = "EXPORTS_MAX_SCHEDULES_PER_USER"
    MIN_SCHEDULE_INTERVAL_MIN: Final = "EXPORTS_MIN_SCHEDULE_INTERVAL_MIN"
    # E-mail of scheduled runs: the verified SES sender (unset: no mail, recipients refused) and
    # the domains recipients may belong to (comma-separated; unset: any).
    MAIL_SENDER: Final = "EXPORTS_MAIL_SENDER"
    MAIL_ALLOWED_DOMAINS: Final = "EXPORTS_MAIL_ALLOWED_DOMAINS"


class Names:
    """Default physical names. Local mode uses them as they are; on AWS CloudFormation names
    resources itself and the functions get the real names through :class:`Env`."""

    TASKS_TABLE: Final = "exports-tasks"
    ORDERS_TABLE: Final = "exports-demo-orders"
    CUSTOMERS_TABLE: Final = "exports-demo-customers"
    TASK_QUEUE: Final = "exports-tasks"
    RESULTS_BUCKET: Final = "exports-results"
    LIFECYCLE_STATE_MACHINE: Final = "exports-task-lifecycle"
    FAN_OUT_STATE_MACHINE: Final = "exports-fan-out"
    API_FUNCTION: Final = "exports-api"
    WORKER_FUNCTION: Final = "exports-worker"
    LIFECYCLE_FUNCTION: Final = "exports-lifecycle"
    CALLBACK_FUNCTION: Final = "exports-callback"
    CONNECTIONS_TABLE: Final = "exports-connections"
    STREAM_FUNCTION: Final = "exports-stream"
    PUSH_FUNCTION: Final = "exports-push"
    SCHEDULES_TABLE: Final = "exports-schedules"
    SCHEDULE_FUNCTION: Final = "exports-schedule"
    SCHEDULE_GROUP: Final = "exports"
    SCHEDULE_DLQ: Final = "exports-schedule-dlq"


class TaskTable:
    """Key schema of the tasks table and its index."""

    PARTITION_KEY: Final = "task_id"
    USER_INDEX: Final = "by_user"
    USER_INDEX_PARTITION_KEY: Final = "user_id"
    # task ids are time-sortable, so sorting the index by them lists newest first.
    USER_INDEX_SORT_KEY: Final = "task_id"
    TTL_ATTRIBUTE: Final = "expires_at_epoch"
    # Bumped by every write of a task item (the repository's ADD): the push channel's ``seq``.
    WRITE_SEQ: Final = "write_seq"


class SchedulesTable:
    """Key schema of the schedules table: one item per schedule, and one per firing (the
    firing's idempotency record), under the schedule's partition."""

    PARTITION_KEY: Final = "pk"
    SORT_KEY: Final = "sk"
    USER_INDEX: Final = "by_user"
    USER_INDEX_PARTITION_KEY: Final = "user_id"
    # schedule ids are time-sortable: the index lists newest first.
    USER_INDEX_SORT_KEY: Final = "schedule_id"
    TTL_ATTRIBUTE: Final = "expires_at_epoch"


class Schedules:
    """Scheduled exports (docs/schedules.md): limits and the retry policy of Scheduler's target."""

    MAX_PER_USER_DEFAULT: Final = 20
    MIN_INTERVAL_MIN_DEFAULT: Final = 15
    # A schedule pauses itself after this many consecutive failed runs.
    MAX_CONSECUTIVE_FAILURES: Final = 5
    NEXT_RUNS_SHOWN: Final = 5
    MAX_RECIPIENTS: Final = 10
    DEFAULT_TIMEZONE: Final = "Etc/UTC"
    # EventBridge Scheduler's retry policy of the target (then its dead-letter queue).
    TARGET_MAX_RETRY_ATTEMPTS: Final = 5
    TARGET_MAX_EVENT_AGE_SEC: Final = 3600
    # The schedule function's timeout.
    FUNCTION_TIMEOUT_SEC: Final = 30
    # How far ahead a firing moved out of a DST gap gets its one-time Scheduler schedule (more
    # than a year: every zone's next spring-forward).
    MOVED_FIRING_HORIZON_DAYS: Final = 400


class Push:
    """The push channel (docs/push.md): WebSocket protocol, tickets, connections, stream reading."""

    SUBPROTOCOL: Final = "exports.v1"
    # Sec-WebSocket-Protocol entries that carry a credential (a ticket, or a JWT).
    TICKET_PREFIX: Final = "ticket."
    BEARER_PREFIX: Final = "bearer."
    TICKET_TTL_SEC: Final = 60
    # API Gateway closes a WebSocket connection after 2 hours; its items expire by then.
    CONNECTION_TTL_SEC: Final = 2 * 3600
    # The connections table: partition and sort key, TTL attribute.
    PARTITION_KEY: Final = "pk"
    SORT_KEY: Final = "sk"
    TTL_ATTRIBUTE: Final = "expires_at_epoch"
    # The push function's stream mapping: records per batch, how long a batch may gather (a
    # task's progress records of one batch are sent as one event: about one a second at most),
    # retries of a failing batch (bisected) before it goes to the on-failure queue.
    BATCH_SIZE: Final = 100
    BATCHING_WINDOW_SEC: Final = 1
    MAX_RETRY_ATTEMPTS: Final = 3
    MAX_RECORD_AGE_SEC: Final = 300
    FUNCTION_TIMEOUT_SEC: Final = 30
    # The WebSocket API stage's throttling (steady requests/s and burst, per account-region share).
    THROTTLE_RATE: Final = 100
    THROTTLE_BURST: Final = 200


class OrdersTable:
    """Key schema of the demo orders table (the data source of the ``orders`` export type)."""

    PARTITION_KEY: Final = "order_id"
    DAY_INDEX: Final = "by_day"
    DAY_INDEX_PARTITION_KEY: Final = "order_day"
    DAY_INDEX_SORT_KEY: Final = "created_at"


class Limits:
    """Request and task limits."""

    MAX_BODY_BYTES: Final = 64 * 1024
    PRIORITY_HIGHEST: Final = 1
    PRIORITY_LOWEST: Final = 10
    PRIORITY_DEFAULT: Final = 5
    TIMEOUT_SEC_DEFAULT: Final = 300
    TIMEOUT_SEC_MIN: Final = 10
    TIMEOUT_SEC_MAX: Final = 3600
    MAX_RETRIES_DEFAULT: Final = 3
    # Filter dates outside these are refused: a range reaching 9999-12-31 cannot even be read
    # day by day (the day after it does not exist).
    EARLIEST_DATE: Final = date(1900, 1, 1)
    LATEST_DATE: Final = date(2999, 12, 31)
    # Filter integers are PostgreSQL bigints: beyond them a bound parameter (or an array of
    # them) fails in the worker, so submit refuses them.
    INTEGER_MIN: Final = -(2**63)
    INTEGER_MAX: Final = 2**63 - 1
    # Filter decimals: at most this many digits before and after the point. PostgreSQL's numeric
    # takes 131,072 and 16,383; a bound this far inside them keeps `1e999999` (and its exact
    # comparisons with a declared min or max) from ever reaching the worker.
    DECIMAL_MAX_INTEGER_DIGITS: Final = 1000
    DECIMAL_MAX_FRACTION_DIGITS: Final = 1000
    LIST_PAGE_DEFAULT: Final = 20
    LIST_PAGE_MAX: Final = 100


class Worker:
    """Worker timing and upload settings."""

    FUNCTION_TIMEOUT_SEC: Final = 900
    # A claimed task belongs to its worker until the lease runs out; progress writes renew it.
    LEASE_SEC: Final = 120
    PROGRESS_INTERVAL_SEC: Final = 2.0
    # S3 wants every part but the last to be at least 5 MiB.
    UPLOAD_PART_BYTES: Final = 8 * 1024 * 1024
    BATCH_SIZE: Final = 1
    # Backoff for retryable failures (a source unavailable, throttling): retry n + 1 waits
    # between half and all of min(MAX, BASE * 4**n) seconds ("equal jitter"): 7.5-15 s, 30-60 s,
    # 120-240 s. The default three retries span 2.6 to 5.3 minutes, so a database failover
    # (about a minute on RDS Multi-AZ) is outlasted, where 2 s * 4**n with full jitter gave up
    # after 25-35 s.
    RETRY_BASE_DELAY_SEC: Final = 15
    RETRY_MAX_DELAY_SEC: Final = 300


class Queue:
    """SQS settings. A message is retried by our own retry policy first (re-enqueued with a
    delay), so redrive only catches messages that keep crashing the worker itself."""

    MAX_RECEIVE_COUNT: Final = 5
    # AWS advice: at least six times the consumer's timeout.
    VISIBILITY_TIMEOUT_SEC: Final = 6 * Worker.FUNCTION_TIMEOUT_SEC
    RETENTION_SEC: Final = 4 * 24 * 3600
    DLQ_RETENTION_SEC: Final = 14 * 24 * 3600
    LONG_POLL_SEC: Final = 20


class Results:
    """Result files and links."""

    KEY_PREFIX: Final = "results"
    DOWNLOAD_URL_TTL_SEC: Final = 300
    RETENTION_HOURS_DEFAULT: Final = 24
    RETENTION_HOURS_MIN: Final = 1
    RETENTION_HOURS_MAX: Final = 72
    ABORT_INCOMPLETE_UPLOAD_DAYS: Final = 1


class Callback:
    """Callback delivery: the first attempt, then retries 1 s, 4 s and 16 s later."""

    RETRY_INTERVAL_SEC: Final = 1
    RETRY_BACKOFF_RATE: Final = 4
    MAX_RETRIES: Final = 3
    REQUEST_TIMEOUT_SEC: Final = 5
    # Errors the workflow retries with the schedule above (the callback function raises them).
    RETRYABLE_ERROR: Final = "CallbackRetryable"


# The dimensions ExportFailed carries besides ``service``: the task's error code and the data
# source of its export type (exports.services.endings.NO_SOURCE for a type without one).
ERROR_CODE_DIMENSION: Final = "error_code"
SOURCE_DIMENSION: Final = "source"
# The error codes of exports that failed because of what was asked, not a fault to fix: the file
# would not fit its format (XLSX, PDF, Parquet) or one worker run (EXPORT_TOO_LONG: no order key to
# continue by). ExportFailed counts them too (the dashboard shows every code); its alarm does not.
USER_CAUSED_FAILURES: Final = (
    "EXPORT_TOO_LONG",
    "PARQUET_TOO_LARGE",
    "PDF_TOO_LARGE",
    "XLSX_CELL_TOO_LONG",
    "XLSX_TOO_LARGE",
)


class Metric:
    """Business metric names (EMF), shared with dashboards and alarms."""

    SUBMITTED: Final = "ExportSubmitted"
    STARTED: Final = "ExportStarted"
    COMPLETED: Final = "ExportCompleted"
    FAILED: Final = "ExportFailed"
    RETRIED: Final = "ExportRetried"
    TIMED_OUT: Final = "ExportTimedOut"
    ROWS_EXPORTED: Final = "RowsExported"
    BYTES_EXPORTED: Final = "BytesExported"
    DURATION_MS: Final = "ExportDurationMs"
    ENQUEUE_FAILED: Final = "EnqueueFailed"
    DUPLICATE_DELIVERY: Final = "DuplicateDelivery"
    CALLBACK_FAILED: Final = "CallbackFailed"
    CALLBACK_DELIVERED: Final = "CallbackDelivered"
    CANCELLED: Final = "ExportCancelled"
    CONTINUED: Final = "ExportContinued"
    DEDUPLICATED: Final = "ExportDeduplicated"
    # An identical request with a higher priority moved a waiting task into a higher lane.
    PROMOTED: Final = "ExportPromoted"
    DEFERRED: Final = "ExportDeferred"
    REJECTED: Final = "ExportRejected"
    REDELIVERED: Final = "TaskRedelivered"
    # A task waited because its data source already ran its limit of concurrent exports.
    SOURCE_DEFERRED: Final = "SourceBusyDeferred"
    # Scheduled exports: a firing made its run; a delivery of a firing that had its run already;
    # a schedule paused itself (type gone, access revoked, filters refused, too many failures).
    SCHEDULE_FIRED: Final = "ScheduleFired"
    SCHEDULE_DUPLICATE_FIRING: Final = "ScheduleDuplicateFiring"
    SCHEDULE_PAUSED: Final = "SchedulePaused"


class Capacity:
    """Ceilings the CDK app sets on AWS: they protect the data source and the API from bursts."""

    # At most this many worker instances read the queue at once (SQS event source maximum
    # concurrency, 2..1000): the global limit on parallel queries against the data source.
    WORKER_MAX_CONCURRENCY: Final = 6
    # Default route throttling of the HTTP API stage (steady requests per second, and burst).
    API_THROTTLE_RATE_PER_SEC: Final = 50
    API_THROTTLE_BURST: Final = 100


class Cors:
    """The HTTP API's CORS rules when ``cors_allowed_origins`` is set: every request header the
    API reads may be sent cross-origin (the token, the JSON body's type, ``Idempotency-Key``;
    header names are case-insensitive), and the response headers a client reads beyond the
    CORS-safelisted ones may be read."""

    ALLOW_METHODS: Final = ("GET", "POST", "OPTIONS")
    ALLOW_HEADERS: Final = ("authorization", "content-type", "idempotency-key")
    EXPOSE_HEADERS: Final = ("location", "retry-after")
    MAX_AGE_SEC: Final = 3600


class ThrottleRetry:
    """How the lifecycle workflow retries its functions when Lambda throttles them
    (``Lambda.TooManyRequestsException``): the lifecycle function in AwaitEnd and Expire, whose
    loss would cost a task its deadline and its callback, and the callback function in Deliver
    and GiveUp (apart from the callback's own retries, which a throttle must not spend). Every
    submit starts an execution whose first step invokes the lifecycle function, and the API
    admits bursts of ``Capacity.API_THROTTLE_BURST`` (100) against its few reserved executions
    (infra's ``Sizing.LIFECYCLE_RESERVED_CONCURRENCY``, 5): most of a burst is throttled at
    first. Full jitter spreads the retries so they do not come back in step; waits of 1, 2, 4
    ... s capped at MAX_DELAY_SEC give a window of about three minutes (half of it on average),
    for work of the burst that takes some 20 s at 1 s an invocation."""

    INTERVAL_SEC: Final = 1
    BACKOFF_RATE: Final = 2.0
    MAX_ATTEMPTS: Final = 10
    MAX_DELAY_SEC: Final = 30
    # The longest one lifecycle invocation is taken to last when sizing the window (a DynamoDB
    # update and a Step Functions call, cold start included).
    INVOCATION_SEC: Final = 1.0


class Lane:
    """A priority lane: its own queue (and DLQ) and its own share of the workers, so a flood of
    low-priority work cannot starve high-priority tasks."""

    def __init__(self, name: str, highest: int, lowest: int, max_concurrency: int) -> None:
        self.name = name
        self.highest = highest
        self.lowest = lowest
        # SQS event source mappings accept 2..1000.
        self.max_concurrency = max_concurrency

    @property
    def queue_name(self) -> str:
        """The lane's queue."""
        return f"{Names.TASK_QUEUE}-{self.name}"

    @property
    def dlq_name(self) -> str:
        """The lane's dead-letter queue."""
        return f"{Names.TASK_QUEUE}-{self.name}-dlq"


LANES: Final = (Lane("high", 1, 3, 2), Lane("normal", 4, 7, 2), Lane("low", 8, 10, 2))


class Admission:
    """Limits applied at submit: per-user quota, backlog, idempotency keys."""

    MAX_ACTIVE_TASKS_PER_USER: Final = 10
    # Approximate visible messages over all lanes beyond which submit answers 429.
    MAX_BACKLOG: Final = 2000
    BACKLOG_CACHE_SEC: Final = 5
    RETRY_AFTER_QUOTA_SEC: Final = 30
    RETRY_AFTER_BACKLOG_SEC: Final = 60
    IDEMPOTENCY_KEY_MAX_LENGTH: Final = 255
    IDEMPOTENCY_TTL_SEC: Final = 24 * 3600


class HotKey:
    """Token bucket per hot key (export type + date range), enforced by the worker."""

    RATE_PER_MINUTE: Final = 20
    BURST: Final = 5
    # A deferred task comes back after this long at the most (plus jitter).
    MAX_DEFER_SEC: Final = 60


class CustomersTable:
    """Key schema of the demo customers table (the data source of the ``customers`` export type)."""

    PARTITION_KEY: Final = "customer_id"
    DAY_INDEX: Final = "by_signup_day"
    DAY_INDEX_PARTITION_KEY: Final = "signup_day"
    DAY_INDEX_SORT_KEY: Final = "signed_up_at"


class XlsxLimits:
    """The XLSX engines' room on AWS (the limits an export stops at are the engines' own:
    exports/writers/xlsx_limits.py)."""

    # The worker's /tmp (Lambda ephemeral storage, 512..10240 MiB; what is above 512 MiB is billed
    # per GB-second of every worker run). At about 740 bytes of sheet XML per 13-column order row
    # (docs/performance.md) it holds about 2.8 million rows before xlsx_limits.TMP_RESERVE_BYTES is
    # reached, and saving that much at xlsx_limits.SAVE_BYTES_PER_SEC takes under a minute of the run.
    WORKER_EPHEMERAL_STORAGE_MIB: Final = 2048


class Declarations:
    """Declared sources and export types (see docs/export-your-own-data.md)."""

    # The demo declaration the repository ships, relative to the repository (and package) root.
    DEFAULT_FILE: Final = "exports.toml"
    # Where the CDK app puts the effective declaration inside every function's package.
    PACKAGED_FILE: Final = "exports.toml"


class FanOut:
    """One export split into partitions written at once (docs/fan-out.md)."""

    # An export expected to have more rows than this is split, one partition per this many
    # rows (at ~0.5 M rows/s per partition process, about 20 s of writing each; see
    # docs/performance.md); per deployment with Env.PARTITION_ROWS.
    PARTITION_ROWS: Final = 10_000_000
    # Parallel partitions per export, per deployment (Env.MAX_PARTITIONS).
    MAX_PARTITIONS_DEFAULT: Final = 10
    MAX_PARTITIONS_LIMIT: Final = 100
    # A partition that finds every slot of its source busy says so, and the workflow waits this
    # long before it tries that partition again (until a slot frees or the task's deadline).
    SOURCE_BUSY_RETRY_SEC: Final = 10
