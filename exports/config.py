"""Names, limits, schedules and timeouts shared by the function code, local mode and ``infra/``.

Dependency-free on purpose: the CDK app imports it, and tests compare the synthesized template
with these values, so nothing here is typed twice.
"""

from __future__ import annotations

from typing import Final

SERVICE_NAME: Final = "exports"
METRICS_NAMESPACE: Final = "Exports"
API_VERSION_PREFIX: Final = "/v1"


class Env:
    """Environment variable names the functions read (set by the CDK app and by local mode)."""

    TASKS_TABLE: Final = "EXPORTS_TASKS_TABLE"
    ORDERS_TABLE: Final = "EXPORTS_ORDERS_TABLE"
    TASK_QUEUE_URL: Final = "EXPORTS_TASK_QUEUE_URL"
    RESULTS_BUCKET: Final = "EXPORTS_RESULTS_BUCKET"
    DOWNLOAD_URL_TTL_SEC: Final = "EXPORTS_DOWNLOAD_URL_TTL_SEC"
    RETENTION_HOURS: Final = "EXPORTS_RETENTION_HOURS"
    LOCAL_TOKENS: Final = "EXPORTS_LOCAL_TOKENS"
    LIFECYCLE_STATE_MACHINE_ARN: Final = "EXPORTS_LIFECYCLE_STATE_MACHINE_ARN"
    # The webhook signing secret: its Secrets Manager ARN on AWS, or the secret itself locally.
    WEBHOOK_SECRET_ARN: Final = "EXPORTS_WEBHOOK_SECRET_ARN"
    WEBHOOK_SECRET: Final = "EXPORTS_WEBHOOK_SECRET"
    # Local development only: allow plain-http callbacks to loopback addresses.
    ALLOW_LOCAL_CALLBACKS: Final = "EXPORTS_ALLOW_LOCAL_CALLBACKS"


class Names:
    """Default physical names. Local mode uses them as they are; on AWS CloudFormation names
    resources itself and the functions get the real names through :class:`Env`."""

    TASKS_TABLE: Final = "exports-tasks"
    ORDERS_TABLE: Final = "exports-demo-orders"
    TASK_QUEUE: Final = "exports-tasks"
    TASK_DLQ: Final = "exports-tasks-dlq"
    RESULTS_BUCKET: Final = "exports-results"
    LIFECYCLE_STATE_MACHINE: Final = "exports-task-lifecycle"
    API_FUNCTION: Final = "exports-api"
    WORKER_FUNCTION: Final = "exports-worker"
    LIFECYCLE_FUNCTION: Final = "exports-lifecycle"
    CALLBACK_FUNCTION: Final = "exports-callback"


class TaskTable:
    """Key schema of the tasks table and its index."""

    PARTITION_KEY: Final = "task_id"
    USER_INDEX: Final = "by_user"
    USER_INDEX_PARTITION_KEY: Final = "user_id"
    # task ids are time-sortable, so sorting the index by them lists newest first.
    USER_INDEX_SORT_KEY: Final = "task_id"
    TTL_ATTRIBUTE: Final = "expires_at_epoch"


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
    MAX_DATE_RANGE_DAYS: Final = 366
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
    # Backoff for retryable failures: base * 4**retry_count seconds, capped, with full jitter.
    RETRY_BASE_DELAY_SEC: Final = 2
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


class Polling:
    """Advice to clients while a task runs (Retry-After) and caching once it is terminal."""

    MIN_DELAY_SEC: Final = 1
    MAX_DELAY_SEC: Final = 30
    TERMINAL_MAX_AGE_SEC: Final = 5


class Callback:
    """Callback delivery: the first attempt, then retries 1 s, 4 s and 16 s later."""

    RETRY_INTERVAL_SEC: Final = 1
    RETRY_BACKOFF_RATE: Final = 4
    MAX_RETRIES: Final = 3
    REQUEST_TIMEOUT_SEC: Final = 5
    # Errors the workflow retries with the schedule above (the callback function raises them).
    RETRYABLE_ERROR: Final = "CallbackRetryable"
    # Receivers should refuse signatures older than this.
    SIGNATURE_TOLERANCE_SEC: Final = 300


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


class Capacity:
    """Ceilings the CDK app sets on AWS: they protect the data source and the API from bursts."""

    # At most this many worker instances read the queue at once (SQS event source maximum
    # concurrency, 2..1000): the global limit on parallel queries against the data source.
    WORKER_MAX_CONCURRENCY: Final = 5
    # Default route throttling of the HTTP API stage (steady requests per second, and burst).
    API_THROTTLE_RATE_PER_SEC: Final = 50
    API_THROTTLE_BURST: Final = 100
