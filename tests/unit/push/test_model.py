"""The push channel's pure parts: event types of task writes, progress coalescing, the
protocol's messages and credentials (docs/push.md)."""

import json

import pytest

from exports.core.deliveries import DeliveryError, attempt_failed, delivered, initial
from exports.core.errors import InvalidRequest
from exports.core.task import cancel, complete, record_progress
from exports.push import protocol
from exports.push.model import TaskChange, coalesce, current_event_type, task_event
from tests.unit.builders import LEASE, NOW, RETENTION, make_result, make_running_task, make_task

ERROR = DeliveryError(code="DESTINATION_UNREACHABLE", message="down", step="TCP")


def change(task, before=None, seq=1):
    return TaskChange(task=task, seq=seq, at=NOW, before=before)


def test_a_new_task_is_pending_and_a_claim_is_running():
    pending = make_task()
    running = make_running_task()
    assert change(pending).event_type == "export.pending"
    assert change(running, before=pending).event_type == "export.running"


def test_rows_written_in_the_same_status_are_a_progress_step():
    running = make_running_task()
    later = record_progress(running, 500, 40, NOW, LEASE)
    assert change(later, before=running).event_type == "export.progress"


def test_a_write_that_changes_nothing_a_watcher_sees_is_no_event():
    running = make_running_task()
    renewed = running.model_copy(update={"lifecycle_token": "token"})
    assert change(renewed, before=running).event_type is None


def test_terminal_names_are_the_webhooks():
    running = make_running_task()
    done = complete(running, make_result(), NOW, RETENTION)
    assert change(done, before=running).event_type == "export.completed"
    assert change(cancel(running, NOW, RETENTION), before=running).event_type == "export.cancelled"


def test_a_delivery_that_ended_is_an_event_a_failure_first_and_an_attempt_is_none():
    done = complete(make_running_task(), make_result(), NOW, RETENTION)
    pending = done.model_copy(update={"deliveries": initial(("dst_a", "dst_b"))})
    a, b = pending.deliveries
    tried = pending.model_copy(update={"deliveries": (attempt_failed(a, ERROR, final=False, remote_path=None), b)})
    one_delivered = pending.model_copy(update={"deliveries": (delivered(a, "/x", NOW, "ab" * 32, 10), b)})
    both = pending.model_copy(
        update={
            "deliveries": (
                delivered(a, "/x", NOW, "ab" * 32, 10),
                attempt_failed(b, ERROR, final=True, remote_path=None),
            )
        }
    )

    assert change(tried, before=pending).event_type is None
    assert change(one_delivered, before=pending).event_type == "export.delivered"
    assert change(both, before=pending).event_type == "export.delivery_failed"
    assert change(both, before=both).event_type is None


def test_progress_steps_of_one_batch_coalesce_but_status_changes_never_do():
    pending = make_task()
    running = make_running_task()
    steps = [record_progress(running, rows, rows // 10, NOW, LEASE) for rows in (100, 200, 300)]
    other = make_running_task(task_id="exp_01JNCS6Z00000000000000000B")
    other_step = record_progress(other, 50, 5, NOW, LEASE)
    done = complete(steps[-1], make_result(), NOW, RETENTION)
    changes = [
        change(running, pending, 2),
        change(steps[0], running, 3),
        change(other_step, other, 7),
        change(steps[1], steps[0], 4),
        change(steps[2], steps[1], 5),
        change(done, steps[2], 6),
    ]
    # The running, the other task's only step and the completion; the steps the completion
    # supersedes are dropped.
    assert coalesce(changes) == [0, 2, 5]
    assert coalesce(changes[:5]) == [0, 2, 4]


def test_an_event_is_the_webhook_body_with_seq():
    task = make_running_task()
    event = task_event("export.running", task, 9, NOW)
    assert event["type"] == "export.running" and event["seq"] == 9
    assert event["timestamp"] == NOW.isoformat()
    assert event["data"]["task_id"] == task.task_id and event["data"]["status"] == "RUNNING"


def test_the_current_state_of_a_task_that_wrote_rows_is_a_progress_step():
    assert current_event_type(make_running_task()) == "export.running"
    assert current_event_type(record_progress(make_running_task(), 10, 1, NOW, LEASE)) == "export.progress"


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("exports.v1, ticket.abc", ("ticket", "abc")),
        ("ticket.abc, exports.v1", ("ticket", "abc")),
        ("exports.v1, bearer.eyJ", ("bearer", "eyJ")),
        ("ticket.abc", None),  # exports.v1 not offered
        ("exports.v1", None),
        ("exports.v1, ticket.", None),
        (None, None),
    ],
)
def test_the_credential_comes_from_the_subprotocols_only(header, expected):
    assert protocol.credential(header) == expected


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ('{"action": "subscribe"}', None),
        ('{"action": "subscribe", "task_id": "exp_1", "all": true}', None),
        ('{"action": "subscribe", "all": "yes"}', "all"),
        ('{"action": "dance"}', None),
        ('{"action": "ping", "extra": 1}', "extra"),
        ("[]", None),
        ("not json", "body"),
    ],
)
def test_bad_messages_are_refused(body, field):
    with pytest.raises(InvalidRequest) as refused:
        protocol.parse_message(body)
    if field is not None:
        assert refused.value.details["field"] == field


def test_good_messages_parse():
    assert protocol.parse_message(json.dumps({"action": "subscribe", "all": True})).all is True
    message = protocol.parse_message(json.dumps({"action": "unsubscribe", "task_id": "exp_1"}))
    assert isinstance(message, protocol.Unsubscribe) and message.task_id == "exp_1"
    assert isinstance(protocol.parse_message('{"action": "ping"}'), protocol.Ping)
