"""The environment variables the functions read, set by the CDK app and by local mode."""

from __future__ import annotations

from typing import Final


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
    # The state machine that tries a FAILED file delivery again on request (docs/destinations.md).
    REDELIVERY_STATE_MACHINE_ARN: Final = "EXPORTS_REDELIVERY_STATE_MACHINE_ARN"
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
    # the domains recipients may belong to (comma-separated; unset: none, only the schedule
    # owner's own verified address).
    MAIL_SENDER: Final = "EXPORTS_MAIL_SENDER"
    MAIL_ALLOWED_DOMAINS: Final = "EXPORTS_MAIL_ALLOWED_DOMAINS"
    # The largest file a run's mail carries as an attachment, in bytes (0: never; docs/schedules.md).
    MAIL_ATTACHMENT_MAX_BYTES: Final = "EXPORTS_MAIL_ATTACHMENT_MAX_BYTES"
    # The audit trail (docs/audit.md): its table (unset: nothing is recorded), and the worker's
    # memory, which turns a worker second into CPU-seconds-equivalent for usage.
    AUDIT_TABLE: Final = "EXPORTS_AUDIT_TABLE"
    WORKER_MEMORY_MB: Final = "EXPORTS_WORKER_MEMORY_MB"
    # Delivery destinations (docs/destinations.md): their table, and the role customers' S3 roles
    # trust (the principal of the trust policy a destination shows; unset: no S3 destinations).
    DESTINATIONS_TABLE: Final = "EXPORTS_DESTINATIONS_TABLE"
    DESTINATION_PRINCIPAL_ARN: Final = "EXPORTS_DESTINATION_PRINCIPAL_ARN"
    # The EventBridge bus lifecycle events go to (docs/events.md; unset: none are published).
    EVENT_BUS: Final = "EXPORTS_EVENT_BUS"
