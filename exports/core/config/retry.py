"""Every retry of the service, one named policy per concern (docs/how-to/retry-more-gently.md).

Values only, no client library: the domain computes its waits from them, the adapters turn them
into tenacity and botocore settings, the workflows into Step Functions retriers, and the CDK app
into the SQS redrive, the stream mapping and Lambda's asynchronous retries. The infrastructure
tests compare the synthesized template with these values (``tests/infra/test_infra_retry_policies.py``).

Three shapes: a :class:`Backoff` is a schedule we (or Step Functions) run; a
:class:`ServiceRetries` is a count AWS retries by on its own schedule (an
:class:`EventRetries`, of an event source, also bounds the event's age); a :class:`Deferral` is a
"come back later" that no count bounds, only the task's deadline (and the fan-out workflow's
one fixed wait, :data:`PARTITION_SOURCE_BUSY_WAIT_SEC`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from enum import Enum
from typing import Final


class Jitter(Enum):
    """How a wait is drawn below its ceiling."""

    # Exactly the ceiling.
    NONE = "none"
    # Anywhere in [0, ceiling]: retries of one burst never come back in step.
    FULL = "full"
    # In [ceiling / 2, ceiling]: spread out, yet never much sooner than the schedule says.
    EQUAL = "equal"


@dataclass(frozen=True)
class Backoff:
    """The first attempt, then ``retries`` more; retry n + 1 (n from 0) waits up to
    ``min(cap_sec, base_sec * factor**n)`` seconds (uncapped: infinity), drawn as ``jitter`` says."""

    retries: int
    base_sec: float
    factor: float = 1
    cap_sec: float = math.inf
    jitter: Jitter = Jitter.NONE

    @property
    def attempts(self) -> int:
        """Attempts in all, the first one included."""
        return 1 + self.retries

    def ceiling_sec(self, retry: int) -> float:
        """The longest wait before retry number ``retry + 1``."""
        return min(self.cap_sec, self.base_sec * self.factor**retry)

    def wait_sec(self, retry: int, draw: float) -> float:
        """The wait before retry number ``retry + 1`` for ``draw``, a random float in [0, 1)."""
        ceiling = self.ceiling_sec(retry)
        if self.jitter is Jitter.FULL:
            return ceiling * draw
        if self.jitter is Jitter.EQUAL:
            return ceiling / 2 * (1 + draw)
        return ceiling


@dataclass(frozen=True)
class ServiceRetries:
    """Retries an AWS service (or SDK) makes on its own schedule: only how many is ours."""

    retries: int

    @property
    def attempts(self) -> int:
        """Attempts in all, the first one included."""
        return 1 + self.retries


@dataclass(frozen=True)
class EventRetries(ServiceRetries):
    """An event source's retries of a failing event: how many, and how long the event is kept."""

    max_age_sec: int


@dataclass(frozen=True)
class Deferral:
    """Come back later, as often as it takes (the task's deadline bounds it, no count does):
    after ``wait_sec`` and a random part of up to as much again, at most ``cap_sec``."""

    wait_sec: int
    cap_sec: int

    def delay_sec(self, draw: float, after: float = 0) -> int:
        """The whole seconds to come back after (SQS delays are whole), for ``draw`` in [0, 1);
        ``after``: a wait of the caller's own on top of ``wait_sec`` (a hot key's token bucket)."""
        wait = self.wait_sec + after
        return min(self.cap_sec, math.ceil(wait + wait * draw))


# A task that failed for a retryable reason (its source unavailable, throttling) goes back to the
# queue: equal jitter under 15 s * 4**n capped at 300 s, so 7.5-15 s, 30-60 s, 120-240 s. The
# default three retries (a submitter may ask for fewer or more: ``max_retries``) span 2.6 to 5.3
# minutes and outlast a database failover (about a minute on RDS Multi-AZ), where 2 s * 4**n
# with full jitter gave up after 25-35 s. A message sent again before its task was claimed waits
# the same.
TASK_RETRY: Final = Backoff(retries=3, base_sec=15, factor=4, cap_sec=300, jitter=Jitter.EQUAL)
# A delivery that raises goes back to SQS after TASK_RETRY's waits; SQS receives a message this many
# times (the redrive's maxReceiveCount is ``attempts``), then moves it to the lane's DLQ.
MESSAGE_RETRY: Final = replace(TASK_RETRY, retries=4)
# The writes that must not be lost to a transient AWS fault (a task's state, the clean-up of files
# and uploads), retried by tenacity on top of the SDK's own: full jitter under 0.1 s * 2**n, 2 s
# at most.
TRANSIENT_RETRY: Final = Backoff(retries=3, base_sec=0.1, factor=2, cap_sec=2.0, jitter=Jitter.FULL)
# Every boto3 call: botocore's standard mode (its own full-jitter backoff), this many retries.
SDK_RETRY: Final = ServiceRetries(retries=3)
# Lambda's own transient errors, wherever a workflow invokes a function: 1 s, 2 s, 4 s.
LAMBDA_SERVICE_RETRY: Final = Backoff(retries=3, base_sec=1, factor=2)
# Throttles of the lifecycle workflow's functions (Lambda.TooManyRequestsException): the
# lifecycle function in AwaitEnd and Expire, whose loss would cost a task its deadline and its
# callback, and the callback function in Deliver and GiveUp (apart from CALLBACK_RETRY, which a throttle
# must not spend). Every submit starts an execution whose first step invokes the lifecycle
# function, and the API admits bursts of ``Capacity.API_THROTTLE_BURST`` (100) against its few
# reserved executions (infra's ``Sizing.LIFECYCLE_RESERVED_CONCURRENCY``, 5, where the stage
# reserves them; else the account's limit): most of a burst is throttled at first. Full jitter
# under 1, 2, 4 ... s capped at 30 s gives a window of about
# three minutes (half of it on average), for work of the burst that takes some 20 s at
# LIFECYCLE_INVOCATION_SEC an invocation.
LIFECYCLE_THROTTLE_RETRY: Final = Backoff(retries=10, base_sec=1, factor=2.0, cap_sec=30, jitter=Jitter.FULL)
# The longest one lifecycle invocation is taken to last when sizing that window (a DynamoDB
# update and a Step Functions call, cold start included).
LIFECYCLE_INVOCATION_SEC: Final = 1.0
# A callback the receiver did not take (no answer, 408, 429, 5xx): the first attempt, then 1 s,
# 4 s and 16 s later (the workflow's Deliver state).
CALLBACK_RETRY: Final = Backoff(retries=3, base_sec=1, factor=4)
# A file delivery to a customer's S3 bucket or SFTP server that failed (their server down, a key
# not yet installed): tried again after up to 30 s, 1, 2, 4, 8 and 10 minutes (full jitter), some
# 25 minutes in all, long enough for a restart or a quick fix on their side; then the delivery
# FAILED (the workflow's DeliverFiles state, docs/destinations.md).
FILE_DELIVERY_RETRY: Final = Backoff(retries=6, base_sec=30, factor=2, cap_sec=600, jitter=Jitter.FULL)
# One partition of a split export that failed (a transient fault, Lambda's own): written again
# 2 s, then 4 s later.
PARTITION_WRITE_RETRY: Final = Backoff(retries=2, base_sec=2, factor=2)
# A partition that finds every slot of its source busy says so, and the fan-out workflow waits
# this long (a Step Functions Wait, no jitter) before it tries that partition again, until a slot
# frees or the task's deadline.
PARTITION_SOURCE_BUSY_WAIT_SEC: Final = 10
# A task over its source's limit of concurrent exports: a new delayed message 15-30 s later.
SOURCE_BUSY_DEFERRAL: Final = Deferral(wait_sec=15, cap_sec=60)
# A task over its hot key's rate: a new delayed message after its token bucket's wait and up to
# as much again, 60 s at most.
HOT_KEY_DEFERRAL: Final = Deferral(wait_sec=0, cap_sec=60)
# The push function's stream batches (bisected on failure), then the on-failure queue.
PUSH_BATCH_RETRY: Final = EventRetries(retries=3, max_age_sec=300)
# The audit function's stream batches: a record missing from the trail is worse than a late one,
# so they are tried for as long as the stream keeps them (24 hours), then go to the on-failure queue.
AUDIT_BATCH_RETRY: Final = EventRetries(retries=10, max_age_sec=24 * 3600)
# EventBridge Scheduler's delivery of a firing to the schedule function, then its dead-letter queue.
SCHEDULE_TARGET_RETRY: Final = EventRetries(retries=5, max_age_sec=3600)
# Lambda's retries of a failed asynchronous invocation of the schedule function (a firing is
# idempotent, so a retry never makes a second task), kept as long as Scheduler keeps retrying.
SCHEDULE_FUNCTION_RETRY: Final = EventRetries(retries=2, max_age_sec=SCHEDULE_TARGET_RETRY.max_age_sec)
# A request to an HTTP source that got no answer, or a 408, 429 or 5xx: asked again within the
# run, full jitter under 1 s * 2**n capped at 8 s, or after the wait the service's Retry-After
# asks for when that is longer; once they are spent the task is retried on TASK_RETRY's schedule.
HTTP_SOURCE_RETRY: Final = Backoff(retries=4, base_sec=1, factor=2, cap_sec=8, jitter=Jitter.FULL)
# The longest Retry-After a run waits out itself; a longer one (or one past the run's time left)
# ends the run with a retryable error, so the task comes back on TASK_RETRY's schedule instead.
HTTP_SOURCE_RETRY_AFTER_MAX_SEC: Final = 60
