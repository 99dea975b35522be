"""Task records in DynamoDB: conditional writes only, listing through the user index."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from botocore.exceptions import ClientError

from exports.adapters.aws_errors import error_code, translated
from exports.adapters.dynamodb_items import from_item, to_attribute, to_item
from exports.config import TaskTable
from exports.domain.errors import ConditionFailed, InvalidRequest
from exports.domain.status import TaskStatus
from exports.domain.task import Task
from exports.ports import TaskPage

# Named condition fragments, so each write says what it protects.
_NOT_EXISTS = "attribute_not_exists(#pk)"
_SAME_STATUS_AND_ATTEMPT = "#status = :expected_status AND #attempt = :expected_attempt"
_CONDITIONAL_FAILED = "ConditionalCheckFailedException"


def _record(task: Task) -> dict[str, Any]:
    values = task.model_dump(mode="json")
    values[TaskTable.TTL_ATTRIBUTE] = int(task.expires_at.timestamp())
    return values


class DynamoTaskRepository:
    """:class:`exports.ports.TaskRepository` on a DynamoDB table."""

    def __init__(self, client: Any, table_name: str) -> None:
        self._client = client
        self._table = table_name

    def create(self, task: Task) -> None:
        """Store a new task; :class:`ConditionFailed` if the id is taken."""
        with _conditional_write("create task", f"task {task.task_id} exists"):
            self._client.put_item(
                TableName=self._table,
                Item=to_item(_record(task)),
                ConditionExpression=_NOT_EXISTS,
                ExpressionAttributeNames={"#pk": TaskTable.PARTITION_KEY},
            )

    def get(self, task_id: str) -> Task | None:
        """The task, read strongly consistent so a worker sees the latest state."""
        with translated("get task"):
            response = self._client.get_item(
                TableName=self._table,
                Key={TaskTable.PARTITION_KEY: {"S": task_id}},
                ConsistentRead=True,
            )
        item = response.get("Item")
        return Task.model_validate(from_item(item)) if item else None

    def update(self, before: Task, after: Task) -> None:
        """Write the fields that changed, if status and attempt are still ``before``'s."""
        old, new = _record(before), _record(after)
        changed = {name: value for name, value in new.items() if old.get(name) != value}
        if not changed:
            return
        names = {"#status": "status", "#attempt": "attempt"}
        values = {
            ":expected_status": {"S": before.status.value},
            ":expected_attempt": {"N": str(before.attempt)},
        }
        sets, removes = [], []
        for index, (name, value) in enumerate(sorted(changed.items())):
            names[f"#f{index}"] = name
            if value is None:
                removes.append(f"#f{index}")
            else:
                values[f":v{index}"] = to_attribute(value)
                sets.append(f"#f{index} = :v{index}")
        expression = " ".join(
            part
            for part in (
                f"SET {', '.join(sets)}" if sets else "",
                f"REMOVE {', '.join(removes)}" if removes else "",
            )
            if part
        )
        with _conditional_write("update task", f"task {before.task_id} changed concurrently"):
            self._client.update_item(
                TableName=self._table,
                Key={TaskTable.PARTITION_KEY: {"S": before.task_id}},
                UpdateExpression=expression,
                ConditionExpression=_SAME_STATUS_AND_ATTEMPT,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )

    def set_lifecycle_token(self, task_id: str, token: str) -> Task:
        """Store the workflow's token; the task must exist. Returns the task as stored now."""
        with _conditional_write("store lifecycle token", f"task {task_id} does not exist"):
            response = self._client.update_item(
                TableName=self._table,
                Key={TaskTable.PARTITION_KEY: {"S": task_id}},
                UpdateExpression="SET #token = :token",
                ConditionExpression="attribute_exists(#pk)",
                ExpressionAttributeNames={"#token": "lifecycle_token", "#pk": TaskTable.PARTITION_KEY},
                ExpressionAttributeValues={":token": {"S": token}},
                ReturnValues="ALL_NEW",
            )
        return Task.model_validate(from_item(response["Attributes"]))

    def list_for_user(self, user_id: str, limit: int, status: TaskStatus | None, cursor: str | None) -> TaskPage:
        """Newest first from the user index; a status filter keeps paging until ``limit``."""
        start_key = _decode_cursor(cursor, user_id) if cursor else None
        tasks: list[Task] = []
        while True:
            request: dict[str, Any] = {
                "TableName": self._table,
                "IndexName": TaskTable.USER_INDEX,
                "KeyConditionExpression": "#user = :user",
                "ExpressionAttributeNames": {"#user": TaskTable.USER_INDEX_PARTITION_KEY},
                "ExpressionAttributeValues": {":user": {"S": user_id}},
                "ScanIndexForward": False,
                "Limit": limit - len(tasks),
            }
            if status is not None:
                request["FilterExpression"] = "#status = :status"
                request["ExpressionAttributeNames"]["#status"] = "status"
                request["ExpressionAttributeValues"][":status"] = {"S": status.value}
            if start_key:
                request["ExclusiveStartKey"] = start_key
            with translated("list tasks"):
                response = self._client.query(**request)
            tasks.extend(Task.model_validate(from_item(item)) for item in response.get("Items", []))
            start_key = response.get("LastEvaluatedKey")
            if not start_key or len(tasks) >= limit:
                break
        return TaskPage(tasks=tasks, cursor=_encode_cursor(start_key) if start_key else None)


@contextmanager
def _conditional_write(operation: str, conflict: str) -> Iterator[None]:
    """Turn a lost condition into :class:`ConditionFailed` carrying the current item."""
    with translated(operation):
        try:
            yield
        except ClientError as error:
            if error_code(error) != _CONDITIONAL_FAILED:
                raise
            item = error.response.get("Item")
            raise ConditionFailed(conflict, current=from_item(item) if item else None) from error


def _encode_cursor(key: dict[str, Any]) -> str:
    plain = {name: value["S"] for name, value in key.items()}
    return base64.urlsafe_b64encode(json.dumps(plain, sort_keys=True).encode()).decode().rstrip("=")


def _decode_cursor(cursor: str, user_id: str) -> dict[str, Any]:
    """The start key in ``cursor``; refuses cursors that are malformed or another user's."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        plain = json.loads(base64.urlsafe_b64decode(padded.encode()))
        valid = (
            isinstance(plain, dict)
            and set(plain) == {TaskTable.PARTITION_KEY, TaskTable.USER_INDEX_PARTITION_KEY}
            and all(isinstance(value, str) for value in plain.values())
        )
    except (ValueError, binascii.Error, UnicodeDecodeError):
        valid = False
    if not valid or plain[TaskTable.USER_INDEX_PARTITION_KEY] != user_id:
        raise InvalidRequest("next_token is not valid", field="next_token")
    return {name: {"S": value} for name, value in plain.items()}
