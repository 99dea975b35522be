"""exportctl for every export type, against a scripted API: filters from the served JSON Schema,
the submit options, retry, global options anywhere, a closed stdout, and how often it polls."""

import io
import json
from pathlib import Path
from typing import Any

import pytest

from exports_client.cli import main
from exports_client.filters import constraints, shown_pattern
from exports_client.following import LIVE_POLL_SEC
from exports_client.output import ExitCode
from tests.client.fake_api import (
    ACCEPTED,
    BASE_URL,
    TOKEN,
    FakeApi,
    FakeTime,
    error_response,
    json_response,
    serving_types,
    task_json,
)


def run(api: FakeApi, *args: str, fake_time: FakeTime | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    fake_time = fake_time or FakeTime()
    code = main(
        [*args, "--url", BASE_URL, "--token", TOKEN],
        transport=api.transport,
        stdout=out,
        stderr=err,
        sleep=fake_time.sleep,
        clock=fake_time.clock,
    )
    return code, out.getvalue(), err.getvalue()


def submitting() -> FakeApi:
    return serving_types(FakeApi()).on("POST", "/v1/exports", json_response(202, ACCEPTED))


def sent(api: FakeApi) -> dict[str, Any]:
    """The body of the one POST /v1/exports."""
    posts = [request for request in api.requests if request.method == "POST"]
    assert len(posts) == 1, api.paths()
    return json.loads(posts[0].content)


# -- filters typed by the schema ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "export_type", "filters"),
    [
        (
            ["customers", "--filter", "signed_up_from=2025-01-01", "-f", "signed_up_to=2025-06-30",
             "--filter", "countries=DE, FR"],
            "customers",
            {"signed_up_from": "2025-01-01", "signed_up_to": "2025-06-30", "countries": ["DE", "FR"]},
        ),
        (
            ["sales_report", "--filter", "date_from=2025-01-01", "--filter", "date_to=2025-01-31",
             "--filter", "currency=EUR"],
            "sales_report",
            {"date_from": "2025-01-01", "date_to": "2025-01-31", "currency": "EUR"},
        ),
        (
            ["orders_dynamodb", "--from", "2025-01-01", "--to", "2025-01-31", "--filter", "status=paid,shipped"],
            "orders_dynamodb",
            {"date_from": "2025-01-01", "date_to": "2025-01-31", "status": ["paid", "shipped"]},
        ),
        (
            ["invoices", "--filter", "issued_after=2025-01-01T00:00:00Z", "--filter", "min_total=12.50",
             "--filter", "limit=20", "--filter", "paid=yes", "--filter", "days=1,15"],
            "invoices",
            {"issued_after": "2025-01-01T00:00:00Z", "min_total": "12.50", "limit": 20, "paid": True,
             "days": [1, 15]},
        ),
    ],
)  # fmt: skip
def test_filter_values_are_typed_by_the_schema_of_each_type(
    args: list[str], export_type: str, filters: dict[str, Any]
) -> None:
    api = submitting()

    code, out, err = run(api, "submit", *args)

    assert code == ExitCode.OK, err
    assert sent(api) == {"export_type": export_type, "filters": filters, "format": "csv"}
    assert out.startswith("submitted exp_1 (PENDING)")


def test_from_and_to_set_the_types_own_date_range() -> None:
    api = submitting()

    code, _, err = run(api, "submit", "customers", "--from", "2025-01-01", "--to", "2025-01-31")

    assert code == ExitCode.OK, err
    assert sent(api)["filters"] == {"signed_up_from": "2025-01-01", "signed_up_to": "2025-01-31"}


def test_from_on_a_type_without_a_date_range_is_a_usage_error() -> None:
    api = submitting()

    code, _, err = run(api, "submit", "invoices", "--from", "2025-01-01", "--filter", "issued_after=2025-01-01T00:00Z")

    assert code == ExitCode.USAGE
    assert "--from/--to: invoices has no date range filter" in err
    assert "POST /v1/exports" not in api.paths()


def test_filters_json_is_merged_and_filter_wins(tmp_path: Path) -> None:
    api = submitting()
    body = '{"date_from": "2025-01-01", "date_to": "2025-01-31", "currency": "USD"}'

    code, _, err = run(api, "submit", "sales_report", "--filters", body, "--filter", "currency=EUR")

    assert code == ExitCode.OK, err
    assert sent(api)["filters"] == {"date_from": "2025-01-01", "date_to": "2025-01-31", "currency": "EUR"}

    # and from a file
    (tmp_path / "filters.json").write_text(body, encoding="utf-8")
    again = submitting()
    code, _, err = run(again, "submit", "sales_report", "--filters", f"@{tmp_path / 'filters.json'}")
    assert code == ExitCode.OK, err
    assert sent(again)["filters"]["currency"] == "USD"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["orders", "--from", "2025-01-01", "--to", "2025-01-31", "--filter", "colour=red"],
         "filter colour: orders has no such filter (its filters: date_from, date_to, status, columns)"),
        (["customers", "--filter", "signed_up_from=2025-01-01"],
         "filter signed_up_to: required by customers: give --filter signed_up_to=YYYY-MM-DD"),
        (["sales_report", "--from", "2025-01-01", "--to", "2025-01-31"],
         "filter currency: required by sales_report: give --filter currency=TEXT"),
        (["orders", "--from", "2025-01-01", "--to", "2025-01-31", "--status", "lost"],
         'filter status: must be one of pending, paid, shipped, delivered, cancelled, refunded, not "lost"'),
        (["orders_dynamodb", "--from", "2025-01-01", "--to", "2025-01-31", "--filter", "status=paid,lost"],
         'filter status: value 2 must be one of pending'),
        (["invoices", "--filter", "issued_after=2025-01-01T00:00:00Z", "--filter", "limit=ten"],
         "filter limit: must be an integer, not 'ten'"),
        (["invoices", "--filter", "issued_after=2025-01-01T00:00:00Z", "--filter", "limit=5000"],
         "filter limit: must be at most 1000, not 5000"),
        (["invoices", "--filter", "issued_after=2025-01-01T00:00:00Z", "--filter", "min_total=-1"],
         "filter min_total: must be at least 0, not -1"),
        (["invoices", "--filter", "issued_after=2025-01-01"],
         "filter issued_after: must be a date and time with its UTC offset"),
        (["invoices", "--filters", '{"issued_after": "2025-01-01T00:00:00Z", "limit": "20"}'],
         'filter limit: must be an integer, not "20"'),
        (["customers", "--from", "2025-01-01", "--to", "2025-01-31", "--filter", "countries=de"],
         'filter countries: value 1 must match [A-Z]{2}, not "de"'),
        (["customers", "--from", "2025-01-01", "--to", "2025-01-31", "--filter", "countries=xDEx"],
         'filter countries: value 1 must match [A-Z]{2}, not "xDEx"'),
        (["customers", "--from", "2025-01-01", "--to", "2025-01-31", "--filter", "countries=DE,DE"],
         'filter countries: repeats "DE"'),
        (["orders", "--from", "2025-02-30", "--to", "2025-03-31"],
         'filter date_from: must be a date as YYYY-MM-DD, not "2025-02-30"'),
        (["invoicez", "--filter", "x=1"],
         "unknown export type 'invoicez' (this service exports: customers, invoices, orders, orders_dynamodb"),
    ],
)  # fmt: skip
def test_filters_the_schema_refuses_are_usage_errors_named_before_submitting(args: list[str], says: str) -> None:
    api = submitting()

    code, out, err = run(api, "submit", *args)

    assert code == ExitCode.USAGE == 2
    assert out == ""
    assert err.startswith("exportctl: ")
    assert says in err
    assert api.paths() == ["GET /v1/export-types"]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--filter", "currency"], "give KEY=VALUE, not 'currency'"),
        (["--filters", "[1]"], "must be a JSON object"),
        (["--priority", "11"], "must be a whole number from 1 (highest) to 10"),
        (["--priority", "high"], "must be a whole number from 1 (highest) to 10"),
        (["--timeout", "0.5"], "to stop waiting sooner use --wait-timeout"),
    ],
)
def test_a_malformed_option_is_a_usage_error(args: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        main(["submit", "sales_report", *args, "--url", BASE_URL, "--token", TOKEN], transport=FakeApi().transport)
    assert raised.value.code == ExitCode.USAGE
    assert says in capsys.readouterr().err


# -- the other submit options ---------------------------------------------------------------------


def test_submit_options_map_to_the_api_fields() -> None:
    api = submitting()

    code, _, err = run(
        api, "submit", "orders", "--from", "2025-01-01", "--to", "2025-01-31", "--priority", "1", "--timeout", "900",
        "--callback-url", "https://hooks.example.com/exports", "--csv-bom", "--no-csv-formula-guard",
    )  # fmt: skip

    assert code == ExitCode.OK, err
    assert sent(api) == {
        "export_type": "orders",
        "filters": {"date_from": "2025-01-01", "date_to": "2025-01-31"},
        "format": "csv",
        "priority": 1,
        "timeout_sec": 900,
        "callback_url": "https://hooks.example.com/exports",
        "csv_bom": True,
        "csv_formula_guard": False,
    }


def test_wait_timeout_bounds_the_wait_and_timeout_sets_it_by_default() -> None:
    api = submitting().on("GET", "/v1/exports/exp_1", json_response(200, task_json(status="RUNNING")))
    fake_time = FakeTime()

    # --wait-timeout: given a clock that only moves while it sleeps, it stops waiting after 5 s
    code, _, err = run(
        api, "submit", "orders", "--from", "2025-01-01", "--to", "2025-01-31", "--wait", "--wait-timeout", "5",
        fake_time=fake_time,
    )  # fmt: skip

    assert code == ExitCode.TIMEOUT, err
    assert "did not end within 5 s" in err
    assert sum(fake_time.sleeps) == 5
    # --timeout 10 without --wait-timeout: waits for the export's own timeout and a grace
    code, _, err = run(
        api, "submit", "orders", "--from", "2025-01-01", "--to", "2025-01-31", "--wait", "--timeout", "10",
    )  # fmt: skip
    assert code == ExitCode.TIMEOUT
    assert "did not end within 70 s" in err


# -- retry ----------------------------------------------------------------------------------------


def test_retry_submits_the_export_again_and_can_follow_it() -> None:
    new = {**ACCEPTED, "task_id": "exp_2"}
    api = (
        FakeApi()
        .on("POST", "/v1/exports/exp_1/retry", json_response(202, new))
        .on("GET", "/v1/exports/exp_2", json_response(200, task_json("exp_2", status="COMPLETED", progress=100)))
    )

    code, out, _ = run(api, "retry", "exp_1")
    assert code == ExitCode.OK
    assert out == "retried exp_1 as exp_2 (PENDING); follow it with: exportctl status exp_2\n"

    code, out, err = run(api, "retry", "exp_1", "--wait", "--json")
    assert code == ExitCode.OK
    assert json.loads(out)["task_id"] == "exp_2"
    assert "retried exp_1 as exp_2; waiting for it" in err


def test_retry_of_an_export_that_cannot_be_retried_is_rejected() -> None:
    api = FakeApi().on(
        "POST", "/v1/exports/exp_1/retry", error_response(409, "TASK_NOT_RETRYABLE", "export task exp_1 is COMPLETED")
    )

    code, _, err = run(api, "retry", "exp_1")

    assert code == ExitCode.REJECTED
    assert "409 TASK_NOT_RETRYABLE" in err


# -- global options -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["--url", BASE_URL, "--token", TOKEN, "--json", "list"],
        ["list", "--url", BASE_URL, "--token", TOKEN, "--json"],
        ["--url", BASE_URL, "list", "--json", "--token", TOKEN],
        ["--json", "--url", "http://wrong.test", "list", "--url", BASE_URL, "--token", TOKEN],
    ],
)
def test_global_options_go_before_or_after_the_command(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EXPORTS_TOKEN", raising=False)
    api = FakeApi().on("GET", "/v1/exports", json_response(200, {"items": [task_json("exp_1")]}))
    out = io.StringIO()

    code = main(argv, transport=api.transport, stdout=out, stderr=io.StringIO())

    assert code == ExitCode.OK
    assert [task["task_id"] for task in json.loads(out.getvalue())] == ["exp_1"]
    assert str(api.requests[0].url).startswith(BASE_URL)
    assert api.requests[0].headers["Authorization"] == f"Bearer {TOKEN}"


# -- a closed stdout ------------------------------------------------------------------------------


class ClosedPipe(io.StringIO):
    """stdout whose reader went away (``| head -1`` after its line)."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_a_closed_stdout_ends_quietly_with_141() -> None:
    api = FakeApi().on("GET", "/v1/exports", json_response(200, {"items": [task_json("exp_1")]}))
    err = io.StringIO()

    code = main(["list", "--url", BASE_URL, "--token", TOKEN], transport=api.transport, stdout=ClosedPipe(), stderr=err)

    assert code == ExitCode.BROKEN_PIPE == 141
    assert err.getvalue() == ""


# -- polling while a bar is shown -----------------------------------------------------------------


def test_waiting_polls_at_least_every_two_seconds_whatever_retry_after_says_but_waits_out_429() -> None:
    # Given a task whose answers ask for 30 s between polls, and one 429 that asks for 7 s
    running = json_response(200, task_json(status="RUNNING", progress=50), {"Retry-After": "30"})
    api = submitting().on(
        "GET",
        "/v1/exports/exp_1",
        running,
        running,
        error_response(429, "RATE_LIMITED", headers={"Retry-After": "7"}),
        running,
        running,
        json_response(200, task_json(status="COMPLETED", progress=100)),
    )
    fake_time = FakeTime()

    code, _, err = run(
        api, "submit", "orders", "--from", "2025-01-01", "--to", "2025-01-31", "--wait", fake_time=fake_time
    )

    # Then it polled every 2 s, waited the 7 s the 429 asked for, and saw the end 2 s after it
    assert code == ExitCode.OK, err
    assert LIVE_POLL_SEC == 2
    assert fake_time.sleeps == [2, 2, 7, 2, 2]


# -- types ----------------------------------------------------------------------------------------


def test_types_shows_each_filter_with_its_type_whether_required_and_its_values() -> None:
    api = serving_types(FakeApi())

    code, out, _ = run(api, "types")

    assert code == ExitCode.OK
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.startswith("  ") and line.split()}
    assert rows["signed_up_from"][:3] == ["signed_up_from", "date", "yes"]
    assert rows["countries"][:5] == ["countries", "list", "of", "string", "no"]
    assert rows["currency"][:5] == ["currency", "string", "yes", "matching", "[A-Z]{3}"]  # served ^(?:[A-Z]{3})$
    assert rows["limit"][:4] == ["limit", "integer", "no", "1..1000"]
    assert rows["min_total"][:5] == ["min_total", "decimal", "no", "at", "least"]
    assert "pending, paid, shipped, delivered, cancelled, refunded" in out
    assert "exportctl submit customers --from YYYY-MM-DD --to YYYY-MM-DD [--filter countries=A,B]" in out
    assert "exportctl submit sales_report --from YYYY-MM-DD --to YYYY-MM-DD --filter currency=TEXT" in out


def test_types_with_names_shows_only_those() -> None:
    api = serving_types(FakeApi())

    code, out, _ = run(api, "types", "sales_report", "--json")
    assert code == ExitCode.OK
    assert [t["name"] for t in json.loads(out)] == ["sales_report"]

    code, _, err = run(api, "types", "nope")
    assert code == ExitCode.USAGE
    assert "unknown export type 'nope'" in err


@pytest.mark.parametrize(
    ("pattern", "shown"),
    [
        ("^(?:[A-Z]{2})$", "[A-Z]{2}"),  # the service's form of a declared pattern
        ("^(?:a|b)$", "a|b"),
        ("^[A-Z]{3}$", "[A-Z]{3}"),  # a plugin's pydantic pattern
        ("^a|b$", "^a|b$"),  # not one whole-value pattern: as it is
        ("[A-Z]", "[A-Z]"),
        ("^a\\$", "^a\\$"),
    ],
)
def test_a_whole_value_pattern_is_shown_without_its_anchors(pattern: str, shown: str) -> None:
    assert shown_pattern(pattern) == shown


@pytest.mark.parametrize("fmt", ["date", "date-time"])
def test_a_dates_year_pattern_is_never_shown_as_a_regex(fmt: str) -> None:
    # The service states its years as a pattern for schema tools; a person reads its sentence.
    schema = {"type": "string", "format": fmt, "pattern": "^(?:19[0-9]{2}|2[0-9]{3})-"}
    assert "19[0-9]" not in constraints(schema)
    assert constraints({"type": "string", "pattern": "^(?:[A-Z]{2})$"}) == "matching [A-Z]{2}"
