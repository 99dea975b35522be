"""Schedules end to end in moto: the API routes, the schedule function's firings (duplicates
and concurrent deliveries make one task), EventBridge Scheduler's schedule, a run's end on the
schedule (outcome, auto-pause, mail in SES), another user's view of it all."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto.core import DEFAULT_ACCOUNT_ID
from moto.ses.models import ses_backends

from exports.core.config.names import Names
from exports.core.config.retry import SCHEDULE_TARGET_RETRY
from exports.core.config.schedules import Schedules
from exports.core.status import TaskStatus
from exports.core.task import ExportResult, claim, complete, fail
from exports.core.task_writes import end_task, move_task
from exports.finishing.callbacks import callback_payload
from exports.finishing.schedule_run_end import RunEndDependencies, on_run_end
from exports.schedules.eventbridge_scheduler import moved_firing_name
from functions.callback import handler as callback
from functions.schedule import handler as schedule_function
from functions.submit import handler as api
from local_stack.embedded_aws import REGION, Resources
from tests.builders import FakeContext, http_event

WEEKLY: dict[str, Any] = {
    "name": "Weekly orders",
    "export_type": "orders",
    "format": "csv",
    "filters": {"date_from": "previous_week"},
    "cron": "0 8 * * 1",
    "timezone": "Europe/Berlin",
    "recipients": ["finance@acme.example"],
}
# A Monday 08:00 in Berlin (winter time): 07:00 UTC.
MONDAY = datetime(2026, 12, 7, 7, 0, tzinfo=UTC)


def call(method: str, path: str, body: Any = None, user: str = "alice", **kwargs: Any) -> tuple[int, dict, Any]:
    result = api.lambda_handler(http_event(method, path, body, user=user, **kwargs), FakeContext())
    text = result.get("body") or ""
    headers = {k.lower(): v for k, v in (result.get("headers") or {}).items()}
    return result["statusCode"], headers, json.loads(text) if text else None


def fire(schedule_id: str, at: datetime) -> dict[str, Any]:
    event = {"schedule_id": schedule_id, "scheduled_time": at.strftime("%Y-%m-%dT%H:%M:%SZ"), "execution_id": "x"}
    return schedule_function.lambda_handler(event, FakeContext())


def runs(schedule_id: str, user: str = "alice") -> list[dict[str, Any]]:
    status, _, body = call("GET", "/v1/exports", user=user, query={"schedule_id": schedule_id})
    assert status == 200
    return body["items"]


def test_create_answers_201_with_next_runs_and_creates_the_scheduler_schedule(aws: Resources) -> None:
    status, headers, body = call("POST", "/v1/schedules", WEEKLY)

    assert status == 201, body
    assert headers["location"] == f"/v1/schedules/{body['schedule_id']}"
    assert body["state"] == "ACTIVE" and body["paused_reason"] is None
    assert len(body["next_runs"]) == Schedules.NEXT_RUNS_SHOWN
    first = body["next_runs"][0]
    assert first["local"].endswith("T08:00:00+01:00") or first["local"].endswith("T08:00:00+02:00")
    described = boto3.client("scheduler", region_name=REGION).get_schedule(
        Name=body["schedule_id"], GroupName=Names.SCHEDULE_GROUP
    )
    assert described["ScheduleExpression"] == "cron(0 8 ? * MON *)"
    assert described["ScheduleExpressionTimezone"] == "Europe/Berlin"
    assert described["State"] == "ENABLED"
    # Every Monday-08:00 schedule arrives somewhere in the ten minutes after 08:00 (docs/capacity.md).
    assert described["FlexibleTimeWindow"] == {"Mode": "FLEXIBLE", "MaximumWindowInMinutes": 10}
    target = described["Target"]
    assert target["Arn"] == aws.schedule_target_arn and target["RoleArn"] == aws.scheduler_role_arn
    assert target["DeadLetterConfig"] == {"Arn": aws.schedule_dlq_arn}
    assert target["RetryPolicy"] == {
        "MaximumRetryAttempts": SCHEDULE_TARGET_RETRY.retries,
        "MaximumEventAgeInSeconds": SCHEDULE_TARGET_RETRY.max_age_sec,
    }
    assert json.loads(target["Input"]) == {
        "schedule_id": body["schedule_id"],
        "scheduled_time": "<aws.scheduler.scheduled-time>",
        "execution_id": "<aws.scheduler.execution-id>",
    }


def test_a_firing_creates_one_task_with_the_resolved_window_and_duplicates_create_none(aws: Resources) -> None:
    _, _, created = call("POST", "/v1/schedules", WEEKLY)
    schedule_id = created["schedule_id"]

    first = fire(schedule_id, MONDAY)
    again = fire(schedule_id, MONDAY)

    assert first["outcome"] == "created"
    assert again == {"outcome": "duplicate", "task_id": first["task_id"]}
    [run] = runs(schedule_id)
    assert run["task_id"] == first["task_id"]
    assert run["schedule_id"] == schedule_id
    assert run["scheduled_for"].startswith("2026-12-07T07:00:00")
    # The ISO week before Monday 7 December 2026, in Berlin.
    assert run["filters"]["date_from"] == "2026-11-30" and run["filters"]["date_to"] == "2026-12-06"


def test_concurrent_deliveries_of_one_firing_create_exactly_one_task(aws: Resources, atomic_dynamodb: None) -> None:
    _, _, created = call("POST", "/v1/schedules", {**WEEKLY, "recipients": []})
    schedule_id = created["schedule_id"]
    start = threading.Barrier(6)
    outcomes: list[dict[str, Any]] = []

    def deliver() -> None:
        start.wait()
        outcomes.append(fire(schedule_id, MONDAY))

    threads = [threading.Thread(target=deliver) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(outcome["outcome"] for outcome in outcomes).count("created") == 1
    assert len(runs(schedule_id)) == 1
    # The next firing is another task.
    assert fire(schedule_id, MONDAY + timedelta(days=7))["outcome"] == "created"
    assert len(runs(schedule_id)) == 2


def test_another_user_cannot_read_change_delete_run_or_list_a_schedule(aws: Resources) -> None:
    _, _, created = call("POST", "/v1/schedules", WEEKLY)
    schedule_id = created["schedule_id"]
    fire(schedule_id, MONDAY)

    for method, path, body in (
        ("GET", f"/v1/schedules/{schedule_id}", None),
        ("PATCH", f"/v1/schedules/{schedule_id}", {"state": "PAUSED"}),
        ("DELETE", f"/v1/schedules/{schedule_id}", None),
        ("POST", f"/v1/schedules/{schedule_id}/run", None),
    ):
        status, _, answer = call(method, path, body, user="bob")
        assert status == 404, (method, answer)
        assert answer["error"]["code"] == "SCHEDULE_NOT_FOUND"
    assert call("GET", "/v1/schedules", user="bob")[2]["items"] == []
    assert runs(schedule_id, user="bob") == []
    # Untouched for its owner.
    assert call("GET", f"/v1/schedules/{schedule_id}")[2]["state"] == "ACTIVE"


def test_patch_pauses_and_resumes_and_scheduler_follows(aws: Resources) -> None:
    _, _, created = call("POST", "/v1/schedules", WEEKLY)
    schedule_id = created["schedule_id"]
    scheduler = boto3.client("scheduler", region_name=REGION)

    status, _, paused = call("PATCH", f"/v1/schedules/{schedule_id}", {"state": "PAUSED"})
    assert status == 200, paused
    assert paused["state"] == "PAUSED" and paused["paused_reason"]["code"] == "PAUSED_BY_USER"
    assert paused["next_runs"] == []
    assert scheduler.get_schedule(Name=schedule_id, GroupName=Names.SCHEDULE_GROUP)["State"] == "DISABLED"
    assert fire(schedule_id, MONDAY)["outcome"] == "skipped"

    status, _, resumed = call("PATCH", f"/v1/schedules/{schedule_id}", {"state": "ACTIVE", "cron": "30 6 * * *"})
    assert status == 200, resumed
    assert resumed["state"] == "ACTIVE" and resumed["paused_reason"] is None and resumed["cron"] == "30 6 * * *"
    described = scheduler.get_schedule(Name=schedule_id, GroupName=Names.SCHEDULE_GROUP)
    assert described["State"] == "ENABLED" and described["ScheduleExpression"] == "cron(30 6 * * ? *)"


def test_delete_removes_the_schedule_and_its_scheduler_schedule_and_frees_a_place(aws: Resources) -> None:
    _, _, created = call("POST", "/v1/schedules", WEEKLY)
    schedule_id = created["schedule_id"]

    status, _, _ = call("DELETE", f"/v1/schedules/{schedule_id}")

    assert status == 204
    assert call("GET", f"/v1/schedules/{schedule_id}")[0] == 404
    scheduler = boto3.client("scheduler", region_name=REGION)
    with pytest.raises(scheduler.exceptions.ResourceNotFoundException):
        scheduler.get_schedule(Name=schedule_id, GroupName=Names.SCHEDULE_GROUP)
    assert fire(schedule_id, MONDAY)["outcome"] == "skipped"


def test_the_per_user_cap_answers_429_and_the_shortest_interval_422(
    aws: Resources, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EXPORTS_MAX_SCHEDULES_PER_USER", "2")
    for _ in range(2):
        assert call("POST", "/v1/schedules", WEEKLY)[0] == 201

    status, headers, body = call("POST", "/v1/schedules", WEEKLY)
    assert status == 429 and body["error"]["code"] == "SCHEDULE_LIMIT_REACHED" and "retry-after" in headers
    # Another user has a cap of their own.
    assert call("POST", "/v1/schedules", WEEKLY, user="bob")[0] == 201

    status, _, body = call("POST", "/v1/schedules", {**WEEKLY, "cron": "*/5 * * * *"}, user="bob")
    assert status == 422 and body["error"]["code"] == "INTERVAL_TOO_SHORT" and body["error"]["field"] == "cron"
    status, _, body = call("POST", "/v1/schedules", {**WEEKLY, "cron": None, "every": {"minutes": 10}}, user="bob")
    assert status == 422 and body["error"]["code"] == "INTERVAL_TOO_SHORT" and body["error"]["field"] == "every"


@pytest.mark.parametrize(
    ("change", "field", "code"),
    [
        ({"cron": "0 8 * *"}, "cron", "INVALID_CRON"),
        ({"cron": "0 8 1 * 1"}, "cron", "INVALID_CRON"),
        ({"timezone": "Mars/Olympus"}, "timezone", "VALIDATION_ERROR"),
        ({"filters": {"date_from": "previous_year"}}, "filters.date_from", "VALIDATION_ERROR"),
        ({"filters": {"status": "previous_week"}}, "filters.status", "VALIDATION_ERROR"),
        ({"filters": {"date_from": "last_n_days:0"}}, "filters.date_from", "VALIDATION_ERROR"),
        ({"recipients": ["finance@elsewhere.example"]}, "recipients[0]", "RECIPIENT_NOT_ALLOWED"),
        # An outsider after an allowed address; a header smuggled in; a display name.
        ({"recipients": ["finance@acme.example", "x@outside.example"]}, "recipients[1]", "RECIPIENT_NOT_ALLOWED"),
        ({"recipients": ["finance@acme.example\r\nBcc: x@outside.example"]}, "recipients[0]", "VALIDATION_ERROR"),
        ({"recipients": ["Finance <finance@acme.example>"]}, "recipients[0]", "VALIDATION_ERROR"),
        ({"name": "Weekly\r\nBcc: x@outside.example"}, "name", "VALIDATION_ERROR"),
        ({"name": "Weekly\u0007"}, "name", "VALIDATION_ERROR"),
    ],
)
def test_invalid_schedules_are_422_naming_the_field_and_nothing_is_stored(
    aws: Resources, monkeypatch: pytest.MonkeyPatch, change: dict[str, Any], field: str, code: str
) -> None:
    monkeypatch.setenv("EXPORTS_MAIL_ALLOWED_DOMAINS", "acme.example")

    status, _, body = call("POST", "/v1/schedules", {**WEEKLY, **change})

    assert status == 422, body
    assert body["error"]["field"] == field and body["error"]["code"] == code
    assert call("GET", "/v1/schedules")[2]["items"] == []


@pytest.mark.parametrize(
    ("window", "fires"),
    [
        ({"start_at": "1110-09-13T00:00:00Z"}, True),  # begun long ago: it fires from now on
        ({"start_at": "2000-01-01T00:00:00Z", "end_at": "2000-01-01T00:00:00Z"}, False),  # empty
        ({"end_at": "2001-01-01T00:00:00Z"}, False),  # ended
        ({"start_at": "2999-01-01T00:00:00Z", "end_at": "2998-01-01T00:00:00Z"}, False),  # ends first
    ],
)
def test_every_window_the_schema_allows_is_taken_and_fires_only_within_it(
    aws: Resources, window: dict[str, str], fires: bool
) -> None:
    """Each was a 503 (Scheduler refused the dates) or a 422 no JSON Schema can state."""
    status, _, body = call("POST", "/v1/schedules", {**WEEKLY, **window})

    assert status == 201, body
    assert bool(body["next_runs"]) is fires
    described = boto3.client("scheduler", region_name=REGION).get_schedule(
        Name=body["schedule_id"], GroupName=Names.SCHEDULE_GROUP
    )
    assert described["State"] == ("ENABLED" if fires else "DISABLED")
    # Without its end it has firings ahead again, and Scheduler is enabled with them.
    status, _, patched = call("PATCH", f"/v1/schedules/{body['schedule_id']}", {"end_at": None})
    assert status == 200 and patched["next_runs"], patched
    described = boto3.client("scheduler", region_name=REGION).get_schedule(
        Name=body["schedule_id"], GroupName=Names.SCHEDULE_GROUP
    )
    assert described["State"] == "ENABLED"


def test_a_schedule_that_is_no_feed_takes_a_null_watermark_and_refuses_a_value(aws: Resources) -> None:
    schedule_id = call("POST", "/v1/schedules", WEEKLY)[2]["schedule_id"]

    status, _, body = call("PATCH", f"/v1/schedules/{schedule_id}", {"watermark": None, "name": "Still weekly"})
    assert status == 200 and body["name"] == "Still weekly", body
    status, _, body = call("PATCH", f"/v1/schedules/{schedule_id}", {"watermark": "2026-01-01T00:00:00Z"})
    # The body could not know the schedule is no feed: a conflict with it, the field named.
    assert status == 409 and body["error"]["code"] == "SCHEDULE_CONFLICT", body
    assert body["error"]["field"] == "watermark", body


@pytest.mark.parametrize("value", [0, 1.5, True])
def test_an_instant_given_as_a_number_is_refused_naming_the_field(aws: Resources, value: Any) -> None:
    status, _, body = call("POST", "/v1/schedules", {**WEEKLY, "start_at": value})

    assert status == 422 and body["error"]["field"] == "start_at", body
    assert call("GET", "/v1/schedules")[2]["items"] == []


def end_run(task_id: str, ok: bool) -> None:
    """End the run as the worker would, then deliver its end as the workflow's Deliver step does."""
    deps = api.dependencies()
    task = deps.tasks.get(task_id)
    assert task is not None
    now = datetime.now(UTC)
    running = claim(task, now, timedelta(minutes=2))
    move_task(task, running, deps)
    if ok:
        result = ExportResult(
            key="results/x.csv", bytes=10, rows=42, sha256="0" * 64, content_type="text/csv", file_name="x.csv"
        )
        ended = complete(running, result, now, timedelta(hours=24))
    else:
        ended = fail(running, "SOURCE_UNAVAILABLE", "the source did not answer", now, timedelta(hours=24))
    end_task(running, ended, deps)
    callback.lambda_handler({"action": "deliver", "task_id": task_id}, FakeContext())


def sent_mail() -> list[Any]:
    return list(ses_backends[DEFAULT_ACCOUNT_ID][REGION].sent_messages)


def test_a_completed_run_is_recorded_and_mailed_once_with_its_row_count_and_link(aws: Resources) -> None:
    _, _, created = call("POST", "/v1/schedules", WEEKLY)
    schedule_id = created["schedule_id"]
    task_id = fire(schedule_id, MONDAY)["task_id"]

    end_run(task_id, ok=True)
    callback.lambda_handler({"action": "deliver", "task_id": task_id}, FakeContext())  # a retried delivery

    schedule = call("GET", f"/v1/schedules/{schedule_id}")[2]
    assert schedule["last_run"]["task_id"] == task_id and schedule["last_run"]["status"] == "COMPLETED"
    assert schedule["consecutive_failures"] == 0
    [mail] = sent_mail()
    assert mail.destinations["ToAddresses"] == ["finance@acme.example"]
    assert "42 rows" in mail.subject and "42 rows" in mail.body
    assert "results/x.csv" in mail.body and "X-Amz-Signature" in mail.body  # a presigned link, no attachment


def test_consecutive_failures_pause_the_schedule_and_its_callback_says_so(aws: Resources) -> None:
    _, _, created = call("POST", "/v1/schedules", {**WEEKLY, "recipients": []})
    schedule_id = created["schedule_id"]
    for week in range(Schedules.MAX_CONSECUTIVE_FAILURES):
        task_id = fire(schedule_id, MONDAY + timedelta(days=7 * week))["task_id"]
        end_run(task_id, ok=False)
        schedule = call("GET", f"/v1/schedules/{schedule_id}")[2]
        assert schedule["consecutive_failures"] == week + 1

    assert schedule["state"] == "PAUSED"
    assert schedule["paused_reason"]["code"] == "TOO_MANY_FAILURES"
    # The pause reaches Scheduler at the next firing, which creates no task.
    assert fire(schedule_id, MONDAY + timedelta(days=70))["outcome"] == "skipped"
    last = api.dependencies().tasks.get(task_id)
    assert last is not None
    assert last.status is TaskStatus.FAILED
    # The run that paused it: its callback (delivered again) carries the pause.
    payload = callback_payload(last, callback.dependencies(), on_run_end(last, run_end()))
    assert payload["data"]["schedule_id"] == schedule_id
    assert payload["data"]["schedule_paused"]["code"] == "TOO_MANY_FAILURES"


def run_end() -> RunEndDependencies:
    deps = callback.dependencies().run_end
    assert deps is not None
    return deps


def test_an_idempotency_key_replays_the_first_create(aws: Resources) -> None:
    key = {"Idempotency-Key": "weekly-orders-1"}

    first = call("POST", "/v1/schedules", WEEKLY, headers=key)
    again = call("POST", "/v1/schedules", WEEKLY, headers=key)
    other = call("POST", "/v1/schedules", {**WEEKLY, "name": "another"}, headers=key)

    assert first[0] == again[0] == 201
    assert again[2]["schedule_id"] == first[2]["schedule_id"] and again[1]["idempotent-replayed"] == "true"
    assert other[0] == 422 and other[2]["error"]["code"] == "IDEMPOTENCY_KEY_REUSED"
    assert len(call("GET", "/v1/schedules")[2]["items"]) == 1


def test_run_now_submits_a_run_as_post_exports_does(aws: Resources) -> None:
    _, _, created = call("POST", "/v1/schedules", WEEKLY)
    schedule_id = created["schedule_id"]

    status, headers, accepted = call("POST", f"/v1/schedules/{schedule_id}/run")

    assert status == 202, accepted
    assert headers["location"] == f"/v1/exports/{accepted['task_id']}"
    [run] = runs(schedule_id)
    assert run["task_id"] == accepted["task_id"] and run["scheduled_for"] is not None
    assert run["filters"]["date_from"] <= run["filters"]["date_to"]


def test_an_invalid_patch_is_a_422_or_a_conflict_and_changes_nothing(aws: Resources) -> None:
    _, _, created = call("POST", "/v1/schedules", WEEKLY)
    schedule_id = created["schedule_id"]

    for change, field, status_wanted in (
        ({"cron": "0 8 1 * 1"}, "cron", 422),
        ({"timezone": "Nowhere/City"}, "timezone", 422),
        # Filters the schedule's type does not take: its body could not know the type (409).
        ({"filters": {"date_to": "previous_day"}}, "filters.date_to", 409),
        ({"every": {"minutes": 1}}, "every", 422),
    ):
        status, _, body = call("PATCH", f"/v1/schedules/{schedule_id}", change)
        assert status == status_wanted and body["error"]["field"] == field, (change, body)

    unchanged = call("GET", f"/v1/schedules/{schedule_id}")[2]
    assert {key: unchanged[key] for key in ("cron", "every", "timezone", "filters")} == {
        "cron": WEEKLY["cron"],
        "every": None,
        "timezone": WEEKLY["timezone"],
        "filters": WEEKLY["filters"],
    }
    described = boto3.client("scheduler", region_name=REGION).get_schedule(
        Name=schedule_id, GroupName=Names.SCHEDULE_GROUP
    )
    assert described["ScheduleExpression"] == "cron(0 8 ? * MON *)"


def test_a_schedule_keeps_only_the_claims_its_type_reads(aws: Resources) -> None:
    claims = {"custom:tenant_id": "acme", "email": "alice@acme.example", "exp": "1", "jti": "abc"}

    _, _, created = call("POST", "/v1/schedules", WEEKLY, claims=claims)

    stored = api.schedule_dependencies().schedules.get(created["schedule_id"])
    assert stored is not None
    # The demo orders type of the test declaration binds no claim and has no access rule; the
    # tenant claim is kept for the audit trail (its runs and its pauses are its tenant's).
    assert stored.caller.user_id == "alice" and stored.caller.claims == {"custom:tenant_id": "acme"}


def test_an_interval_schedule_shows_its_one_unit_and_a_rate(aws: Resources) -> None:
    status, _, body = call("POST", "/v1/schedules", {**WEEKLY, "cron": None, "every": {"hours": 6}})

    assert status == 201, body
    assert body["every"] == {"hours": 6} and body["cron"] is None
    described = boto3.client("scheduler", region_name=REGION).get_schedule(
        Name=body["schedule_id"], GroupName=Names.SCHEDULE_GROUP
    )
    assert described["ScheduleExpression"] == "rate(6 hours)"


def test_a_time_in_the_dst_gap_fires_once_through_a_one_time_scheduler_schedule(aws: Resources) -> None:
    # 02:30 Berlin does not exist on 28 March 2027 (Scheduler skips it): it fires at 03:00 CEST.
    daily = {**WEEKLY, "cron": "30 2 * * *", "filters": {"date_from": "previous_day"}}
    _, _, created = call("POST", "/v1/schedules", daily)
    schedule_id = created["schedule_id"]
    companion = moved_firing_name(schedule_id)
    scheduler = boto3.client("scheduler", region_name=REGION)

    def moved_to() -> str | None:
        try:
            return scheduler.get_schedule(Name=companion, GroupName=Names.SCHEDULE_GROUP)["ScheduleExpression"]
        except scheduler.exceptions.ResourceNotFoundException:
            return None

    assert moved_to() == "at(2027-03-28T01:00:00)"
    described = scheduler.get_schedule(Name=companion, GroupName=Names.SCHEDULE_GROUP)
    assert described["ScheduleExpressionTimezone"] == "UTC" and described["ActionAfterCompletion"] == "DELETE"
    assert json.loads(described["Target"]["Input"])["schedule_id"] == schedule_id

    moved = datetime(2027, 3, 28, 1, tzinfo=UTC)
    first, again = fire(schedule_id, moved), fire(schedule_id, moved)
    assert first["outcome"] == "created" and again == {"outcome": "duplicate", "task_id": first["task_id"]}
    assert [run["scheduled_for"] for run in runs(schedule_id)] == ["2027-03-28T01:00:00Z"]
    assert moved_to() == "at(2028-03-26T01:00:00)"  # next year's gap

    call("PATCH", f"/v1/schedules/{schedule_id}", {"state": "PAUSED"})
    assert moved_to() is None
    call("PATCH", f"/v1/schedules/{schedule_id}", {"state": "ACTIVE"})
    assert moved_to() == "at(2027-03-28T01:00:00)"  # from now again
    assert call("DELETE", f"/v1/schedules/{schedule_id}")[0] == 204
    assert moved_to() is None


def test_a_whole_number_written_with_a_fraction_is_the_integer_the_schema_counts_it(aws: Resources) -> None:
    """JSON Schema's ``integer`` takes 2.0 (schemathesis sent ``{"days": 4123.0}``): so does the
    service, on a create and a PATCH; a fraction stays refused."""
    hourly = {**WEEKLY, "cron": None, "every": {"hours": 2.0}, "priority": 3.0, "timeout_sec": 600.0}
    status, _, body = call("POST", "/v1/schedules", hourly)
    assert status == 201, body
    assert (body["every"], body["priority"], body["timeout_sec"]) == ({"hours": 2}, 3, 600)

    status, _, body = call("PATCH", f"/v1/schedules/{body['schedule_id']}", {"every": {"days": 1e0}})
    assert status == 200 and body["every"] == {"days": 1}, body
    status, _, body = call("POST", "/v1/schedules", {**hourly, "every": {"hours": 2.5}})
    assert status == 422 and body["error"]["field"].startswith("every"), body


def test_the_served_document_states_the_deployments_mail_domains(
    aws: Resources, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EXPORTS_MAIL_ALLOWED_DOMAINS", "acme.example")
    status, _, document = call("GET", "/openapi.json")
    assert status == 200
    pattern = document["components"]["schemas"]["ScheduleRequest"]["properties"]["recipients"]["items"]["pattern"]

    from jsonschema_rs import Draft202012Validator

    takes = Draft202012Validator({"type": "string", "pattern": pattern}).is_valid
    assert takes("finance@ACME.example") and not takes("finance@globex.example")
    status, _, body = call("POST", "/v1/schedules", {**WEEKLY, "recipients": ["finance@globex.example"]})
    assert status == 422 and body["error"]["code"] == "RECIPIENT_NOT_ALLOWED", body
