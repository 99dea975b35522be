"""Fakes for the ports the services need beyond those of tests/unit/export_fakes.py (hot-key
limiter, throughput statistics, source slots, lifecycle workflow, webhook sender, resolver), and
:func:`service_world`, the one place that builds a service's dependencies from fakes.

Each fake applies the adapter's own rule (the same pure function where there is one);
tests/contract/test_port_contracts.py runs the same behaviour tests against each fake and the
adapter on moto (the webhook sender excepted: it is HTTP, see tests/integration).
"""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from exports.accepting.admission_rules import Bucket, Throughput, take_token, updated_throughput
from exports.accepting.dependencies import ApiDependencies
from exports.core.capacity_rules import Drain, drained
from exports.core.config.limits import HotKey
from exports.core.config.settings import ApiSettings, CallbackSettings, LifecycleSettings
from exports.core.errors import ExportsError
from exports.core.export_type import ExportType, SourceLimit
from exports.core.ports import Reservation
from exports.core.public_address import Destination
from exports.core.task import Task
from exports.core.workflows import execution_input, fan_out_input, task_outcome
from exports.finishing.dependencies import CallbackDependencies, LifecycleDependencies
from exports.finishing.ports import WebhookResponse
from exports.running.dependencies import WorkerDependencies
from exports.running.ports import SOURCE_SLOT_LEASE_SEC, SlotLease
from exports.sources.dynamodb.ports import ItemQuery
from tests.unit.export_fakes import FakeClock, FakeFiles, FakeMetrics, FakeQueue, FakeTasks, NumbersExport, make_world

# A signing secret of the Standard Webhooks form (whsec_ + base64 of 24 bytes).
WEBHOOK_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
# What the fake resolver answers for a host it was not told about: a public address.
PUBLIC_ADDRESS = "93.184.216.34"


class FakeHotKeyLimiter:
    """:class:`exports.accepting.ports.HotKeyLimiter` like ``DynamoHotKeyLimiter``: a token bucket per hot
    key (``take_token``), written only when a token is taken."""

    def __init__(self, rate_per_minute: float = HotKey.RATE_PER_MINUTE, burst: int = HotKey.BURST) -> None:
        self._rate = rate_per_minute / 60
        self._burst = burst
        self.buckets: dict[str, Bucket] = {}
        self.calls: list[str] = []

    def acquire(self, hot_key: str, now: datetime) -> float:
        self.calls.append(hot_key)
        allowed, after, wait = take_token(self.buckets.get(hot_key), now, self._rate, self._burst)
        if not allowed:
            return wait
        self.buckets[hot_key] = after
        return 0.0


class FakeThroughputStats:
    """:class:`exports.accepting.ports.ThroughputStats` like ``DynamoThroughputStats``: moving averages per
    export type (``updated_throughput``). ``broken``: every call fails as an unreachable table
    would."""

    def __init__(self, smoothing: float = 0.3) -> None:
        self._smoothing = smoothing
        self.types: dict[str, Throughput] = {}
        self.broken = False

    def get(self, key: str) -> Throughput | None:
        self._check()
        return self.types.get(key)

    def record(self, key: str, rows: int, seconds: float, days: int | None = None) -> None:
        self._check()
        self.types[key] = updated_throughput(self.types.get(key), rows, seconds, self._smoothing, days)

    def _check(self) -> None:
        if self.broken:
            raise ExportsError("throughput statistics unavailable")


class FakeCapacityPools:
    """:class:`exports.core.ports.CapacityPools` like ``DynamoCapacityPools``: the work queued per
    pool, added only while at most the limit is queued, and the drain measured between starts
    while work stayed queued (``drained``). ``broken``: every call fails."""

    def __init__(self, smoothing: float = 0.1) -> None:
        self._smoothing = smoothing
        self.queued: dict[str, float] = {}
        self.tasks: dict[str, int] = {}
        self.drains: dict[str, Drain] = {}
        # pool -> (the last start's epoch seconds, the work queued after it)
        self._last_start: dict[str, tuple[float, float]] = {}
        self.broken = False

    def drain(self, pool: str) -> Drain | None:
        self._check()
        return self.drains.get(pool)

    def reserve(self, pool: str, work_sec: float, limit_sec: float) -> Reservation:
        self._check()
        queued = self.queued.get(pool, 0.0)
        if pool in self.queued and queued > limit_sec:
            return Reservation(admitted=False, queued_sec=queued)
        self.queued[pool] = queued + work_sec
        self.tasks[pool] = self.tasks.get(pool, 0) + 1
        return Reservation(admitted=True, queued_sec=max(0.0, queued))

    def release(self, pool: str, work_sec: float) -> None:
        self._check()
        self._subtract(pool, work_sec)

    def start(self, pool: str, work_sec: float, now: datetime, drained_sec: float | None = None) -> None:
        self._check()
        after = self._subtract(pool, work_sec)
        last = self._last_start.get(pool)
        if drained_sec is not None and last is not None and last[1] > 0.001 and now.timestamp() >= last[0]:
            elapsed = now.timestamp() - last[0]
            self.drains[pool] = drained(self.drains.get(pool), drained_sec, elapsed, self._smoothing)
        self._last_start[pool] = (now.timestamp(), after)

    def _subtract(self, pool: str, work_sec: float) -> float:
        self.queued[pool] = self.queued.get(pool, 0.0) - work_sec
        self.tasks[pool] = self.tasks.get(pool, 0) - 1
        return max(0.0, self.queued[pool])

    def _check(self) -> None:
        if self.broken:
            raise ExportsError("capacity pools unavailable")


class FakeSourceSlots:
    """:class:`exports.running.ports.SourceSlotLeases` like ``DynamoSourceSlots``: ``limit`` slots per source,
    tried from the holder's own start (crc32 of its id); a slot is free without a holder, when it
    is the holder's already, or once its lease (whole seconds, as stored) ran out. Renewing
    needs the slot to still be the holder's, whatever its lease."""

    def __init__(self, lease: timedelta = timedelta(seconds=SOURCE_SLOT_LEASE_SEC)) -> None:
        self._lease = lease
        # (source, index) -> (holder, lease end in epoch seconds)
        self.slots: dict[tuple[str, int], tuple[str, int]] = {}
        self.released: list[SlotLease] = []

    def acquire(self, source: str, limit: int, holder: str, now: datetime) -> SlotLease | None:
        start = zlib.crc32(holder.encode()) % limit
        for offset in range(limit):
            lease = SlotLease(source, (start + offset) % limit, holder)
            held = self.slots.get((source, lease.index))
            if held is None or held[0] == holder or held[1] < int(now.timestamp()):
                self._hold(lease, now)
                return lease
        return None

    def renew(self, lease: SlotLease, now: datetime) -> bool:
        held = self.slots.get((lease.source, lease.index))
        if held is None or held[0] != lease.holder:
            return False
        self._hold(lease, now)
        return True

    def release(self, lease: SlotLease) -> None:
        self.released.append(lease)
        held = self.slots.get((lease.source, lease.index))
        if held is not None and held[0] == lease.holder:
            del self.slots[(lease.source, lease.index)]

    def holders(self, source: str, limit: int) -> list[str]:
        """Who holds the slots of ``source`` now (as ``DynamoSourceSlots.holders``)."""
        return [self.slots[(source, i)][0] for i in range(limit) if (source, i) in self.slots]

    def _hold(self, lease: SlotLease, now: datetime) -> None:
        self.slots[(lease.source, lease.index)] = (lease.holder, int((now + self._lease).timestamp()))


class FakeLifecycle:
    """:class:`exports.core.ports.Lifecycle` like ``StepFunctionsLifecycle``: one execution per task,
    named after it (starting it again starts no second one); an end reported to a token nobody
    waits for is no error. ``started``: task id -> the execution's input; ``reports``: (token,
    the outcome sent). ``fail_start``: the workflow refuses to start (an AWS error)."""

    def __init__(self) -> None:
        self.started: dict[str, dict[str, Any]] = {}
        self.reports: list[tuple[str, dict[str, Any]]] = []
        self.fail_start = False

    def start(self, task: Task) -> None:
        if self.fail_start:
            raise ExportsError("start lifecycle: ServiceUnavailable")
        self.started.setdefault(task.task_id, execution_input(task.task_id, task.timeout_sec))

    def report_end(self, token: str, task: Task) -> None:
        self.reports.append((token, task_outcome(task.status.value, bool(task.subscribers), task.delivers)))


@dataclasses.dataclass(frozen=True)
class Post:
    """One callback the fake sender was asked to post."""

    destination: Destination
    body: bytes
    headers: dict[str, str]


class FakeWebhooks:
    """:class:`exports.finishing.ports.WebhookSender` that answers from a script: each post takes the next
    answer (an HTTP status, or a string: the network error, ``status=None`` as the adapter
    returns it); the last answer repeats. ``posts`` keeps what was sent."""

    def __init__(self, *answers: int | str) -> None:
        self.answers: list[int | str] = list(answers) or [204]
        self.posts: list[Post] = []

    def post(self, destination: Destination, body: bytes, headers: dict[str, str]) -> WebhookResponse:
        self.posts.append(Post(destination, body, dict(headers)))
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, str):
            return WebhookResponse(status=None, error=answer)
        return WebhookResponse(status=answer, error=None)


class FakeResolver:
    """DNS in memory: host -> addresses; unknown hosts resolve to one public address."""

    def __init__(self, hosts: Mapping[str, Sequence[str]] | None = None) -> None:
        self.hosts = {host: list(addresses) for host, addresses in (hosts or {}).items()}
        self.lookups: list[str] = []

    def __call__(self, host: str, port: int) -> list[str]:
        self.lookups.append(host)
        return list(self.hosts.get(host, [PUBLIC_ADDRESS]))


class BrokenQueue(FakeQueue):
    """A queue whose sends fail (an unreachable SQS) while ``broken``; depths still read."""

    def __init__(self) -> None:
        super().__init__()
        self.broken = True

    def send(self, message: Any, delay_sec: int = 0) -> None:
        if self.broken:
            raise ExportsError("send message: AWS.SimpleQueueService.NonExistentQueue")
        super().send(message, delay_sec)


class LimitedNumbers(NumbersExport):
    """Numbered rows read from a data source that allows ``max_concurrent`` exports at once."""

    name = "limited_numbers"

    def __init__(self, max_concurrent: int = 1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.max_concurrent = max_concurrent

    def source_limit(self) -> SourceLimit:
        return SourceLimit("shop", self.max_concurrent)


@dataclasses.dataclass
class ServiceWorld:
    """Each function's dependencies made of the same fakes, and the fakes themselves."""

    api: ApiDependencies
    worker: WorkerDependencies
    callback: CallbackDependencies
    lifecycle_deps: LifecycleDependencies
    tasks: FakeTasks
    queue: FakeQueue
    files: FakeFiles
    clock: FakeClock
    metrics: FakeMetrics
    limiter: FakeHotKeyLimiter
    throughput: FakeThroughputStats
    capacity: FakeCapacityPools
    slots: FakeSourceSlots
    lifecycle: FakeLifecycle
    webhooks: FakeWebhooks
    resolve: FakeResolver

    def counts(self, name: str) -> float:
        """The sum of the metric ``name``'s points."""
        return sum(value for metric, value in self.metrics.points if metric == name)


def service_world(
    *export_types: ExportType,
    queue: FakeQueue | None = None,
    webhooks: FakeWebhooks | None = None,
    resolve: FakeResolver | None = None,
    hot_key_rate_per_minute: float = HotKey.RATE_PER_MINUTE,
    hot_key_burst: int = HotKey.BURST,
    random: float = 0.5,
    **settings: Any,
) -> ServiceWorld:
    """Every port a service uses as a fake (``random``: what ``deps.random()`` returns), wired
    into each function's dependencies; ``settings`` go to every function's settings that has them."""
    world = make_world(*export_types, **settings)
    if queue is not None:
        world.queue = queue
    limiter = FakeHotKeyLimiter(hot_key_rate_per_minute, hot_key_burst)
    throughput, slots, lifecycle = FakeThroughputStats(), FakeSourceSlots(), FakeLifecycle()
    capacity = FakeCapacityPools()
    webhooks = webhooks if webhooks is not None else FakeWebhooks()
    resolve = resolve if resolve is not None else FakeResolver()
    worker = dataclasses.replace(
        world.deps,
        queue=world.queue,
        limiter=limiter,
        throughput=throughput,
        lifecycle=lifecycle,
        slots=slots,
        capacity=capacity,
        random=lambda: random,
    )
    api = ApiDependencies(
        settings=ApiSettings.model_construct(**settings),
        tasks=world.tasks,
        queue=world.queue,
        results=world.files,
        registry=world.deps.registry,
        metrics=world.metrics,
        lifecycle=lifecycle,
        throughput=throughput,
        capacity=capacity,
        resolve=resolve,
        clock=world.clock,
        random=lambda: random,
    )
    callback = CallbackDependencies(
        settings=CallbackSettings.model_construct(**settings),
        tasks=world.tasks,
        results=world.files,
        metrics=world.metrics,
        webhooks=webhooks,
        webhook_secret=lambda: WEBHOOK_SECRET,
        resolve=resolve,
        clock=world.clock,
    )
    lifecycle_deps = LifecycleDependencies(
        settings=LifecycleSettings.model_construct(**settings),
        tasks=world.tasks,
        lifecycle=lifecycle,
        metrics=world.metrics,
        capacity=capacity,
        clock=world.clock,
    )
    return ServiceWorld(
        api,
        worker,
        callback,
        lifecycle_deps,
        world.tasks,
        world.queue,
        world.files,
        world.clock,
        world.metrics,
        limiter,
        throughput,
        capacity,
        slots,
        lifecycle,
        webhooks,
        resolve,
    )


class FakeFanOut:
    """:class:`exports.running.ports.FanOutStarter` like ``StepFunctionsFanOut``: one execution per split
    attempt, named ``<task>-<attempt>``, its input the workflow's (a second start of one attempt
    is refused). ``started``: execution name -> input."""

    def __init__(self) -> None:
        self.started: dict[str, dict[str, Any]] = {}

    def start(self, task_id: str, attempt: int, partitions: int) -> None:
        name = f"{task_id}-{attempt}"
        if name in self.started:
            raise ExportsError(f"start fan-out: execution {name} already exists")
        self.started[name] = fan_out_input(task_id, attempt, partitions)


class FakeItemsReader:
    """:class:`exports.sources.dynamodb.ports.ItemsReader` on tables in memory (string keys, the key schema
    given per table), as DynamoDB queries them: items of one partition in sort key order, at
    most ``limit`` read per page and filtered after the read (a page may come back short or
    empty while more follow), continued from the last read item's key."""

    def __init__(self, keys: Mapping[str, tuple[str, str]]) -> None:
        self._keys = dict(keys)
        self.items: dict[str, list[dict[str, Any]]] = {table: [] for table in keys}

    def put(self, table: str, item: dict[str, Any]) -> None:
        self.items[table].append(item)

    def page(
        self, query: ItemQuery, start_key: dict[str, Any] | None, limit: int
    ) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
        partition_name, sort_name = self._keys[query.table]
        matching = sorted(
            (
                item
                for item in self.items[query.table]
                if item[partition_name] == query.partition_value and _sort_matches(query, item.get(sort_name))
            ),
            key=lambda item: str(item[sort_name]),
        )
        if start_key is not None:
            after = start_key[sort_name]["S"]
            matching = [item for item in matching if str(item[sort_name]) > after]
        read = matching[:limit]
        kept = [item for item in read if all(item.get(name) in allowed for name, allowed in query.filters)]
        more = len(matching) > limit
        last = read[-1] if more else None
        key = {partition_name: {"S": last[partition_name]}, sort_name: {"S": last[sort_name]}} if last else None
        return [dict(item) for item in kept], key


def _sort_matches(query: ItemQuery, value: Any) -> bool:
    if query.sort_name is None:
        return True
    if value is None:
        return False
    if query.sort_begins_with is not None:
        return str(value).startswith(query.sort_begins_with)
    low_ok = query.sort_from is None or str(value) >= query.sort_from
    high_ok = query.sort_to is None or str(value) <= query.sort_to
    return low_ok and high_ok
