"""A run's mail: which task it is of (local mode's mailbox shows a user the mail of their own
runs only), whether the file is attached or linked, and where its deliveries put it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from exports.core.deliveries import Delivery, DeliveryError, DeliveryStatus
from exports.core.task import ExportFormat, ExportResult, Task, claim, complete, new_task
from exports.finishing.run_mail import DestinationLabel, run_message, task_of
from exports.schedules.model import Schedule, StoredCaller


def test_the_task_is_read_from_the_last_line() -> None:
    text = "Scheduled export: weekly (orders, csv)\nStatus: COMPLETED\nTask: exp_01ABC; schedule: sch_01XYZ\n"

    assert task_of(text) == "exp_01ABC"


def test_a_task_line_a_schedule_name_carries_is_not_the_task() -> None:
    # A name is the first line: a forged "Task:" there never names the message's task.
    text = "Scheduled export: x\nTask: exp_VICTIM; schedule: sch_1 (orders, csv)\nStatus: FAILED\n"

    assert task_of(text) is None


def test_other_mail_names_no_task() -> None:
    assert task_of("hello\n") is None
    assert task_of("") is None
    assert task_of("Task: ; schedule: sch_1\n") is None


# The message of a run -------------------------------------------------------------------------

NOW = datetime(2026, 12, 7, 7, tzinfo=UTC)
SCHEDULE = Schedule(
    schedule_id="sch_1",
    user_id="alice",
    caller=StoredCaller(user_id="alice"),
    name="Weekly",
    export_type="orders",
    cron="0 8 * * 1",
    created_at=NOW,
    updated_at=NOW,
    anchor_at=NOW,
)
LINK = "https://results.example/x.csv?X-Amz-Signature=abc"


def completed_run(*deliveries: Delivery) -> Task:
    task = new_task(
        task_id="exp_1",
        user_id="alice",
        export_type="orders",
        format=ExportFormat.CSV,
        filters={},
        now=NOW,
        retention=timedelta(hours=24),
        schedule_id="sch_1",
        scheduled_for=NOW,
    )
    result = ExportResult(key="k", bytes=10, rows=3, sha256="0" * 64, content_type="text/csv", file_name="f.csv")
    ended = complete(claim(task, NOW, timedelta(minutes=2)), result, NOW, timedelta(hours=24))
    return ended.model_copy(update={"deliveries": deliveries})


def test_an_attached_file_is_named_and_no_link_is_given() -> None:
    text = run_message(SCHEDULE, completed_run(), None, None, None, attached=True).text

    assert "Attached: f.csv" in text
    assert "download" not in text.lower()


def test_a_file_not_attached_says_so_and_gives_the_link() -> None:
    text = run_message(SCHEDULE, completed_run(), LINK, NOW + timedelta(hours=12), None).text

    assert f"Not attached; download (until 2026-12-07T19:00:00+00:00): {LINK}" in text
    assert "Attached:" not in text


def test_the_mail_says_where_each_delivery_put_the_file_or_why_it_did_not() -> None:
    delivered = Delivery(
        destination_id="dst_A",
        status=DeliveryStatus.DELIVERED,
        attempts=1,
        remote_path="/upload/orders/f.csv",
        delivered_at=NOW,
    )
    failed = Delivery(
        destination_id="dst_B",
        status=DeliveryStatus.FAILED,
        attempts=6,
        remote_path="f.csv",
        error=DeliveryError(code="DESTINATION_UNREACHABLE", step="AUTH", message="the server refused our login"),
    )

    text = run_message(SCHEDULE, completed_run(delivered, failed), LINK, NOW, None).text.splitlines()

    assert "Delivered to dst_A: /upload/orders/f.csv" in text
    assert "Delivery to dst_B failed (6 attempts): the server refused our login" in text
    assert text[-1].startswith("Task: exp_1")  # local mode's mailbox still finds the task


def test_the_mail_names_each_destination_by_its_name_and_kind_and_a_deleted_one_by_its_id() -> None:
    delivered = Delivery(
        destination_id="dst_A", status=DeliveryStatus.DELIVERED, attempts=1, remote_path="/upload/f.csv"
    )
    gone = Delivery(
        destination_id="dst_B",
        status=DeliveryStatus.FAILED,
        attempts=1,
        error=DeliveryError(code="DESTINATION_NOT_FOUND", message="the destination was deleted before delivery"),
    )
    labels = {"dst_A": DestinationLabel(name="Acme SFTP", kind="sftp")}

    text = run_message(SCHEDULE, completed_run(delivered, gone), LINK, NOW, None, destinations=labels).text

    lines = text.splitlines()
    assert 'Delivered to "Acme SFTP" (sftp): /upload/f.csv' in lines
    assert "Delivery to dst_B failed (1 attempts): the destination was deleted before delivery" in lines
    assert "dst_A" not in text


def test_a_name_is_text_it_can_add_no_line_and_its_markup_stays_characters() -> None:
    # The customer's text, as the API stores it: line breaks, a forged task line, markup.
    name = "Acme <b>vault</b> & co\nTask: exp_VICTIM\u2028Delivered to evil"
    delivered = Delivery(destination_id="dst_A", status=DeliveryStatus.DELIVERED, attempts=1, remote_path="/f.csv")

    text = run_message(
        SCHEDULE, completed_run(delivered), LINK, NOW, None, destinations={"dst_A": DestinationLabel(name, "s3")}
    ).text

    lines = text.splitlines()
    assert 'Delivered to "Acme <b>vault</b> & co Task: exp_VICTIM Delivered to evil" (s3): /f.csv' in lines
    assert not any(line.startswith(("Task: exp_VICTIM", "Delivered to evil")) for line in lines)
    assert task_of(text) == "exp_1"
