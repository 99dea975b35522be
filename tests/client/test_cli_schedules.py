"""``exportctl schedules …`` and ``exportctl mailbox`` in-process against FakeSchedules: the
body each command sends, what is refused before any request (exit 2), exit codes and output."""

import io
import json
from typing import Any

import httpx
import pytest

from exports_client.cli import main
from exports_client.output import ExitCode
from tests.client.fake_api import (
    BASE_URL,
    TOKEN,
    FakeApi,
    FakeSchedules,
    FakeTime,
    error_response,
    json_response,
    mail_json,
    schedule_json,
    serving_types,
    task_json,
)


def run(api: FakeApi, *args: str, token: str = TOKEN) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    fake_time = FakeTime()
    code = main(
        [*args, "--url", BASE_URL, "--token", token],
        transport=api.transport,
        stdout=out,
        stderr=err,
        sleep=fake_time.sleep,
        clock=fake_time.clock,
    )
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def backend() -> FakeSchedules:
    return FakeSchedules()


@pytest.fixture
def api(backend: FakeSchedules) -> FakeApi:
    return serving_types(FakeApi(backend))


def sent(api: FakeApi, method: str = "POST") -> dict[str, Any]:
    bodies = [json.loads(request.content) for request in api.requests if request.method == method]
    assert bodies, f"no {method} was sent: {api.paths()}"
    return bodies[-1]


def create(api: FakeApi, *options: str) -> str:
    code, out, err = run(api, "schedules", "create", "orders", "--json", *options)
    assert code == ExitCode.OK, err
    return str(json.loads(out)["schedule_id"])


def test_create_mirrors_the_body_with_a_relative_window_and_prints_the_schedule(api: FakeApi) -> None:
    code, out, err = run(
        api,
        "schedules", "create", "orders",
        "--cron", "0 8 * * 1", "--timezone", "Europe/Berlin", "--from", "previous_week",
        "--filter", "status=delivered", "--format", "xlsx", "--name", "Weekly orders",
        "--recipient", "finance@acme.example", "--recipient", "ops@acme.example",
        "--start-at", "2026-12-07T00:00:00Z", "--idempotency-key", "weekly-1",
    )  # fmt: skip

    assert code == ExitCode.OK, err
    assert sent(api) == {
        "export_type": "orders",
        "filters": {"date_from": "previous_week", "status": "delivered"},
        "name": "Weekly orders",
        "format": "xlsx",
        "cron": "0 8 * * 1",
        "timezone": "Europe/Berlin",
        "start_at": "2026-12-07T00:00:00Z",
        "recipients": ["finance@acme.example", "ops@acme.example"],
    }
    assert api.requests[-1].headers["Idempotency-Key"] == "weekly-1"
    assert "0 8 * * 1 (Europe/Berlin)" in out
    assert "2025-04-07T08:00:00+02:00" in out, "the next run in the schedule's zone"
    assert "exportctl schedules runs sch_0001" in err


@pytest.mark.parametrize(
    ("every", "body"),
    [("30m", {"minutes": 30}), ("2h", {"hours": 2}), ("1d", {"days": 1}), ("90 minutes", {"minutes": 90})],
)
def test_every_takes_a_number_and_a_unit(api: FakeApi, every: str, body: dict[str, int]) -> None:
    create(api, "--every", every, "--from", "last_n_days:7")

    assert sent(api)["every"] == body
    assert sent(api)["filters"] == {"date_from": "last_n_days:7"}


@pytest.mark.parametrize(
    ("options", "says"),
    [
        (["--every", "30s"], "give a whole number and a unit"),
        (["--every", "0m"], "give a whole number and a unit"),
        (["--cron", "0 8 * *"], "give 5 fields"),
        (["--cron", "0 8 * * 1", "--every", "1d"], "not allowed with argument"),
        ([], "one of the arguments --cron --every is required"),
        (["--every", "1d", "--start-at", "2026-12-07T08:00:00"], "with its offset"),
        (["--every", "1d", "--name", ""], "1 to 100 characters"),
    ],
)
def test_what_the_command_line_gets_wrong_is_refused_before_any_request(
    api: FakeApi, options: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        run(api, "schedules", "create", "orders", "--from", "previous_day", *options)

    assert exited.value.code == ExitCode.USAGE
    assert says in capsys.readouterr().err
    assert api.requests == []


@pytest.mark.parametrize(
    ("filters", "says"),
    [
        (
            ["--filter", "status=previous_day", "--from", "previous_day"],
            "filter status: a relative window (previous_day)",
        ),
        (["--from", "previous_year"], "filter date_from: must be a date or a relative window (previous_day"),
        (["--from", "last_n_days:0"], "must be a date or a relative window"),
        (["--from", "2026-11-01", "--to", "previous_week"], "filter date_to: give the relative window on date_from"),
        (["--from", "previous_week", "--to", "2026-11-30"], "leave date_to out or give it the same value"),
        (["--from", "2026-11-01"], "filter date_to: required by orders"),
        (["--filter", "colour=red", "--from", "previous_day"], "filter colour: orders has no such filter"),
    ],
)
def test_filters_are_checked_against_the_types_schema_with_relative_windows_only_on_its_window(
    api: FakeApi, filters: list[str], says: str
) -> None:
    code, _, err = run(api, "schedules", "create", "orders", "--every", "1d", *filters)

    assert code == ExitCode.USAGE
    assert says in err
    assert api.paths() == ["GET /v1/export-types"], "nothing was created"


def test_a_relative_window_on_a_type_without_a_date_range_is_refused(api: FakeApi) -> None:
    code, _, err = run(api, "schedules", "create", "invoices", "--every", "1d", "--filter", "issued_after=previous_day")

    assert code == ExitCode.USAGE
    assert "filter issued_after: a relative window (previous_day) is not a value of this filter" in err


def test_a_date_window_still_takes_plain_dates(api: FakeApi) -> None:
    create(api, "--every", "1d", "--from", "2026-11-01", "--to", "2026-11-30")

    assert sent(api)["filters"] == {"date_from": "2026-11-01", "date_to": "2026-11-30"}


def test_the_services_refusal_exits_5_naming_the_field(api: FakeApi) -> None:
    code, _, err = run(
        api, "schedules", "create", "orders", "--every", "1d", "--from", "previous_day", "--timezone", "Mars/Olympus"
    )

    assert code == ExitCode.REJECTED
    assert "422 UNKNOWN_TIMEZONE" in err and "field: timezone" in err


def test_the_cap_exits_6(api: FakeApi, backend: FakeSchedules) -> None:
    for _ in range(backend.MAX_PER_USER):
        create(api, "--every", "1d", "--from", "previous_day")

    code, _, err = run(api, "schedules", "create", "orders", "--every", "1d", "--from", "previous_day")

    assert code == ExitCode.RATE_LIMITED
    assert "SCHEDULE_LIMIT_REACHED" in err


def test_list_shows_expression_zone_state_next_and_last_run(api: FakeApi, backend: FakeSchedules) -> None:
    weekly = create(api, "--cron", "0 8 * * 1", "--timezone", "Europe/Berlin", "--from", "previous_week")
    hourly = create(api, "--every", "2h", "--from", "previous_day", "--name", "Every two hours")
    backend.schedules[weekly]["last_run"] = {
        "task_id": "exp_9",
        "scheduled_for": "2025-03-31T06:00:00Z",
        "status": "FAILED",
        "finished_at": "2025-03-31T06:01:00Z",
    }
    backend.schedules[weekly]["consecutive_failures"] = 2

    code, out, err = run(api, "schedules", "list")

    assert code == ExitCode.OK, err
    lines = out.splitlines()
    assert lines[0].split() == [
        "SCHEDULE", "NAME", "TYPE", "FORMAT", "WHEN", "ZONE", "STATE", "NEXT", "RUN", "LAST", "RUN", "FAILURES"
    ]  # fmt: skip
    assert lines[1].startswith(hourly) and "every 2 hours" in lines[1] and "Every two hours" in lines[1]
    assert lines[2].startswith(weekly) and "0 8 * * 1" in lines[2] and "Europe/Berlin" in lines[2]
    assert "FAILED" in lines[2] and lines[2].rstrip().endswith("2")


def test_list_json_is_every_page_up_to_the_limit(api: FakeApi) -> None:
    made = [create(api, "--every", f"{n}d", "--from", "previous_day") for n in (1, 2, 3)]

    code, out, _ = run(api, "schedules", "list", "--json", "--limit", "2")

    assert code == ExitCode.OK
    assert [item["schedule_id"] for item in json.loads(out)] == made[::-1][:2]


def test_show_of_an_unknown_or_anothers_schedule_exits_4(api: FakeApi) -> None:
    schedule_id = create(api, "--every", "1d", "--from", "previous_day")

    code, _, err = run(api, "schedules", "show", schedule_id, token="bob-token")

    assert code == ExitCode.NOT_FOUND
    assert "SCHEDULE_NOT_FOUND" in err


def test_update_merges_the_filters_and_replaces_cron_by_every(api: FakeApi) -> None:
    schedule_id = create(api, "--cron", "0 8 * * 1", "--from", "previous_week", "--filter", "status=paid")

    code, out, err = run(
        api, "schedules", "update", schedule_id, "--every", "30m", "--from", "last_n_days:3", "--no-end", "--json"
    )

    assert code == ExitCode.OK, err
    assert sent(api, "PATCH") == {
        "filters": {"date_from": "last_n_days:3", "status": "paid"},
        "every": {"minutes": 30},
        "cron": None,
        "end_at": None,
    }
    assert json.loads(out)["every"]["minutes"] == 30


def test_update_checks_the_merged_filters_before_sending(api: FakeApi) -> None:
    schedule_id = create(api, "--every", "1d", "--from", "previous_week")

    code, _, err = run(api, "schedules", "update", schedule_id, "--filter", "status=lost")

    assert code == ExitCode.USAGE
    assert "filter status: must be one of" in err
    assert not any(request.method == "PATCH" for request in api.requests)


def test_update_with_nothing_to_change_is_a_usage_error(api: FakeApi) -> None:
    schedule_id = create(api, "--every", "1d", "--from", "previous_week")

    code, _, err = run(api, "schedules", "update", schedule_id)

    assert code == ExitCode.USAGE
    assert "nothing to change" in err


DST = "dst_01JEXAMPLE0000000000000000"


def test_update_replaces_the_destinations_or_removes_them_and_a_template_alone_keeps_them(api: FakeApi) -> None:
    schedule_id = create(api, "--every", "1d", "--from", "previous_week")

    replaced = run(api, "schedules", "update", schedule_id, "--destination", DST, "--path-template", "{type}/{file}")
    assert replaced[0] == ExitCode.OK, replaced[2]
    assert sent(api, "PATCH") == {"destinations": [DST], "path_template": "{type}/{file}"}
    assert run(api, "schedules", "update", schedule_id, "--path-template", "{file}")[0] == ExitCode.OK
    assert sent(api, "PATCH") == {"path_template": "{file}"}
    assert run(api, "schedules", "update", schedule_id, "--no-destinations")[0] == ExitCode.OK
    assert sent(api, "PATCH") == {"destinations": []}

    # Contradictions are refused before any request.
    patches = sum(request.method == "PATCH" for request in api.requests)
    both = run(api, "schedules", "update", schedule_id, "--destination", DST, "--no-destinations")
    template = run(api, "schedules", "update", schedule_id, "--no-destinations", "--path-template", "{file}")
    assert (both[0], template[0]) == (ExitCode.USAGE, ExitCode.USAGE)
    assert sum(request.method == "PATCH" for request in api.requests) == patches


def test_pause_resume_delete(api: FakeApi) -> None:
    schedule_id = create(api, "--every", "1d", "--from", "previous_week")

    paused = run(api, "schedules", "pause", schedule_id)
    resumed = run(api, "schedules", "resume", schedule_id, "--json")
    deleted = run(api, "schedules", "delete", schedule_id)
    again = run(api, "schedules", "delete", schedule_id)

    assert paused[0] == ExitCode.OK and "PAUSED (PAUSED_BY_USER)" in paused[1] and "PAUSED_BY_USER: paused" in paused[1]
    assert resumed[0] == ExitCode.OK and json.loads(resumed[1])["state"] == "ACTIVE"
    assert deleted[:2] == (ExitCode.OK, f"deleted {schedule_id}\n")
    assert again[0] == ExitCode.NOT_FOUND


def test_run_now_then_runs_lists_its_tasks(api: FakeApi) -> None:
    schedule_id = create(api, "--every", "1d", "--from", "previous_week")

    ran = run(api, "schedules", "run", schedule_id)
    code, out, err = run(api, "schedules", "runs", schedule_id)

    assert ran[0] == ExitCode.OK and f"ran {schedule_id} as exp_{schedule_id}_1" in ran[1]
    assert code == ExitCode.OK, err
    assert out.splitlines()[1].startswith(f"exp_{schedule_id}_1")


def test_run_with_wait_follows_the_task_to_its_end(api: FakeApi) -> None:
    schedule_id = create(api, "--every", "1d", "--from", "previous_week")
    task_id = f"exp_{schedule_id}_1"
    api.on("GET", f"/v1/exports/{task_id}", json_response(200, task_json(task_id, "COMPLETED", progress=100)))
    api.on("POST", "/v1/stream-tickets", error_response(404, "NOT_FOUND"))

    code, out, err = run(api, "schedules", "run", schedule_id, "--wait")

    assert code == ExitCode.OK, err
    assert "COMPLETED" in out


def test_runs_of_anothers_schedule_exit_4(api: FakeApi) -> None:
    schedule_id = create(api, "--every", "1d", "--from", "previous_week")

    code, _, _ = run(api, "schedules", "runs", schedule_id, token="bob-token")

    assert code == ExitCode.NOT_FOUND


def test_mailbox_shows_each_message(api: FakeApi, backend: FakeSchedules) -> None:
    backend.mail += [mail_json("msg_1"), mail_json("msg_2", subject="Weekly orders: failed", text="It failed.")]

    code, out, err = run(api, "mailbox")
    as_json = run(api, "mailbox", "--json", "--limit", "1")

    assert code == ExitCode.OK, err
    assert out.index("Weekly orders: failed") < out.index("Weekly orders: 42 rows")
    assert "exports@local.test -> finance@acme.example" in out
    assert "http://files.test/exp_1.xlsx" in out
    assert [item["from"] for item in json.loads(as_json[1])] == ["exports@local.test"]


def test_mailbox_outside_local_mode_exits_4() -> None:
    code, _, err = run(FakeApi(), "mailbox")

    assert code == ExitCode.NOT_FOUND
    assert "404" in err


def test_a_schedules_view_as_the_contract_shows_it_is_shown() -> None:
    paused = schedule_json(
        state="PAUSED",
        paused_reason={"code": "TOO_MANY_FAILURES", "message": "5 runs in a row failed"},
        next_runs=[],
        every={"minutes": 30},
        cron=None,
        consecutive_failures=5,
    )
    api = FakeApi().on("GET", "/v1/schedules/sch_1", json_response(200, paused))

    code, out, _ = run(api, "schedules", "show", "sch_1")

    assert code == ExitCode.OK
    assert "TOO_MANY_FAILURES: 5 runs in a row failed" in out
    assert "every 30 minutes (Europe/Berlin)" in out
    assert "5 in a row" in out


def test_a_feed_is_created_with_since_last_run_and_when_empty_and_its_watermark_reset(api: FakeApi) -> None:
    schedule_id = create(api, "--every", "1h", "--from", "since_last_run", "--when-empty", "skip")

    assert sent(api)["filters"] == {"date_from": "since_last_run"} and sent(api)["when_empty"] == "skip"
    code, _, err = run(api, "schedules", "update", schedule_id, "--reset-watermark")
    assert code == ExitCode.OK, err
    assert sent(api, "PATCH") == {"watermark": None}
    code, _, err = run(api, "schedules", "update", schedule_id, "--watermark", "2026-12-01T00:00:00Z")
    assert code == ExitCode.OK, err
    assert sent(api, "PATCH") == {"watermark": "2026-12-01T00:00:00Z"}


def test_a_feeds_view_shows_its_watermark_run_in_flight_latest_and_permalink() -> None:
    feed = schedule_json(
        when_empty="skip",
        watermark="2026-12-01T10:00:00Z",
        feed_run={
            "task_id": "exp_9",
            "scheduled_for": "2026-12-01T11:00:00Z",
            "window_from": "2026-12-01T10:00:00Z",
            "window_to": "2026-12-01T10:59:00Z",
        },
        latest_task_id="exp_8",
        permalink=True,
    )
    api = FakeApi().on("GET", "/v1/schedules/sch_1", json_response(200, feed))

    code, out, _ = run(api, "schedules", "show", "sch_1")

    assert code == ExitCode.OK
    assert "skipped (no file, no mail)" in out and "exp_9, changes from" in out
    assert "exp_8" in out and "permalink" in out


def test_permalink_prints_the_url_once_and_revoke_deletes_it() -> None:
    link = {"url": "https://api.example/v1/permalinks/sch_1?key=s3cret", "key": "s3cret"}
    api = FakeApi().on("POST", "/v1/schedules/sch_1/permalink", json_response(201, link))
    api.on("DELETE", "/v1/schedules/sch_1/permalink", httpx.Response(204))

    code, out, _ = run(api, "schedules", "permalink", "sch_1")
    assert code == ExitCode.OK and link["url"] in out and "revoke" in out
    code, out, _ = run(api, "schedules", "permalink", "sch_1", "--revoke")
    assert code == ExitCode.OK and "revoked" in out
    assert [request.method for request in api.requests] == ["POST", "DELETE"]


def test_latest_without_a_completed_file_exits_4() -> None:
    api = FakeApi().on("GET", "/v1/schedules/sch_1", json_response(200, schedule_json()))

    code, _, err = run(api, "schedules", "latest", "sch_1")

    assert code == ExitCode.NOT_FOUND and "NO_LATEST_FILE" in err
