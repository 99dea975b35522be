"""Cancel and retry through the SDK and exportctl, on exports that run for seconds (so they
have not ended when the test acts on them)."""

import json

import pytest

from exports_client import ConflictError, ExportsClient, NotFoundError, TaskStatus
from exports_client.output import ExitCode
from tests.client.e2e_support import Exportctl, SlowTasks

pytestmark = pytest.mark.e2e


def test_a_task_that_has_not_ended_is_cancelled_once(client: ExportsClient, slow_tasks: SlowTasks) -> None:
    task_id = slow_tasks.submit(10, priority=3)

    cancelled = client.cancel(task_id)

    assert cancelled.status is TaskStatus.CANCELLED
    assert client.get(task_id).status is TaskStatus.CANCELLED
    with pytest.raises(ConflictError) as again:
        client.cancel(task_id)
    assert again.value.code == "TASK_NOT_CANCELLABLE"


def test_retrying_a_cancelled_task_submits_a_new_one_with_the_same_parameters(
    client: ExportsClient, slow_tasks: SlowTasks
) -> None:
    # Given a cancelled task
    original_id = slow_tasks.submit(11, priority=3)
    client.cancel(original_id)

    # When it is retried
    accepted = client.retry(original_id)
    slow_tasks.track(accepted.task_id)

    # Then a new task has its parameters, and one that has not ended cannot be retried
    assert accepted.task_id != original_id
    assert not accepted.deduplicated
    assert accepted.status is TaskStatus.PENDING
    original, retried = client.get(original_id), client.get(accepted.task_id)
    assert retried.retry_of == original_id
    assert (retried.export_type, retried.format, retried.filters, retried.priority) == (
        original.export_type,
        original.format,
        original.filters,
        original.priority,
    )
    with pytest.raises(ConflictError) as not_ended:
        client.retry(accepted.task_id)
    assert not_ended.value.code == "TASK_NOT_RETRYABLE"


def test_unknown_tasks_cannot_be_cancelled_or_retried(client: ExportsClient) -> None:
    for call in (client.cancel, client.retry):
        with pytest.raises(NotFoundError) as raised:
            call("exp_01J00000000000000000000000")
        assert raised.value.code == "TASK_NOT_FOUND"


def test_exportctl_cancel_shows_the_cancelled_task_then_refuses_a_second_time(
    slow_tasks: SlowTasks, exportctl: Exportctl
) -> None:
    task_id = slow_tasks.submit(12)

    first = exportctl("cancel", task_id, "--json")
    second = exportctl("cancel", task_id)

    assert first.returncode == ExitCode.OK, first.stderr
    assert json.loads(first.stdout)["status"] == "CANCELLED"
    assert second.returncode == ExitCode.REJECTED
    assert "409 TASK_NOT_CANCELLABLE" in second.stderr
