"""Callback delivery on fakes: one signed attempt per call, what is retried and what is final,
the SSRF guard again at send, several subscribers, and giving up."""

import base64
import dataclasses
import hashlib
import hmac
import json

import pytest

from exports.core.config.events import Events
from exports.core.config.metrics import Metric
from exports.core.errors import ConditionFailed, ServiceUnavailable
from exports.core.status import TaskStatus
from exports.core.task import CallbackStatus, Subscriber, Task, cancel, claim, complete
from exports.finishing.callbacks import CallbackRetryable, DeliveryOutcome, deliver, give_up
from exports.finishing.schedule_run_end import RunEndDependencies
from tests.unit.builders import LEASE, RETENTION, make_result, make_task
from tests.unit.export_fakes import FakeEvents
from tests.unit.schedule_fakes import FakeScheduleStore
from tests.unit.service_fakes import (
    PUBLIC_ADDRESS,
    WEBHOOK_SECRET,
    FakeWebhooks,
    Post,
    ServiceWorld,
    service_world,
)

HOOK = "https://hooks.example.com/in"
OTHER = "https://other.example.com/hook"


def world(*answers: int | str) -> ServiceWorld:
    return service_world(webhooks=FakeWebhooks(*answers))


def ended(w: ServiceWorld, *urls: str, completed: bool = True) -> Task:
    """An ended task calling back ``urls``, stored in the world."""
    task = make_task(subscribers=tuple(Subscriber(url=url) for url in urls))
    if completed:
        running = claim(task, w.clock(), LEASE)
        done = complete(running, make_result(), w.clock(), RETENTION)
    else:
        done = cancel(task, w.clock(), RETENTION)
    w.tasks.tasks[done.task_id] = done
    return done


def expected_signature(post: Post) -> str:
    """Standard Webhooks, computed here independently of the service's code."""
    key = base64.b64decode(WEBHOOK_SECRET.removeprefix("whsec_"))
    signed = f"{post.headers['webhook-id']}.{post.headers['webhook-timestamp']}.".encode() + post.body
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()


def test_a_completed_tasks_callback_is_signed_and_carries_a_download_link() -> None:
    w = world(204)
    task = ended(w, HOOK)

    assert deliver(task.task_id, w.callback) is DeliveryOutcome.DELIVERED

    (post,) = w.webhooks.posts
    assert (post.destination.host, post.destination.address, post.destination.target) == (
        "hooks.example.com",
        PUBLIC_ADDRESS,
        "/in",
    )
    assert post.headers["webhook-signature"] == expected_signature(post)
    assert post.headers["Content-Type"] == "application/json"
    assert int(post.headers["webhook-timestamp"]) == int(w.clock().timestamp())
    payload = json.loads(post.body)
    assert set(payload) == {"type", "timestamp", "data"} and payload["type"] == "export.completed"
    data = payload["data"]
    assert (data["task_id"], data["status"]) == (task.task_id, "COMPLETED")
    assert data["download_url"] == f"https://example.com/{task.result.key}" and data["download_expires_at"]
    stored = w.tasks.get(task.task_id)
    assert stored.callback.model_dump() == {"status": "DELIVERED", "attempts": 1, "last_error": None}
    assert w.counts(Metric.CALLBACK_DELIVERED) == 1


@pytest.mark.parametrize("failure", [503, 500, 429, 408, "ReadTimeoutError"])
def test_a_retryable_answer_raises_for_the_workflow_and_the_next_attempt_sends_the_same_event(
    failure: int | str,
) -> None:
    w = world(failure, 204)
    task = ended(w, HOOK)

    with pytest.raises(CallbackRetryable):
        deliver(task.task_id, w.callback)
    waiting = w.tasks.get(task.task_id).callback
    error = failure if isinstance(failure, str) else f"HTTP {failure}"
    assert (waiting.status, waiting.attempts, waiting.last_error) == (CallbackStatus.PENDING, 1, error)
    assert w.counts(Metric.CALLBACK_FAILED) == 0

    assert deliver(task.task_id, w.callback) is DeliveryOutcome.DELIVERED

    first, second = w.webhooks.posts
    assert first.headers["webhook-id"] == second.headers["webhook-id"]
    assert [json.loads(p.body)["type"] for p in (first, second)] == ["export.completed"] * 2
    assert all(p.headers["webhook-signature"] == expected_signature(p) for p in (first, second))
    assert w.tasks.get(task.task_id).callback.model_dump() == {"status": "DELIVERED", "attempts": 2, "last_error": None}


@pytest.mark.parametrize("status", [404, 400, 302, 301])
def test_a_final_4xx_or_a_redirect_is_not_retried(status: int) -> None:
    w = world(status)
    task = ended(w, HOOK)

    assert deliver(task.task_id, w.callback) is DeliveryOutcome.FAILED

    assert len(w.webhooks.posts) == 1
    recorded = w.tasks.get(task.task_id).callback
    assert (recorded.status, recorded.attempts, recorded.last_error) == (CallbackStatus.FAILED, 1, f"HTTP {status}")
    assert w.counts(Metric.CALLBACK_FAILED) == 1
    assert deliver(task.task_id, w.callback) is DeliveryOutcome.NOTHING_TO_DO  # nothing is sent again
    assert len(w.webhooks.posts) == 1


def test_a_destination_that_now_resolves_inside_is_refused_at_send() -> None:
    w = world(204)
    task = ended(w, HOOK)
    w.resolve.hosts["hooks.example.com"] = ["169.254.169.254"]  # passed at submit; DNS changed since

    assert deliver(task.task_id, w.callback) is DeliveryOutcome.FAILED

    assert w.webhooks.posts == []
    recorded = w.tasks.get(task.task_id).callback
    assert recorded.status is CallbackStatus.FAILED
    assert recorded.last_error is not None and "not public" in recorded.last_error
    assert w.counts(Metric.CALLBACK_FAILED) == 1


def test_each_subscriber_is_signed_on_its_own_and_a_delivered_one_is_not_sent_again() -> None:
    w = world(204, 503, 204)
    task = ended(w, HOOK, OTHER)

    with pytest.raises(CallbackRetryable):
        deliver(task.task_id, w.callback)
    assert deliver(task.task_id, w.callback) is DeliveryOutcome.DELIVERED

    to_hook, to_other, to_other_again = w.webhooks.posts
    assert [p.destination.host for p in w.webhooks.posts] == ["hooks.example.com"] + ["other.example.com"] * 2
    assert to_hook.headers["webhook-id"] != to_other.headers["webhook-id"] == to_other_again.headers["webhook-id"]
    for post in w.webhooks.posts:
        assert post.headers["webhook-signature"] == expected_signature(post)
    states = [(s.state.status, s.state.attempts) for s in w.tasks.get(task.task_id).subscribers]
    assert states == [(CallbackStatus.DELIVERED, 1), (CallbackStatus.DELIVERED, 2)]
    assert w.counts(Metric.CALLBACK_DELIVERED) == 2


def test_a_cancelled_task_is_called_back_without_a_link() -> None:
    w = world(204)
    task = ended(w, HOOK, completed=False)
    assert deliver(task.task_id, w.callback) is DeliveryOutcome.DELIVERED
    data = json.loads(w.webhooks.posts[0].body)["data"]
    assert (data["status"], data["download_url"]) == ("CANCELLED", None)
    assert json.loads(w.webhooks.posts[0].body)["type"] == "export.cancelled"


def test_there_is_nothing_to_deliver_for_a_task_not_ended_without_a_callback_or_unknown() -> None:
    w = world(204)
    active = make_task(task_id="exp_01JNCS6Z00000000000000000B", subscribers=(Subscriber(url=HOOK),))
    w.tasks.tasks[active.task_id] = active
    quiet = ended(w)
    for task_id in (active.task_id, quiet.task_id, "exp_01JUNKJUNKJUNKJUNKJUNKJUNK"):
        assert deliver(task_id, w.callback) is DeliveryOutcome.NOTHING_TO_DO
    assert w.webhooks.posts == []


def test_giving_up_records_every_pending_callback_as_failed() -> None:
    w = world(500)
    task = ended(w, HOOK, OTHER)
    for _ in range(4):
        with pytest.raises(CallbackRetryable):
            deliver(task.task_id, w.callback)

    give_up(task.task_id, "HTTP 500", w.callback)

    stored = w.tasks.get(task.task_id)
    assert stored.status is TaskStatus.COMPLETED  # the export's outcome never depends on its callback
    assert [(s.state.status, s.state.attempts, s.state.last_error) for s in stored.subscribers] == [
        (CallbackStatus.FAILED, 4, "HTTP 500")
    ] * 2
    assert w.counts(Metric.CALLBACK_FAILED) == 2
    give_up(task.task_id, "again", w.callback)  # nothing pending any more
    assert w.counts(Metric.CALLBACK_FAILED) == 2


def test_a_record_gone_by_the_time_its_states_are_written_is_no_error() -> None:
    w = world(204)
    task = ended(w, HOOK)

    def expired(task: Task) -> None:
        raise ConditionFailed("the record is gone")

    w.tasks.record_callbacks = expired  # type: ignore[method-assign]
    assert deliver(task.task_id, w.callback) is DeliveryOutcome.DELIVERED
    assert len(w.webhooks.posts) == 1


def test_each_delivered_callback_is_one_delivered_event_and_a_failed_one_none() -> None:
    # Given a completed task calling back two subscribers, one of which refuses for good
    w = world(204, 410)
    task = ended(w, HOOK, OTHER)
    events = FakeEvents()

    # When its callbacks are delivered
    assert deliver(task.task_id, dataclasses.replace(w.callback, events=events)) is DeliveryOutcome.FAILED

    # Then the bus gets one Export Delivered, for the subscriber that got it
    (delivered,) = events.published
    assert delivered.detail_type == Events.EXPORT_DELIVERED
    assert (delivered.detail["task_id"], delivered.detail["subscriber"], delivered.detail["status"]) == (
        task.task_id,
        0,
        "COMPLETED",
    )
    assert HOOK not in str(delivered.detail)


class BusySchedules(FakeScheduleStore):
    """A schedules table (or an audit trail behind the run's end) that refuses for now."""

    def get(self, schedule_id: str) -> None:
        raise ServiceUnavailable("throttled")


def test_a_scheduled_runs_end_that_cannot_be_recorded_yet_is_retried_before_any_callback() -> None:
    # Given a scheduled run whose end (its schedule's outcome, its mail and their audit records)
    # cannot be written for now
    w = world(204)
    task = ended(w, HOOK).model_copy(update={"schedule_id": "sch_1"})
    w.tasks.tasks[task.task_id] = task
    run_end = RunEndDependencies(
        schedules=BusySchedules(), mailer=None, sender=None, allowed_domains=frozenset(), results=w.files, clock=w.clock
    )

    # When it is delivered, then the workflow retries it (its Retry matches CallbackRetryable),
    # and no callback went out ahead of the run's end
    with pytest.raises(CallbackRetryable, match="throttled"):
        deliver(task.task_id, dataclasses.replace(w.callback, run_end=run_end))
    assert w.webhooks.posts == []
    assert w.tasks.get(task.task_id).pending_callbacks == [0]
