"""Task records in DynamoDB: conditional writes only, listing through the user index."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any

from exports.core.aws.dynamodb_items import from_item, to_attribute, to_item
from exports.core.aws.errors import ConditionNotMet, TransactionCancelled, translated
from exports.core.aws.task_table import dedup_id, key, quota_id
from exports.core.config.limits import Admission
from exports.core.config.tables import TaskTable
from exports.core.errors import (
    ConditionFailed,
    DuplicateSubmission,
    InvalidRequest,
    Overloaded,
)
from exports.core.ids import is_task_id
from exports.core.ports import TaskPage
from exports.core.status import TaskStatus
from exports.core.task import Task

if TYPE_CHECKING:
    from types_boto3_dynamodb import DynamoDBClient
    from types_boto3_dynamodb.type_defs import TransactWriteItemTypeDef, UpdateTypeDef

# Named condition fragments, so each write says what it protects.
_NOT_EXISTS = "attribute_not_exists(#pk)"
_SAME_STATUS_AND_ATTEMPT = "#status = :expected_status AND #attempt = :expected_attempt"
# The items of the transactions, by name (their cancellation reasons are read by these).
_TASK, _QUOTA, _DEDUP = "task", "quota", "dedup"
# Every write of a task item bumps its write counter (the push channel's seq, docs/push.md).
_BUMP = "ADD #wseq :one"
_BUMP_NAMES = {"#wseq": TaskTable.WRITE_SEQ}
_BUMP_VALUES = {":one": {"N": "1"}}


def _record(task: Task) -> dict[str, Any]:
    values = task.model_dump(mode="json")
    values[TaskTable.TTL_ATTRIBUTE] = int(task.expires_at.timestamp())
    return values


class DynamoTaskRepository:
    """:class:`exports.core.ports.TaskRepository` on a DynamoDB table."""

    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self._client = client
        self._table = table_name

    def create(self, task: Task, max_active: int, replace_holder: str | None = None) -> None:
        """Store a new task and admit it, in one transaction: the user's active-task counter goes
        up (refused at ``max_active``) and, with a dedup key, the task becomes its holder.

        Raises :class:`Overloaded` (quota), :class:`DuplicateSubmission` (an identical task holds
        the key; pass its id as ``replace_holder`` once it is known to have ended) or
        :class:`ConditionFailed` (the id exists).
        """
        items: dict[str, TransactWriteItemTypeDef] = {
            _TASK: {
                "Put": {
                    "TableName": self._table,
                    "Item": to_item(_record(task) | {TaskTable.WRITE_SEQ: 1}),
                    "ConditionExpression": _NOT_EXISTS,
                    "ExpressionAttributeNames": {"#pk": TaskTable.PARTITION_KEY},
                }
            },
            _QUOTA: {
                "Update": {
                    "TableName": self._table,
                    "Key": key(quota_id(task.user_id)),
                    "UpdateExpression": "SET #active = if_not_exists(#active, :zero) + :one",
                    "ConditionExpression": "attribute_not_exists(#active) OR #active < :max",
                    "ExpressionAttributeNames": {"#active": "active"},
                    "ExpressionAttributeValues": {
                        ":zero": {"N": "0"},
                        ":one": {"N": "1"},
                        ":max": {"N": str(max_active)},
                    },
                }
            },
        }
        if task.dedup_key:
            # Free, or held by a task past its deadline; or (on a second try) still held by the
            # task we found had ended.
            condition = "attribute_not_exists(#pk) OR #until < :now"
            names = {"#pk": TaskTable.PARTITION_KEY, "#until": "active_until"}
            values: dict[str, Any] = {":now": {"N": str(int(task.created_at.timestamp()))}}
            if replace_holder:
                condition, names, values = "#holder = :stale", {"#holder": "holder"}, {":stale": {"S": replace_holder}}
            marker = {
                TaskTable.PARTITION_KEY: dedup_id(task.dedup_key),
                "holder": task.task_id,
                "active_until": int(task.deadline.timestamp()),
                TaskTable.TTL_ATTRIBUTE: int(task.expires_at.timestamp()),
            }
            items[_DEDUP] = {
                "Put": {
                    "TableName": self._table,
                    "Item": to_item(marker),
                    "ConditionExpression": condition,
                    "ExpressionAttributeNames": names,
                    "ExpressionAttributeValues": values,
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            }
        try:
            self._transact("create task", items)
            return
        except TransactionCancelled as cancelled:
            if cancelled.failed(_TASK):
                raise ConditionFailed(f"task {task.task_id} exists") from cancelled
            if cancelled.failed(_DEDUP):
                # An identical task is active: that answers the request, quota or not.
                holder = cancelled.reasons[_DEDUP].item.get("holder", {}).get("S", "")
                raise DuplicateSubmission(holder) from cancelled
        raise Overloaded(
            f"you already have {max_active} active exports; wait for one to finish",
            code="QUOTA_EXCEEDED",
            retry_after=Admission.RETRY_AFTER_QUOTA_SEC,
        )

    def dedup_holder(self, dedup_key: str) -> str | None:
        """The id of the task holding ``dedup_key`` (it may have ended since), or None."""
        with translated("read dedup key"):
            item = self._client.get_item(TableName=self._table, Key=key(dedup_id(dedup_key))).get("Item")
        return item["holder"]["S"] if item else None

    def release_dedup(self, task: Task) -> None:
        """Drop the task's dedup marker if the task still holds it (after it ended)."""
        if not task.dedup_key:
            return
        # Held by another task now (it took the key over): not ours to drop.
        with suppress(ConditionNotMet), translated("release dedup key"):
            self._client.delete_item(
                TableName=self._table,
                Key=key(dedup_id(task.dedup_key)),
                ConditionExpression="#holder = :me",
                ExpressionAttributeNames={"#holder": "holder"},
                ExpressionAttributeValues={":me": {"S": task.task_id}},
            )

    def active_count(self, user_id: str) -> int:
        """How many of the user's tasks hold a quota slot."""
        with translated("read quota"):
            item = self._client.get_item(TableName=self._table, Key=key(quota_id(user_id)), ConsistentRead=True)
        return int(item.get("Item", {}).get("active", {}).get("N", "0"))

    def get(self, task_id: str) -> Task | None:
        """The task, read strongly consistent so a worker sees the latest state."""
        with translated("get task"):
            response = self._client.get_item(
                TableName=self._table,
                Key=key(task_id),
                ConsistentRead=True,
            )
        item = response.get("Item")
        return Task.model_validate(from_item(item)) if item else None

    def merge(self, before: Task, after: Task) -> None:
        """Write an identical request merged into the task (its priority, its subscribers), if
        the task is still exactly as read: same status and attempt, same priority, same
        subscribers. Two merges at once cannot both append to the list they read; the loser gets
        :class:`ConditionFailed` and reads again."""
        self.update(before, after, unchanged=("priority", "subscribers"))

    def update_partitions(self, before: Task, after: Task) -> None:
        """Write a split export's progress if its per-partition counts are still as read."""
        self.update(before, after, unchanged=("partition_rows",))

    def record_progress(self, task: Task) -> None:
        """Write the task's rows written, percent and lease, if status and attempt are unchanged."""
        self._set(task, ("rows_written", "progress", "lease_expires_at"), "record progress")

    def record_callbacks(self, task: Task) -> None:
        """Write the subscribers' delivery states, if status and attempt are unchanged."""
        self._set(task, ("subscribers",), "record callbacks")

    def record_deliveries(self, before: Task, after: Task) -> None:
        """Write the deliveries of ``after`` that differ from ``before``'s (docs/destinations.md),
        each in its own place of the list and only if it is still stored as ``before`` has it
        (status, attempts, round of requested retries), the task's status and attempt unchanged.
        Rounds of attempts at different destinations of one task (the workflow's, a retry on
        request) then never overwrite each other's results, and of two writers of the same
        delivery (two retries requested at once) one wins: :class:`ConditionFailed`."""
        if len(before.deliveries) != len(after.deliveries):
            raise ValueError("a task's deliveries are fixed at submit")
        changed = [
            i for i, (old, new) in enumerate(zip(before.deliveries, after.deliveries, strict=True)) if old != new
        ]
        if not changed:
            return
        names = {
            "#status": "status",
            "#attempt": "attempt",
            "#d": "deliveries",
            "#ds": "status",
            "#da": "attempts",
            "#dr": "requested_retries",
        }
        values = _expected(before) | _BUMP_VALUES
        sets, conditions = [], [_SAME_STATUS_AND_ATTEMPT]
        for index in changed:
            was = before.deliveries[index]
            values[f":v{index}"] = to_attribute(after.deliveries[index].model_dump(mode="json"))
            values[f":s{index}"] = {"S": was.status.value}
            values[f":a{index}"] = {"N": str(was.attempts)}
            sets.append(f"#d[{index}] = :v{index}")
            stored = f"#d[{index}]"
            # A delivery stored before retries on request existed has no round: the first, 0.
            round_ = f"{stored}.#dr = :r{index}"
            if was.requested_retries == 0:
                round_ = f"(attribute_not_exists({stored}.#dr) OR {round_})"
            values[f":r{index}"] = {"N": str(was.requested_retries)}
            conditions.append(f"{stored}.#ds = :s{index} AND {stored}.#da = :a{index} AND {round_}")
        with _conditional_write("record deliveries", f"task {before.task_id}'s deliveries changed concurrently"):
            self._client.update_item(
                TableName=self._table,
                Key=key(before.task_id),
                UpdateExpression="SET " + ", ".join(sets) + " " + _BUMP,
                ConditionExpression=" AND ".join(conditions),
                ExpressionAttributeNames=names | _BUMP_NAMES,
                ExpressionAttributeValues=values,
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )

    def _set(self, task: Task, fields: tuple[str, ...], operation: str) -> None:
        record = _record(task)
        names = {"#status": "status", "#attempt": "attempt"} | {f"#f{i}": name for i, name in enumerate(fields)}
        values = {f":v{i}": to_attribute(record[name]) for i, name in enumerate(fields)} | _BUMP_VALUES
        with _conditional_write(operation, f"task {task.task_id} changed concurrently"):
            self._client.update_item(
                TableName=self._table,
                Key=key(task.task_id),
                UpdateExpression="SET " + ", ".join(f"#f{i} = :v{i}" for i in range(len(fields))) + " " + _BUMP,
                ConditionExpression=_SAME_STATUS_AND_ATTEMPT,
                ExpressionAttributeNames=names | _BUMP_NAMES,
                ExpressionAttributeValues=values | _expected(task),
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )

    def update(self, before: Task, after: Task, unchanged: tuple[str, ...] = ()) -> None:
        """Write the fields that changed, if status and attempt are still ``before``'s (and the
        fields named in ``unchanged`` too)."""
        old, new = _record(before), _record(after)
        changed = {name: value for name, value in new.items() if old.get(name) != value}
        if not changed:
            return
        names = {"#status": "status", "#attempt": "attempt"} | _BUMP_NAMES
        values = _expected(before) | _BUMP_VALUES
        condition = _SAME_STATUS_AND_ATTEMPT
        for index, name in enumerate(unchanged):
            names[f"#u{index}"] = name
            if old[name] is None:  # DynamoDB stores no NULLs: absent
                condition += f" AND attribute_not_exists(#u{index})"
                continue
            values[f":u{index}"] = to_attribute(old[name])
            condition += f" AND #u{index} = :u{index}"
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
                _BUMP,
            )
            if part
        )
        request: UpdateTypeDef = {
            "TableName": self._table,
            "Key": key(before.task_id),
            "UpdateExpression": expression,
            "ConditionExpression": condition,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        conflict = f"task {before.task_id} changed concurrently"
        if after.is_terminal and not before.is_terminal:
            # Ending a task frees its quota slot in the same transaction: exactly once per task.
            release: UpdateTypeDef = {
                "TableName": self._table,
                "Key": key(quota_id(before.user_id)),
                "UpdateExpression": "ADD #active :minus_one",
                "ExpressionAttributeNames": {"#active": "active"},
                "ExpressionAttributeValues": {":minus_one": {"N": "-1"}},
            }
            try:
                self._transact("end task", {_TASK: {"Update": request}, _QUOTA: {"Update": release}})
            except TransactionCancelled as cancelled:
                current = cancelled.reasons[_TASK].item if _TASK in cancelled.reasons else None
                raise ConditionFailed(conflict, current=from_item(current) if current else None) from cancelled
            return
        with _conditional_write("update task", conflict):
            self._client.update_item(**request)

    def _transact(self, operation: str, items: dict[str, TransactWriteItemTypeDef]) -> None:
        """Run a transaction of the named ``items``; :class:`TransactionCancelled` with their
        reasons by name if a condition stopped it, :class:`RetryableError` if it met another
        transaction in flight (try again)."""
        with translated(operation, items=tuple(items)):
            self._client.transact_write_items(TransactItems=list(items.values()))

    def set_lifecycle_token(self, task_id: str, token: str) -> Task:
        """Store the workflow's token; the task must exist. Returns the task as stored now."""
        with _conditional_write("store lifecycle token", f"task {task_id} does not exist"):
            response = self._client.update_item(
                TableName=self._table,
                Key=key(task_id),
                UpdateExpression=f"SET #token = :token {_BUMP}",
                ConditionExpression="attribute_exists(#pk)",
                ExpressionAttributeNames={"#token": "lifecycle_token", "#pk": TaskTable.PARTITION_KEY} | _BUMP_NAMES,
                ExpressionAttributeValues={":token": {"S": token}} | _BUMP_VALUES,
                ReturnValues="ALL_NEW",
            )
        return Task.model_validate(from_item(response["Attributes"]))

    def list_for_user(
        self, user_id: str, limit: int, status: TaskStatus | None, cursor: str | None, schedule_id: str | None = None
    ) -> TaskPage:
        """Newest first from the user index; a status (or schedule) filter keeps paging until
        ``limit``."""
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
            conditions = []
            if status is not None:
                conditions.append("#status = :status")
                request["ExpressionAttributeNames"]["#status"] = "status"
                request["ExpressionAttributeValues"][":status"] = {"S": status.value}
            if schedule_id is not None:
                conditions.append("#schedule = :schedule")
                request["ExpressionAttributeNames"]["#schedule"] = "schedule_id"
                request["ExpressionAttributeValues"][":schedule"] = {"S": schedule_id}
            if conditions:
                request["FilterExpression"] = " AND ".join(conditions)
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
    try:
        with translated(operation):
            yield
    except ConditionNotMet as lost:
        raise ConditionFailed(conflict, current=from_item(lost.item) if lost.item else None) from lost


def _expected(task: Task) -> dict[str, Any]:
    """The values of :data:`_SAME_STATUS_AND_ATTEMPT`: ``task``'s status and attempt."""
    return {":expected_status": {"S": task.status.value}, ":expected_attempt": {"N": str(task.attempt)}}


def _encode_cursor(start_key: dict[str, Any]) -> str:
    """The id of the page's last task: a position in the caller's newest-first list."""
    return str(start_key[TaskTable.PARTITION_KEY]["S"])


def _decode_cursor(cursor: str, user_id: str) -> dict[str, Any]:
    """The start key after the task id ``cursor`` in ``user_id``'s list. Any id of the right
    shape is a position (the list is the caller's own, so another user's id only says where to
    start); a malformed one is refused."""
    if not is_task_id(cursor):
        raise InvalidRequest("next_token is not a task id (exp_...) this API gave", field="next_token")
    return {TaskTable.PARTITION_KEY: {"S": cursor}, TaskTable.USER_INDEX_PARTITION_KEY: {"S": user_id}}
