"""``locale`` and ``csv_dialect`` on POST /v1/exports against moto, through the worker: the demo
orders in Chinese headers in CSV (GB18030), XLSX and PDF, in a German dialect, recorded on the
task and its view, and refused with a 422 naming the field when they make no sense."""

import csv
import io
import re
from typing import Any

import openpyxl
import pytest

from local_stack.embedded_aws import Resources
from tests.integration.test_export_types_moto import finished, run_queued, shop  # noqa: F401  (the fixture)
from tests.integration.test_time_zone_api import call, submit
from tests.pdf_reading import page_lines, reader

BODY: dict[str, Any] = {
    "export_type": "orders",
    "format": "csv",
    "filters": {"date_from": "2025-03-30", "date_to": "2025-03-31"},
}
ZH_HEADERS = ["订单号", "下单日期", "创建时间 (UTC)", "客户编号", "客户", "电子邮件", "国家", "状态", "件数"]


def exported(aws: Resources, **body: Any) -> tuple[dict[str, Any], bytes]:
    answer = submit({**BODY, **body})
    assert answer["http"] == 202, answer
    run_queued(aws)
    return finished(answer["task_id"])


def test_zh_cn_headers_in_gb18030_csv_xlsx_and_pdf(shop: Resources) -> None:  # noqa: F811
    view, body = exported(shop, locale="zh-CN", csv_dialect={"encoding": "gb18030"})
    assert view["locale"] == "zh-CN" and view["csv_dialect"]["encoding"] == "gb18030"
    header = body.decode("gb18030").split("\r\n")[0].split(",")
    assert header[: len(ZH_HEADERS)] == ZH_HEADERS

    _, body = exported(shop, format="xlsx", locale="zh-CN")
    sheet = openpyxl.load_workbook(io.BytesIO(body), read_only=True).worksheets[0]
    first = next(sheet.iter_rows(max_row=1, values_only=True))
    assert list(first[: len(ZH_HEADERS)]) == ZH_HEADERS

    _, body = exported(shop, format="pdf", locale="zh-CN")
    lines = [line.text for line in page_lines(reader(body).pages[0])]
    assert lines[0] == "日期范围内的订单 (每行一个订单)"
    assert lines[1].startswith("筛选条件: date_from = 2025-03-30")
    assert any("订单号" in line and "下单日期" in line for line in lines)
    assert lines[-1].endswith("演示商店 · 机密")


def test_a_task_without_a_locale_is_in_the_types_and_keeps_english_headers(shop: Resources) -> None:  # noqa: F811
    view, body = exported(shop)
    assert view["locale"] == "en"
    assert body.decode().split("\r\n")[0].startswith("Order ID,Order date,Created at (UTC)")


def test_a_german_dialect_has_semicolons_and_decimal_commas(shop: Resources) -> None:  # noqa: F811
    _, body = exported(shop, locale="de", csv_dialect={"delimiter": ";", "decimal_separator": ","})
    rows = list(csv.reader(io.StringIO(body.decode(), newline=""), delimiter=";"))
    assert rows[0][:3] == ["Bestellnummer", "Bestelldatum", "Erstellt am (UTC)"]
    amounts = [row[rows[0].index("Betrag")] for row in rows[1:]]
    assert amounts and all(re.fullmatch(r"-?\d+,\d\d", amount) for amount in amounts), amounts


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"locale": "not a locale"}, "locale"),
        ({"csv_dialect": {"delimiter": ":"}}, "csv_dialect.delimiter"),
        ({"csv_dialect": {"decimal_separator": ","}}, "csv_dialect"),
        ({"csv_dialect": {"encoding": "ebcdic"}}, "csv_dialect.encoding"),
        ({"csv_bom": True, "csv_dialect": {"encoding": "gb18030"}}, None),
    ],
)
def test_a_locale_or_dialect_that_makes_no_sense_is_a_422(shop: Resources, body: Any, field: Any) -> None:  # noqa: F811
    answer = submit({**BODY, **body})
    assert answer["http"] == 422, answer
    if field is not None:
        assert answer["error"]["field"] == field


def test_a_schedule_records_its_locale_and_dialect(shop: Resources) -> None:  # noqa: F811
    body = {**BODY, "cron": "0 8 * * 1", "locale": "ja", "csv_dialect": {"encoding": "shift_jis"}}
    answer = call("POST", "/v1/schedules", body)
    assert answer["http"] == 201, answer
    assert answer["locale"] == "ja" and answer["csv_dialect"]["encoding"] == "shift_jis"


def test_a_schedules_locale_and_dialect_are_patched_and_checked_like_on_create(shop: Resources) -> None:  # noqa: F811
    created = call("POST", "/v1/schedules", {**BODY, "cron": "0 8 * * 1", "csv_bom": True})
    path = f"/v1/schedules/{created['schedule_id']}"

    patched = call("PATCH", path, {"locale": "zh-cn", "csv_dialect": {"delimiter": ";", "decimal_separator": ","}})
    assert patched["http"] == 200, patched
    assert patched["locale"] == "zh-CN"
    assert (patched["csv_dialect"]["delimiter"], patched["csv_dialect"]["decimal_separator"]) == (";", ",")

    for change, field in (
        ({"locale": "not a locale"}, "locale"),
        ({"csv_dialect": {"delimiter": ":"}}, "csv_dialect.delimiter"),
        ({"csv_dialect": {"encoding": "gb18030"}}, "csv_dialect.encoding"),  # the schedule has csv_bom
    ):
        refused = call("PATCH", path, change)
        assert refused["http"] == 422 and refused["error"]["field"] == field, (change, refused)
    unchanged = call("GET", path)
    assert unchanged["locale"] == "zh-CN" and unchanged["csv_dialect"]["encoding"] == "utf-8"

    back = call("PATCH", path, {"locale": None})
    assert back["http"] == 200 and back["locale"] is None, back
