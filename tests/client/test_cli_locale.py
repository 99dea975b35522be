"""``exportctl submit --locale`` and the ``--csv-*`` dialect options, and the SDK's ``submit(locale=...,
csv_dialect=...)``: the API's ``locale`` and ``csv_dialect`` fields, left to the service when not given."""

from __future__ import annotations

from exports_client import ExportsClient
from exports_client.output import ExitCode
from tests.client.fake_api import ACCEPTED, BASE_URL, TOKEN, FakeApi, json_response, task_json
from tests.client.test_cli_submit import run, sent, submitting

RANGE = ("--from", "2025-01-01", "--to", "2025-01-31")


def test_submit_locale_and_a_german_dialect_are_the_api_fields() -> None:
    api = submitting()

    code, _, err = run(
        api, "submit", "orders", *RANGE, "--locale", "de", "--csv-delimiter", "semicolon",
        "--csv-decimal-separator", "comma",
    )  # fmt: skip

    assert code == ExitCode.OK, err
    assert sent(api)["locale"] == "de"
    assert sent(api)["csv_dialect"] == {"delimiter": ";", "decimal_separator": ","}


def test_submit_an_encoding_and_a_tab_delimiter() -> None:
    api = submitting()
    code, _, err = run(api, "submit", "orders", *RANGE, "--csv-encoding", "shift_jis", "--csv-delimiter", "tab")
    assert code == ExitCode.OK, err
    assert sent(api)["csv_dialect"] == {"delimiter": "\t", "encoding": "shift_jis"}


def test_without_them_the_body_leaves_both_to_the_service() -> None:
    api = submitting()
    code, _, err = run(api, "submit", "orders", *RANGE)
    assert code == ExitCode.OK, err
    assert "locale" not in sent(api) and "csv_dialect" not in sent(api)


def test_the_sdk_sends_them_and_reads_them_back() -> None:
    api = FakeApi().on("POST", "/v1/exports", json_response(202, ACCEPTED))
    api.on("GET", "/v1/exports/exp_1", json_response(200, task_json(locale="zh-CN")))
    client = ExportsClient(BASE_URL, TOKEN, transport=api.transport)

    client.submit("orders", {"date_from": "2025-01-01"}, locale="zh-CN", csv_dialect={"encoding": "gb18030"})

    assert sent(api)["locale"] == "zh-CN" and sent(api)["csv_dialect"] == {"encoding": "gb18030"}
    assert client.get("exp_1").locale == "zh-CN"
