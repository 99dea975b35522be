"""Cancel and retry, through the SDK and exportctl, on a stack whose tasks wait for a worker."""

import json

import pytest
from exports_client import ConflictError, ExportsClient, NotFoundError, TaskStatus
from exports_client.cli import ExitCode

from tests.client.cli_process import Exportctl
from tests.stack_process import recent

pytestmark = pytest.mark.e2e


def pending_task(client: ExportsClient) -> str:
    return client.submit("orders", {"date_from": recent(2), "date_to": recent(0)}, priority=3).task_id


def test_a_pending_task_is_cancelled_once(idle_client: ExportsClient) -> None:
    task_id = pending_task(idle_client)

    cancelled = idle_client.cancel(task_id)

    assert cancelled.status is TaskStatus.CANCELLED
    assert idle_client.get(task_id).status is TaskStatus.CANCELLED
    with pytest.raises(ConflictError) as again:
        idle_client.cancel(task_id)
    assert again.value.code == "TASK_NOT_CANCELLABLE"


def test_retrying_a_cancelled_task_submits_a_new_one_with_the_same_parameters(idle_client: ExportsClient) -> None:
    # Given a cancelled task
    original_id = pending_task(idle_client)
    idle_client.cancel(original_id)

    # When it is retried
    accepted = idle_client.retry(original_id)

    # Then a new PENDING task has its parameters, and one that has not ended cannot be retried
    assert accepted.task_id != original_id
    assert accepted.status is TaskStatus.PENDING
    original, retried = idle_client.get(original_id), idle_client.get(accepted.task_id)
    assert retried.retry_of == original_id
    assert (retried.export_type, retried.format, retried.filters, retried.priority) == (
        original.export_type,
        original.format,
        original.filters,
        original.priority,
    )
    with pytest.raises(ConflictError) as not_ended:
        idle_client.retry(accepted.task_id)
    assert not_ended.value.code == "TASK_NOT_RETRYABLE"


def test_unknown_tasks_cannot_be_cancelled_or_retried(idle_client: ExportsClient) -> None:
    for call in (idle_client.cancel, idle_client.retry):
        with pytest.raises(NotFoundError) as raised:
            call("exp_01J00000000000000000000000")
        assert raised.value.code == "TASK_NOT_FOUND"


def test_exportctl_cancel_shows_the_cancelled_task_then_refuses_a_second_time(
    idle_client: ExportsClient, idle_exportctl: Exportctl
) -> None:
    task_id = pending_task(idle_client)

    first = idle_exportctl("cancel", task_id, "--json")
    second = idle_exportctl("cancel", task_id)

    assert first.returncode == ExitCode.OK, first.stderr
    assert json.loads(first.stdout)["status"] == "CANCELLED"
    assert second.returncode == ExitCode.REJECTED
    assert "409 TASK_NOT_CANCELLABLE" in second.stderr
