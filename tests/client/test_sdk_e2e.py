"""The SDK against the local stack over real HTTP: submit, wait, download, list, errors."""

import csv
import hashlib
import io
from pathlib import Path

import openpyxl
import pytest

from exports_client import (
    AuthenticationError,
    ConflictError,
    ExportsClient,
    InvalidRequestError,
    NetworkError,
    NotFoundError,
    TaskStatus,
    WaitTimeoutError,
)
from tests.client.e2e_support import SlowTasks
from tests.stack_process import Stack, free_port, recent

pytestmark = pytest.mark.e2e
WAIT_SEC = 60
HEADER = ["Order ID", "Order date", "Created at (UTC)"]


@pytest.mark.parametrize("fmt", ["csv", "xlsx"])
def test_submit_wait_download_gives_the_file_the_service_described(
    client: ExportsClient, tmp_path: Path, fmt: str
) -> None:
    # Given an export of the last three weeks
    accepted = client.submit("orders", {"date_from": recent(20), "date_to": recent(0)}, format=fmt)
    assert accepted.status is TaskStatus.PENDING

    # When the client waits for it and downloads it
    seen: list[TaskStatus] = []
    task = client.wait(accepted.task_id, timeout=WAIT_SEC, on_update=lambda t: seen.append(t.status))
    path = client.download(task.task_id, tmp_path)

    # Then the file is the one the service reported, whole and readable
    assert task.status is TaskStatus.COMPLETED
    assert seen[-1] is TaskStatus.COMPLETED
    assert path == tmp_path / f"orders_{recent(20)}_{recent(0)}.{fmt}"
    assert list(tmp_path.iterdir()) == [path]
    content = path.read_bytes()
    assert len(content) == task.size_bytes
    assert hashlib.sha256(content).hexdigest() == task.sha256
    if fmt == "csv":
        rows = list(csv.reader(io.StringIO(content.decode("utf-8"))))
    else:
        rows = [list(row) for row in openpyxl.load_workbook(path, read_only=True).active.iter_rows(values_only=True)]
    assert rows[0][:3] == HEADER
    assert task.rows is not None
    assert len(rows) - 1 == task.rows > 100


def test_listing_pages_through_your_tasks_newest_first(client: ExportsClient) -> None:
    # (distinct requests: an identical active export would be answered with the same task)
    ids = [client.submit("orders", {"date_from": recent(days), "date_to": recent(0)}).task_id for days in (1, 2, 3)]

    first_page = client.list(limit=2)
    every_task = [task.task_id for task in client.iter_tasks(page_size=2)]

    assert len(first_page.items) == 2
    assert first_page.next_token
    assert every_task[:3] == ids[::-1]
    assert len(every_task) == len(set(every_task))


def test_export_types_describe_their_formats_and_filters(client: ExportsClient) -> None:
    (orders,) = [export_type for export_type in client.export_types() if export_type.name == "orders"]
    assert {"csv", "xlsx"} <= {fmt.value for fmt in orders.formats}
    assert set(orders.filters_schema["required"]) == {"date_from", "date_to"}


def test_me_is_the_tokens_user(client: ExportsClient) -> None:
    caller = client.me()
    assert caller.user_id == "alice" and isinstance(caller.bound, dict)


def test_refusals_are_typed_errors_with_the_services_code(client: ExportsClient, stack: Stack) -> None:
    with pytest.raises(InvalidRequestError) as invalid:
        client.submit("orders", {"date_from": "2025-13-01", "date_to": recent(0)})
    assert (invalid.value.status, invalid.value.field) == (422, "filters.date_from")

    with pytest.raises(NotFoundError) as unknown:
        client.get("exp_01J00000000000000000000000")
    assert unknown.value.code == "TASK_NOT_FOUND"

    with ExportsClient(stack.url, "not-a-token") as stranger, pytest.raises(AuthenticationError) as refused:
        stranger.export_types()
    assert (refused.value.status, refused.value.code) == (401, "UNAUTHORIZED")


def test_another_users_task_does_not_exist_for_you(client: ExportsClient, stack: Stack) -> None:
    task_id = client.submit("orders", {"date_from": recent(1), "date_to": recent(0)}).task_id
    with ExportsClient(stack.url, stack.tokens["bob"]) as bob, pytest.raises(NotFoundError):
        bob.get(task_id)


def test_nothing_listening_is_a_network_error() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with ExportsClient(url, "t") as client, pytest.raises(NetworkError) as raised:
        client.export_types()
    assert raised.value.url == f"{url}/v1/export-types"


def test_a_task_that_has_not_ended_cannot_be_downloaded_and_waiting_for_it_times_out(
    client: ExportsClient, slow_tasks: SlowTasks, tmp_path: Path
) -> None:
    # Given an export that runs for seconds, just submitted
    task_id = slow_tasks.submit(1)

    # Then its file is not ready, and waiting half a second for it gives up with its state
    with pytest.raises(ConflictError) as not_ready:
        client.download(task_id, tmp_path)
    assert not_ready.value.code == "TASK_NOT_READY"
    assert list(tmp_path.iterdir()) == []

    with pytest.raises(WaitTimeoutError) as timed_out:
        client.wait(task_id, timeout=0.5)
    assert timed_out.value.task is not None
    assert timed_out.value.task.status in {TaskStatus.PENDING, TaskStatus.RUNNING}
