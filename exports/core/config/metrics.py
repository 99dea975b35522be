"""Business metrics (EMF): namespace, names and dimensions, shared with dashboards and alarms."""

from __future__ import annotations

from typing import Final

METRICS_NAMESPACE: Final = "Exports"


def metrics_namespace(stack_name: str) -> str:
    """The business metrics' namespace of a deployed stack (``Exports/exports-dev``): two stacks
    in one account, of one stage or of two, never share a metric, an alarm's numbers or the
    dashboard's. Local mode, which has no stack, publishes under :data:`METRICS_NAMESPACE`."""
    return f"{METRICS_NAMESPACE}/{stack_name}"


# The dimensions ExportFailed carries besides ``service``: the task's error code and the data
# source of its export type (exports.running.endings.NO_SOURCE for a type without one).
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
    # An attempt of the callback function the workflow retries (a receiver or a destination did
    # not take it this time): an error of the function that is no fault, subtracted from its
    # errors by the CallbackErrors alarm.
    CALLBACK_RETRY_RAISED: Final = "CallbackRetryRaised"
    CANCELLED: Final = "ExportCancelled"
    CONTINUED: Final = "ExportContinued"
    DEDUPLICATED: Final = "ExportDeduplicated"
    # An identical request with a higher priority moved a waiting task into a higher lane.
    PROMOTED: Final = "ExportPromoted"
    DEFERRED: Final = "ExportDeferred"
    REJECTED: Final = "ExportRejected"
    # Admission by deadline refused an export (WOULD_TIME_OUT): the queue ahead was too long.
    CAPACITY_REFUSED: Final = "CapacityRefused"
    # A task that could no longer finish before its deadline was not begun (it ended TIMEOUT).
    NOT_BEGUN: Final = "ExportNotBegun"
    REDELIVERED: Final = "TaskRedelivered"
    # A task waited because its data source already ran its limit of concurrent exports.
    SOURCE_DEFERRED: Final = "SourceBusyDeferred"
    # Scheduled exports: a firing made its run; a delivery of a firing that had its run already;
    # a schedule paused itself (type gone, access revoked, filters refused, too many failures).
    SCHEDULE_FIRED: Final = "ScheduleFired"
    SCHEDULE_DUPLICATE_FIRING: Final = "ScheduleDuplicateFiring"
    SCHEDULE_PAUSED: Final = "SchedulePaused"
    # A firing refused for capacity, queued to be tried again within its deferral window.
    SCHEDULE_DEFERRED: Final = "ScheduleDeferred"
    # A firing refused for capacity until its deferral window closed: that run did not happen.
    SCHEDULE_MISSED: Final = "ScheduleMissed"
    # A firing that made no run: its feed's previous run was still in flight.
    FEED_FIRING_SKIPPED: Final = "FeedFiringSkipped"
    # A run of 0 rows whose schedule says when_empty = skip: no file, no mail.
    EMPTY_RUN_SKIPPED: Final = "EmptyRunSkipped"
    # Delivery destinations (docs/destinations.md): one created (dimension: its kind); a verify
    # that passed, or failed (dimensions: kind and the failed step: customers' setups to help).
    DESTINATION_CREATED: Final = "DestinationCreated"
    DESTINATION_VERIFIED: Final = "DestinationVerified"
    DESTINATION_VERIFY_FAILED: Final = "DestinationVerifyFailed"
    # A task's file delivered to a destination; a delivery FAILED (dimension: the error code, the
    # customer's side for DESTINATION_UNREACHABLE: the alarms tell the two apart).
    FILE_DELIVERED: Final = "FileDelivered"
    FILE_DELIVERY_FAILED: Final = "FileDeliveryFailed"
    # A FAILED delivery its owner asked to be tried again (POST .../deliveries/{id}/retry).
    FILE_DELIVERY_RETRY_REQUESTED: Final = "FileDeliveryRetryRequested"
    # A delivery FAILED for a cause on our side (Destinations.OUR_SIDE_ERROR_CODES): it pages.
    FILE_DELIVERY_FAULT: Final = "FileDeliveryFault"
