"""Properties of the domain, checked on generated cases (hypothesis): no way out of a terminal
state, whatever is tried in whatever order; and one dedup key per export, however its filters are
spelled."""

import contextlib
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from examples.demo_plugins.orders import ORDER_COLUMNS, OrdersExport
from exports.accepting.admission_rules import dedup_key
from exports.core.errors import InvalidTransition
from exports.core.status import TERMINAL, TRANSITIONS, TaskStatus, can_transition, check_transition
from exports.core.task import (
    ExportFormat,
    ExportResult,
    Task,
    cancel,
    claim,
    complete,
    fail,
    new_task,
    record_callback,
    record_progress,
    requeue,
    suspend,
    time_out,
)
from local_stack.demo_orders import OrderStatus

# Deterministic (derandomized, no example database): the same cases on every run and machine.
PROFILE = settings(
    max_examples=300, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow]
)
NOW = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)
LEASE = timedelta(minutes=2)
RETENTION = timedelta(hours=24)
RESULT = ExportResult(key="k", bytes=1, rows=1, sha256="0" * 64, content_type="text/csv", file_name="f.csv")

# Every operation the service applies to a task, as (name, function of the task and the clock).
OPERATIONS = {
    "claim": lambda task, now: claim(task, now, LEASE),
    "progress": lambda task, now: record_progress(task, 5, 50, now, LEASE),
    "suspend": lambda task, now: suspend(task),
    "requeue": lambda task, now: requeue(task, "TRANSIENT_ERROR", "x"),
    "complete": lambda task, now: complete(task, RESULT, now, RETENTION),
    "fail": lambda task, now: fail(task, "INTERNAL_ERROR", "x", now, RETENTION),
    "time_out": lambda task, now: time_out(task, now, RETENTION),
    "cancel": lambda task, now: cancel(task, now, RETENTION),
    "callback": lambda task, now: record_callback(task, delivered=False, error="HTTP 500", final=False),
}


@PROFILE
@given(st.sampled_from(TaskStatus), st.lists(st.sampled_from(TaskStatus), max_size=30))
def test_no_sequence_of_status_changes_leaves_a_terminal_state(start: TaskStatus, attempts: list[TaskStatus]) -> None:
    current, ended = start, start in TERMINAL
    for target in attempts:
        if can_transition(current, target):
            assert not ended, f"{current} -> {target} after the task ended"
            check_transition(current, target)
            current = target
            ended = ended or current in TERMINAL
        else:
            with pytest.raises(InvalidTransition):
                check_transition(current, target)
    assert (current in TERMINAL) == ended


@PROFILE
@given(st.sampled_from(sorted(TERMINAL)))
def test_a_terminal_state_allows_no_change_at_all(terminal: TaskStatus) -> None:
    assert TRANSITIONS[terminal] == frozenset()
    assert not any(can_transition(terminal, target) for target in TaskStatus)


def test_every_active_state_can_still_reach_every_ending() -> None:
    def reachable(status: TaskStatus) -> set[TaskStatus]:
        seen: set[TaskStatus] = set()
        todo = [status]
        while todo:
            for nxt in TRANSITIONS[todo.pop()] - seen:
                seen.add(nxt)
                todo.append(nxt)
        return seen

    for status in set(TaskStatus) - TERMINAL:
        assert reachable(status) >= TERMINAL


def fresh_task() -> Task:
    return new_task(
        task_id="exp_01JZZZZZZZZZZZZZZZZZZZZZZZ",
        user_id="alice",
        export_type="orders",
        format=ExportFormat.CSV,
        filters={},
        now=NOW,
        retention=RETENTION,
        callback_url="https://hooks.example.com/in",
    )


@PROFILE
@given(
    st.lists(
        st.tuples(st.sampled_from(sorted(OPERATIONS)), st.integers(min_value=0, max_value=400)),
        max_size=25,
    )
)
def test_no_sequence_of_operations_changes_an_ended_task(steps: list[tuple[str, int]]) -> None:
    """Operations in any order, at any time (a lease may have run out meanwhile): once a task has
    ended, every status change is refused and its outcome, file and error stay as they were."""
    task, ended = fresh_task(), None
    for name, seconds in steps:
        now = NOW + timedelta(seconds=seconds)
        try:
            after = OPERATIONS[name](task, now)
        except InvalidTransition:
            continue
        if ended is not None:
            assert (after.status, after.result, after.error, after.finished_at) == (
                ended.status,
                ended.result,
                ended.error,
                ended.finished_at,
            ), name
            assert after.status_seq == ended.status_seq
        assert after.status_seq == task.status_seq + (after.status is not task.status or name == "claim")
        task = after
        if task.is_terminal and ended is None:
            ended = task


# The dedup key -------------------------------------------------------------------------------

ORDERS = OrdersExport(reader=None)  # type: ignore[arg-type]
COLUMN_NAMES = [column.name for column in ORDER_COLUMNS]


def canonical_key(raw_filters: dict[str, Any], user: str = "alice", fmt: str = "csv", bom: bool = False) -> str:
    """What submit computes: the export type validates the filters, the key hashes their dump."""
    filters = ORDERS.parse_filters(raw_filters).model_dump(mode="json", exclude_none=True)
    return dedup_key(user, ORDERS.name, fmt, filters, bom)


def spellings(day: date) -> st.SearchStrategy[Any]:
    """Ways a client (or the SDK) may write the same day."""
    midnight = datetime.combine(day, time(0), tzinfo=UTC)
    return st.sampled_from(
        [
            day.isoformat(),
            day,
            midnight.isoformat(),
            midnight.replace(tzinfo=None).isoformat(),
            midnight.isoformat().replace("+00:00", "Z"),
        ]
    )


@st.composite
def same_filters_two_ways(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    start = draw(st.dates(min_value=date(2000, 1, 1), max_value=date(2100, 1, 1)))
    end = start + timedelta(days=draw(st.integers(min_value=0, max_value=365)))
    extra: dict[str, Any] = {}
    if draw(st.booleans()):
        extra["status"] = draw(st.sampled_from(OrderStatus)).value
    if draw(st.booleans()):
        extra["columns"] = draw(st.lists(st.sampled_from(COLUMN_NAMES), min_size=1, max_size=5, unique=True))

    def one_way() -> dict[str, Any]:
        fields = {"date_from": draw(spellings(start)), "date_to": draw(spellings(end)), **extra}
        if "status" not in extra and draw(st.booleans()):
            fields["status"] = None  # an explicit null is the same as leaving it out
        order = draw(st.permutations(list(fields)))
        return {name: fields[name] for name in order}

    return one_way(), one_way()


@PROFILE
@given(same_filters_two_ways())
def test_the_same_export_spelled_differently_has_one_dedup_key(pair: tuple[dict[str, Any], dict[str, Any]]) -> None:
    first, second = pair
    assert canonical_key(first) == canonical_key(second)


@PROFILE
@given(same_filters_two_ways(), st.sampled_from(["user", "format", "bom", "range", "columns"]))
def test_a_different_export_has_a_different_dedup_key(
    pair: tuple[dict[str, Any], dict[str, Any]], changed: str
) -> None:
    filters = pair[0]
    base = canonical_key(filters)
    if changed == "user":
        assert canonical_key(filters, user="bob") != base
    elif changed == "format":
        assert canonical_key(filters, fmt="xlsx") != base
    elif changed == "bom":
        assert canonical_key(filters, bom=True) != base
    elif changed == "range":
        later = ORDERS.parse_filters(filters).date_to + timedelta(days=1)
        with contextlib.suppress(ValidationError):  # past the range limit it is no export at all
            assert canonical_key({**filters, "date_to": later.isoformat()}) != base
    else:
        assert canonical_key({**filters, "columns": ["order_id", "amount"]}) != canonical_key(
            {**filters, "columns": ["amount", "order_id"]}
        )
