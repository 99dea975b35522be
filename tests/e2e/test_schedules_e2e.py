"""Scheduled exports on `make run`'s stack, in its own process over real HTTP, with the local
scheduler's clock under the test's control (``EXPORTS_LOCAL_CLOCK=manual``: nothing fires until
``POST /local/clock``, so no test sleeps for a firing). Each firing makes exactly one run task;
a run's end reaches the schedule and the mailbox; another user sees none of it."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from itertools import pairwise
from typing import Any

import pytest
import requests

from tests.e2e.test_export_types_e2e import finished
from tests.stack_process import Stack, running_stack

pytestmark = pytest.mark.e2e

EVERY_MINUTE: dict[str, Any] = {
    "name": "Yesterday's orders",
    "export_type": "orders",
    "format": "csv",
    "filters": {"date_from": "previous_day"},
    "every": {"minutes": 1},
    "timezone": "Europe/Berlin",
    "recipients": ["finance@acme.example"],
}


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    with running_stack(demo_orders=300, environment={"EXPORTS_LOCAL_CLOCK": "manual"}) as running:
        yield running


def api(stack: Stack, method: str, path: str, user: str = "alice", **kwargs: Any) -> requests.Response:
    return requests.request(method, f"{stack.url}{path}", headers=stack.headers(user), timeout=30, **kwargs)


def advance(stack: Stack, seconds: float) -> list[dict[str, Any]]:
    answer = api(stack, "POST", "/local/clock", json={"advance_sec": seconds})
    assert answer.status_code == 200, answer.text
    return answer.json()["fired"]


def runs(stack: Stack, schedule_id: str, user: str = "alice") -> list[dict[str, Any]]:
    answer = api(stack, "GET", "/v1/exports", user=user, params={"schedule_id": schedule_id})
    assert answer.status_code == 200, answer.text
    return answer.json()["items"]


def mailbox(stack: Stack, expected: int) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 60
    while True:
        items = api(stack, "GET", "/local/mailbox").json()["items"]
        if len(items) >= expected or time.monotonic() > deadline:
            return items
        time.sleep(0.3)


def test_each_firing_makes_one_run_and_its_end_is_mailed(stack: Stack) -> None:
    created = api(stack, "POST", "/v1/schedules", json=EVERY_MINUTE)
    assert created.status_code == 201, created.text
    schedule_id = created.json()["schedule_id"]

    # Scheduler's rate fires at its start, then every minute: two firings in the first minute.
    fired = advance(stack, 60)
    assert [entry["outcome"] for entry in fired if entry["schedule_id"] == schedule_id] == ["created", "created"]
    assert advance(stack, 0) == []  # nothing new is due: nothing fires twice
    first = runs(stack, schedule_id)
    assert len(first) == 2
    assert {run["schedule_id"] for run in first} == {schedule_id}
    assert len({run["scheduled_for"] for run in first}) == 2
    # previous_day in Berlin: both ends the same local day.
    assert all(run["filters"]["date_from"] == run["filters"]["date_to"] for run in first)

    fired = advance(stack, 60)
    assert [entry["outcome"] for entry in fired if entry["schedule_id"] == schedule_id] == ["created"]
    assert len(runs(stack, schedule_id)) == 3

    view, _ = finished(stack, first[-1]["task_id"])
    assert view["rows"] is not None
    mail = mailbox(stack, 1)
    assert mail, "no mail arrived"
    assert mail[0]["to"] == ["finance@acme.example"]
    assert "rows" in mail[0]["subject"]
    # A small file: the mail carries it (under the deployment's attachment limit) and says so.
    assert f"Attached: {view['file_name']}" in mail[0]["text"]
    assert [item["file_name"] for item in mail[0]["attachments"]] == [view["file_name"]]
    # The mailbox is the caller's: bob sees no mail of alice's runs (their links are alice's files).
    theirs = {item["id"] for item in api(stack, "GET", "/local/mailbox", user="bob").json()["items"]}
    assert not theirs & {item["id"] for item in mail}
    deadline = time.monotonic() + 30
    while api(stack, "GET", f"/v1/schedules/{schedule_id}").json()["last_run"] is None:
        assert time.monotonic() < deadline, "the run's end never reached its schedule"
        time.sleep(0.3)


def test_another_user_cannot_read_change_delete_run_or_list_it(stack: Stack) -> None:
    schedule_id = api(stack, "POST", "/v1/schedules", json={**EVERY_MINUTE, "recipients": []}).json()["schedule_id"]
    advance(stack, 1)
    assert runs(stack, schedule_id)

    for method, path, body in (
        ("GET", f"/v1/schedules/{schedule_id}", None),
        ("PATCH", f"/v1/schedules/{schedule_id}", {"state": "PAUSED"}),
        ("DELETE", f"/v1/schedules/{schedule_id}", None),
        ("POST", f"/v1/schedules/{schedule_id}/run", None),
    ):
        answer = api(stack, method, path, user="bob", json=body)
        assert answer.status_code == 404, (method, answer.text)
        assert answer.json()["error"]["code"] == "SCHEDULE_NOT_FOUND"
    assert all(
        item["schedule_id"] != schedule_id for item in api(stack, "GET", "/v1/schedules", user="bob").json()["items"]
    )
    assert runs(stack, schedule_id, user="bob") == []
    assert api(stack, "GET", f"/v1/schedules/{schedule_id}").json()["state"] == "ACTIVE"

    # Paused by its owner, it fires no more.
    assert api(stack, "PATCH", f"/v1/schedules/{schedule_id}", json={"state": "PAUSED"}).status_code == 200
    before = len(runs(stack, schedule_id))
    advance(stack, 180)
    assert len(runs(stack, schedule_id)) == before
    assert api(stack, "DELETE", f"/v1/schedules/{schedule_id}").status_code == 204


def test_the_mailbox_needs_a_token(stack: Stack) -> None:
    assert requests.get(f"{stack.url}/local/mailbox", timeout=10).status_code == 401


def test_the_banners_schedule_works_as_printed_and_fires_every_minute(stack: Stack) -> None:
    printed = re.search(r"POST \S+/v1/schedules .*?-d '(\{.*?\})'", stack.output(), re.DOTALL)
    assert printed, "the banner shows no schedule"
    # Copied into a shell it is one command: its lines end with a backslash.
    assert re.search(r"/v1/schedules -H [^\n]* \\\n\s+-d '", stack.output()), "the command is not continued"
    assert "EXPORTS_MIN_SCHEDULE_INTERVAL_MIN=1" in stack.output()

    created = api(stack, "POST", "/v1/schedules", json=json.loads(printed.group(1)))

    assert created.status_code == 201, created.text
    schedule = created.json()
    runs_at = [datetime.fromisoformat(run["utc"]) for run in schedule["next_runs"]]
    assert [later - earlier for earlier, later in pairwise(runs_at)] == [timedelta(minutes=1)] * 4
    # The loop's clock is ahead of the API's by what the tests before advanced it: look once, then
    # every minute more is exactly one run more, a minute after the last.
    advance(stack, 0)
    before = runs(stack, schedule["schedule_id"])
    advance(stack, 60)
    after = runs(stack, schedule["schedule_id"])
    assert len(after) == len(before) + 1
    fired_at = sorted(datetime.fromisoformat(run["scheduled_for"]) for run in after)
    assert {later - earlier for earlier, later in pairwise(fired_at)} <= {timedelta(minutes=1)}
    assert api(stack, "DELETE", f"/v1/schedules/{schedule['schedule_id']}").status_code == 204
