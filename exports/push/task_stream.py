"""The tasks table's stream records as task changes, and a task read with its write counter."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from exports.core.aws.dynamodb_items import from_item
from exports.core.aws.errors import translated
from exports.core.aws.task_table import key
from exports.core.config.tables import TaskTable
from exports.core.task import Task
from exports.push.model import TaskChange


def _task_and_seq(image: Mapping[str, Any]) -> tuple[Task, int]:
    values = from_item(dict(image))
    return Task.model_validate(values), int(values.get(TaskTable.WRITE_SEQ, 0))


def task_change(record: Mapping[str, Any]) -> TaskChange | None:
    """The change a stream record (NEW_AND_OLD_IMAGES) shows; None for a record without a new
    image (a task deleted by its TTL)."""
    stream = record["dynamodb"]
    new = stream.get("NewImage")
    if not new:
        return None
    task, seq = _task_and_seq(new)
    old = stream.get("OldImage")
    at = stream.get("ApproximateCreationDateTime")
    written = datetime.fromtimestamp(float(at), UTC) if at is not None else datetime.now(UTC)
    return TaskChange(task=task, seq=seq, at=written, before=_task_and_seq(old)[0] if old else None)


class DynamoTaskVersions:
    """:class:`exports.push.ports.TaskVersions` on the tasks table."""

    def __init__(self, client: Any, table_name: str) -> None:
        self._client = client
        self._table = table_name

    def get(self, task_id: str) -> tuple[Task, int] | None:
        """The task as stored now and its write counter (read strongly consistent)."""
        with translated("get task"):
            item = self._client.get_item(TableName=self._table, Key=key(task_id), ConsistentRead=True).get("Item")
        return _task_and_seq(item) if item else None
