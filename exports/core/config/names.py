"""Default physical names of the service's resources (local mode uses them as they are)."""

from __future__ import annotations

from typing import Final

SERVICE_NAME: Final = "exports"


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
    REDELIVERY_STATE_MACHINE: Final = "exports-redelivery"
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
    AUDIT_TABLE: Final = "exports-audit"
    # The tenants' delivery destinations (docs/destinations.md), and the prefix of the names of
    # their Secrets Manager secrets (a destination's SFTP key or password, its ZIP password).
    DESTINATIONS_TABLE: Final = "exports-destinations"
    DESTINATION_SECRET_PREFIX: Final = "exports/finishing/destinations/"
    AUDIT_FUNCTION: Final = "exports-audit"
    # The lifecycle events' bus (docs/events.md), and local mode's queue that a rule copies them to.
    EVENT_BUS: Final = "exports-events"
    EVENTS_QUEUE: Final = "exports-events-local"
