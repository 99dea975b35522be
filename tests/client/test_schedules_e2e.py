"""The SDK and ``exportctl schedules`` against the local stack's schedules routes over real HTTP:
create (idempotent), next runs in the zone, list, update, pause, resume, run now and its run,
delete; another user's schedule is not found; the window's relative value reaches the task as
dates. (These need the service's schedules routes, issue 33.)"""

import json
import re
import uuid

import pytest

from exports_client import ExportsClient, NotFoundError, ScheduleState, TaskStatus
from tests.client.e2e_support import Exportctl
from tests.stack_process import TOKENS, Stack

pytestmark = pytest.mark.e2e
WAIT_SEC = 60
DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def test_the_sdk_creates_runs_and_deletes_a_schedule(client: ExportsClient, stack: Stack) -> None:
    # Given a weekly schedule in Berlin over the previous week, created twice with one key
    key = f"e2e-{uuid.uuid4()}"
    schedule = client.create_schedule(
        "orders", {"date_from": "previous_week"}, cron="0 8 * * 1", timezone="Europe/Berlin", idempotency_key=key
    )
    again = client.create_schedule(
        "orders", {"date_from": "previous_week"}, cron="0 8 * * 1", timezone="Europe/Berlin", idempotency_key=key
    )
    assert again.schedule_id == schedule.schedule_id
    # Its next runs are Mondays at 08:00 Berlin time, whatever the season.
    assert len(schedule.next_runs) == 5
    assert all(run.local.weekday() == 0 and (run.local.hour, run.local.minute) == (8, 0) for run in schedule.next_runs)
    assert all(run.local == run.utc for run in schedule.next_runs)
    assert schedule.schedule_id in {listed.schedule_id for listed in client.iter_schedules(page_size=1)}

    # When it is changed, paused, resumed and run now
    changed = client.update_schedule(schedule.schedule_id, every={"hours": 6}, name="every six hours")
    assert (changed.cron, changed.every and changed.every.hours, changed.name) == (None, 6, "every six hours")
    paused = client.pause_schedule(schedule.schedule_id)
    assert paused.state is ScheduleState.PAUSED and paused.next_runs == []
    assert paused.paused_reason is not None and paused.paused_reason.code == "PAUSED_BY_USER"
    assert client.resume_schedule(schedule.schedule_id).state is ScheduleState.ACTIVE
    accepted = client.run_schedule(schedule.schedule_id)
    task = client.wait(accepted.task_id, timeout=WAIT_SEC)

    # Then the run is an ordinary task of its owner's, its window resolved to dates
    assert task.status is TaskStatus.COMPLETED
    assert task.schedule_id == schedule.schedule_id
    assert DATE.fullmatch(task.filters["date_from"]) and DATE.fullmatch(task.filters["date_to"])
    assert task.task_id in [run.task_id for run in client.schedule_runs(schedule.schedule_id)]

    # And another user can neither read, change, run nor delete it
    with ExportsClient(stack.url, TOKENS["bob"]) as bob:
        for call in (bob.get_schedule, bob.pause_schedule, bob.run_schedule, bob.delete_schedule):
            with pytest.raises(NotFoundError):
                call(schedule.schedule_id)
        assert schedule.schedule_id not in {listed.schedule_id for listed in bob.iter_schedules()}
        assert list(bob.schedule_runs(schedule.schedule_id)) == []

    client.delete_schedule(schedule.schedule_id)
    with pytest.raises(NotFoundError):
        client.get_schedule(schedule.schedule_id)


def test_exportctl_schedules_end_to_end(exportctl: Exportctl) -> None:
    created = exportctl(
        "schedules", "create", "orders", "--every", "1d", "--from", "previous_day", "--tz", "Asia/Kathmandu", "--json"
    )
    assert created.returncode == 0, created.stderr
    schedule = json.loads(created.stdout)
    assert schedule["next_runs"][0]["local"].endswith("+05:45")

    listed = exportctl("schedules", "list")
    ran = exportctl("schedules", "run", schedule["schedule_id"], "--wait", "--json")
    runs = exportctl("schedules", "runs", schedule["schedule_id"], "--json")
    refused = exportctl(
        "schedules", "create", "orders", "--cron", "0 8 * * 1", "--from", "previous_day", "--tz", "Mars/Olympus"
    )
    not_bobs = exportctl("schedules", "show", schedule["schedule_id"], token=TOKENS["bob"])
    mailbox = exportctl("mailbox", "--json")
    deleted = exportctl("schedules", "delete", schedule["schedule_id"])

    assert listed.returncode == 0 and schedule["schedule_id"] in listed.stdout and "Asia/Kathmandu" in listed.stdout
    assert ran.returncode == 0, ran.stderr
    # The run now is among its runs (local mode's scheduler may have fired it meanwhile too).
    assert json.loads(ran.stdout)["task_id"] in [task["task_id"] for task in json.loads(runs.stdout)]
    assert {task["schedule_id"] for task in json.loads(runs.stdout)} == {schedule["schedule_id"]}
    assert refused.returncode == 5 and "VALIDATION_ERROR: timezone:" in refused.stderr
    assert not_bobs.returncode == 4 and "SCHEDULE_NOT_FOUND" in not_bobs.stderr
    assert mailbox.returncode == 0 and isinstance(json.loads(mailbox.stdout), list)
    assert deleted.returncode == 0
