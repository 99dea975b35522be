"""Sizes of the functions (memory, timeouts, reserved concurrency) and the account quota they need.

Plain Python on purpose (no CDK import): the cost script and fast tests read it too.
"""

from __future__ import annotations

import math
from typing import Final

from exports.core.config.callbacks import Callback
from exports.core.config.destinations import Destinations
from exports.core.config.worker import Worker
from exports.running.writers.sink import MIN_PART_BYTES


class Sizing:
    """Memory and timeouts of the functions (arm64). The worker's timeout is
    :attr:`exports.core.config.worker.Worker.FUNCTION_TIMEOUT_SEC`, shared with the queue settings."""

    API_MEMORY_MB: Final = 512
    # HTTP API integrations give up after 30 s; the function stops just before.
    API_TIMEOUT_SEC: Final = 29
    WORKER_MEMORY_MB: Final = Worker.MEMORY_MB_DEFAULT
    # The lifecycle workflow's functions: a few DynamoDB calls and one Step Functions call each.
    LIFECYCLE_MEMORY_MB: Final = 256
    LIFECYCLE_TIMEOUT_SEC: Final = 30
    CALLBACK_MEMORY_MB: Final = 256
    # One callback request (given up after Callback.REQUEST_TIMEOUT_SEC) plus the secret, the DNS
    # lookup of the SSRF guard and the DynamoDB writes around it; or one attempt at each of a task's
    # file deliveries (each given up after Destinations.DELIVERY_TIMEOUT_SEC) and the copy of the file.
    CALLBACK_TIMEOUT_SEC: Final = max(
        6 * Callback.REQUEST_TIMEOUT_SEC, Destinations.MAX_PER_EXPORT * Destinations.DELIVERY_TIMEOUT_SEC + 60
    )
    # Reserved concurrency of the lifecycle workflow's functions: a burst of executions (every
    # submit starts one, every task end delivers one callback) can then neither take the account's
    # concurrency from the API and the workers nor run unbounded. Over the cap Lambda throttles,
    # and the state machine retries throttled invokes (Lambda.TooManyRequestsException).
    LIFECYCLE_RESERVED_CONCURRENCY: Final = 5
    CALLBACK_RESERVED_CONCURRENCY: Final = 5
    # The schedule function likewise: schedules tend to fire together (on the hour, Monday 08:00),
    # and over the cap Lambda keeps the firings queued and retries them (asynchronous invocations,
    # for up to the target's event age), so a burst is smoothed instead of taking the pool.
    SCHEDULE_RESERVED_CONCURRENCY: Final = 5
    # The push channel's functions: a few DynamoDB calls and posts to connections each.
    PUSH_MEMORY_MB: Final = 256
    # The audit function: a query and a transaction per record of a batch of task writes.
    AUDIT_MEMORY_MB: Final = 256
    # WebSocket API integrations give up after 29 s, as the HTTP API's.
    PUSH_ROUTE_TIMEOUT_SEC: Final = 29
    # The schedule function builds the registry and submits a firing as the API's submit path does.
    SCHEDULE_MEMORY_MB: Final = API_MEMORY_MB
    # What a worker run needs besides a split export's held bytes: the interpreter, boto3,
    # pydantic, a page of rows and the writer's buffers (peak RSS of a whole export is about
    # 250 MB, docs/performance.md), with room to spare.
    WORKER_BASE_MB: Final = 512

    @staticmethod
    def worker_memory_mb(max_partitions: int) -> int:
        """The worker's memory for a stage splitting exports in up to ``max_partitions``: the
        assembler holds every segment's head and tail at once (at most one minimum part plus
        one upload part each, 13 MiB), so 100 partitions need more than the 1024 MB that serve
        an unsplit export. Rounded up to 64 MB; never below ``WORKER_MEMORY_MB``."""
        held_mb = max_partitions * (MIN_PART_BYTES + Worker.UPLOAD_PART_BYTES) / (1024 * 1024)
        needed = math.ceil((Sizing.WORKER_BASE_MB + held_mb) / 64) * 64
        return max(Sizing.WORKER_MEMORY_MB, needed)


class AccountQuota:
    """What the AWS account must allow for this stack (docs/deploy.md, "Account quotas")."""

    # Lambda refuses a reservation that leaves fewer than this many unreserved executions
    # in the account (and region) for every other function.
    LAMBDA_MIN_UNRESERVED_CONCURRENCY: Final = 100

    @classmethod
    def lambda_concurrency_needed(cls) -> int:
        """The account's Lambda concurrent executions quota one stack needs at least: its
        reservations plus the minimum Lambda keeps unreserved (new accounts start at 10 and
        must ask for an increase; the default quota is 1,000)."""
        reserved = (
            Sizing.LIFECYCLE_RESERVED_CONCURRENCY
            + Sizing.CALLBACK_RESERVED_CONCURRENCY
            + Sizing.SCHEDULE_RESERVED_CONCURRENCY
        )
        return reserved + cls.LAMBDA_MIN_UNRESERVED_CONCURRENCY
