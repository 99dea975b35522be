"""The schedules table (``SchedulesTable``): one item per schedule, one per firing, one counter
per user, all under string keys ``pk``/``sk``:

- a **schedule** under ``pk = schedule_id``, ``sk = "schedule"``: the only kind with a
  ``user_id``, so the only kind in the ``by_user`` index;
- a **firing** record under ``pk = schedule_id``, ``sk = "firing#<scheduled time>"``: the
  firing's idempotency (exactly one invocation creates its task), expiring by the TTL;
- a user's **count** of schedules under ``pk = "user#<user_id>"``, ``sk = "count"``: the cap,
  kept in the same transaction as the schedule's creation and deletion.

Every write is conditional: a schedule on the version it was read at, a firing on not being
claimed (or on its claim having lapsed), the count on staying under the cap.
"""

from __future__ import annotations

import re
import secrets
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from exports.adapters.aws_errors import ConditionNotMet, TransactionCancelled, translated
from exports.adapters.dynamodb_items import from_item, to_item
from exports.config.tables import SchedulesTable
from exports.domain.errors import ConditionFailed, InvalidRequest
from exports.schedules.model import SCHEDULE_ID_PATTERN, Schedule
from exports.schedules.ports import FiringClaim, ScheduleLimitReached, SchedulePage

if TYPE_CHECKING:
    from types_boto3_dynamodb import DynamoDBClient

SCHEDULE_SORT_KEY = "schedule"
COUNT_SORT_KEY = "count"
FIRING_PREFIX = "firing#"
# A claim not finished within this long is taken to be of an invocation that died: a retried
# delivery may claim the firing again (the schedule function's timeout is far shorter).
FIRING_LEASE = timedelta(minutes=5)
# Firing records outlive Scheduler's retries (at most an hour) by far.
FIRING_TTL = timedelta(days=7)
_PK, _SK = SchedulesTable.PARTITION_KEY, SchedulesTable.SORT_KEY


def firing_sort_key(scheduled_for: datetime) -> str:
    """``firing#2026-12-07T07:00:00Z``: the firing's key, the same for every delivery."""
    return FIRING_PREFIX + scheduled_for.strftime("%Y-%m-%dT%H:%M:%SZ")


def _key(pk: str, sk: str) -> dict[str, Any]:
    return {_PK: {"S": pk}, _SK: {"S": sk}}


def _count_key(user_id: str) -> dict[str, Any]:
    return _key(f"user#{user_id}", COUNT_SORT_KEY)


def schedule_item(schedule: Schedule) -> dict[str, Any]:
    """The item of ``schedule``."""
    values = schedule.model_dump(mode="json")
    return to_item({**values, _PK: schedule.schedule_id, _SK: SCHEDULE_SORT_KEY})


def schedule_of(item: dict[str, Any]) -> Schedule:
    """The schedule stored in ``item``."""
    values = from_item(item)
    values.pop(_PK, None)
    values.pop(_SK, None)
    return Schedule.model_validate(values)


class DynamoScheduleStore:
    """:class:`exports.schedules.ports.ScheduleStore` on the schedules table."""

    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self._client = client
        self._table = table_name

    def create(self, schedule: Schedule, max_per_user: int) -> None:
        """The schedule and its user's count + 1, in one transaction: refused when the count is
        at ``max_per_user`` (:class:`ScheduleLimitReached`) or the id exists (:class:`ConditionFailed`)."""
        try:
            with translated("create schedule", items=("schedule", "count")):
                self._client.transact_write_items(
                    TransactItems=[
                        {
                            "Put": {
                                "TableName": self._table,
                                "Item": schedule_item(schedule),
                                "ConditionExpression": "attribute_not_exists(#pk)",
                                "ExpressionAttributeNames": {"#pk": _PK},
                            }
                        },
                        {
                            "Update": {
                                "TableName": self._table,
                                "Key": _count_key(schedule.user_id),
                                "UpdateExpression": "ADD #count :one",
                                "ConditionExpression": "attribute_not_exists(#count) OR #count < :cap",
                                "ExpressionAttributeNames": {"#count": "schedules"},
                                "ExpressionAttributeValues": {":one": {"N": "1"}, ":cap": {"N": str(max_per_user)}},
                            }
                        },
                    ]
                )
        except TransactionCancelled as cancelled:
            if cancelled.failed("count"):
                raise ScheduleLimitReached(max_per_user) from None
            raise ConditionFailed(f"schedule {schedule.schedule_id} exists") from None

    def get(self, schedule_id: str) -> Schedule | None:
        """The schedule (a strongly consistent read), or None."""
        with translated("get schedule"):
            response = self._client.get_item(
                TableName=self._table, Key=_key(schedule_id, SCHEDULE_SORT_KEY), ConsistentRead=True
            )
        item = response.get("Item")
        return schedule_of(item) if item else None

    def list_for_user(self, user_id: str, limit: int, cursor: str | None) -> SchedulePage:
        """Newest first from the ``by_user`` index."""
        request: dict[str, Any] = {
            "TableName": self._table,
            "IndexName": SchedulesTable.USER_INDEX,
            "KeyConditionExpression": "#user = :user",
            "ExpressionAttributeNames": {"#user": SchedulesTable.USER_INDEX_PARTITION_KEY},
            "ExpressionAttributeValues": {":user": {"S": user_id}},
            "ScanIndexForward": False,
            "Limit": limit,
        }
        if cursor:
            request["ExclusiveStartKey"] = _decode_cursor(cursor, user_id)
        with translated("list schedules"):
            response = self._client.query(**request)
        start_key = response.get("LastEvaluatedKey")
        schedules = [schedule_of(item) for item in response.get("Items", [])]
        return SchedulePage(schedules, _encode_cursor(start_key) if start_key else None)

    def replace(self, before: Schedule, after: Schedule) -> Schedule:
        """Write ``after`` at ``before.version + 1`` if the stored version is still ``before``'s."""
        written = after.model_copy(update={"version": before.version + 1})
        try:
            with translated("update schedule"):
                self._client.put_item(
                    TableName=self._table,
                    Item=schedule_item(written),
                    ConditionExpression="#version = :version",
                    ExpressionAttributeNames={"#version": "version"},
                    ExpressionAttributeValues={":version": {"N": str(before.version)}},
                )
        except ConditionNotMet:
            raise ConditionFailed(f"schedule {before.schedule_id} changed meanwhile") from None
        return written

    def delete(self, schedule: Schedule) -> None:
        """The schedule and its user's count - 1, in one transaction (a schedule already gone
        changes nothing)."""
        try:
            with translated("delete schedule", items=("schedule", "count")):
                self._client.transact_write_items(
                    TransactItems=[
                        {
                            "Delete": {
                                "TableName": self._table,
                                "Key": _key(schedule.schedule_id, SCHEDULE_SORT_KEY),
                                "ConditionExpression": "attribute_exists(#pk)",
                                "ExpressionAttributeNames": {"#pk": _PK},
                            }
                        },
                        {
                            "Update": {
                                "TableName": self._table,
                                "Key": _count_key(schedule.user_id),
                                "UpdateExpression": "ADD #count :minus_one",
                                "ConditionExpression": "#count > :zero",
                                "ExpressionAttributeNames": {"#count": "schedules"},
                                "ExpressionAttributeValues": {":minus_one": {"N": "-1"}, ":zero": {"N": "0"}},
                            }
                        },
                    ]
                )
        except TransactionCancelled:
            return  # deleted meanwhile

    def claim_firing(self, schedule_id: str, scheduled_for: datetime, now: datetime) -> FiringClaim:
        """A conditional put of the firing record: it must not exist, or hold a claim that was
        released or whose lease ran out. Exactly one of concurrent callers wins."""
        token = secrets.token_hex(8)
        item = to_item(
            {
                _PK: schedule_id,
                _SK: firing_sort_key(scheduled_for),
                "state": "claimed",
                "token": token,
                "lease_until_epoch": int((now + FIRING_LEASE).timestamp()),
                SchedulesTable.TTL_ATTRIBUTE: int((now + FIRING_TTL).timestamp()),
            }
        )
        try:
            with translated("claim firing"):
                self._client.put_item(
                    TableName=self._table,
                    Item=item,
                    ConditionExpression="attribute_not_exists(#pk) OR (#state = :claimed AND #lease < :now)"
                    " OR #state = :released",
                    ExpressionAttributeNames={"#pk": _PK, "#state": "state", "#lease": "lease_until_epoch"},
                    ExpressionAttributeValues={
                        ":claimed": {"S": "claimed"},
                        ":released": {"S": "released"},
                        ":now": {"N": str(int(now.timestamp()))},
                    },
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
        except ConditionNotMet as lost:
            held = from_item(lost.item) if lost.item else {}
            return FiringClaim(won=False, token=str(held.get("token", "")), task_id=held.get("task_id"))
        return FiringClaim(won=True, token=token)

    def finish_firing(self, schedule_id: str, scheduled_for: datetime, token: str, task_id: str | None) -> None:
        """The claim becomes ``done`` with the task made (only by the claim's holder)."""
        values: dict[str, Any] = {":token": {"S": token}, ":done": {"S": "done"}}
        update = "SET #state = :done"
        if task_id is not None:
            update += ", task_id = :task"
            values[":task"] = {"S": task_id}
        try:
            with translated("finish firing"):
                self._client.update_item(
                    TableName=self._table,
                    Key=_key(schedule_id, firing_sort_key(scheduled_for)),
                    UpdateExpression=update,
                    ConditionExpression="#token = :token",
                    ExpressionAttributeNames={"#state": "state", "#token": "token"},
                    ExpressionAttributeValues=values,
                )
        except ConditionNotMet:
            raise ConditionFailed("the firing's claim was taken over") from None

    def release_firing(self, schedule_id: str, scheduled_for: datetime, token: str) -> None:
        """The claim becomes ``released`` (only by its holder): a retry may claim it again."""
        try:
            with translated("release firing"):
                self._client.update_item(
                    TableName=self._table,
                    Key=_key(schedule_id, firing_sort_key(scheduled_for)),
                    UpdateExpression="SET #state = :released",
                    ConditionExpression="#token = :token AND #state = :claimed",
                    ExpressionAttributeNames={"#state": "state", "#token": "token"},
                    ExpressionAttributeValues={
                        ":token": {"S": token},
                        ":released": {"S": "released"},
                        ":claimed": {"S": "claimed"},
                    },
                )
        except ConditionNotMet:
            return  # taken over meanwhile: the new holder decides

    def all_schedules(self) -> list[Schedule]:
        """Every schedule, by a scan: local mode's firing loop only (AWS has Scheduler)."""
        schedules: list[Schedule] = []
        request: dict[str, Any] = {
            "TableName": self._table,
            "FilterExpression": "#sk = :schedule",
            "ExpressionAttributeNames": {"#sk": _SK},
            "ExpressionAttributeValues": {":schedule": {"S": SCHEDULE_SORT_KEY}},
        }
        while True:
            with translated("scan schedules"):
                response = self._client.scan(**request)
            schedules.extend(schedule_of(item) for item in response.get("Items", []))
            start_key = response.get("LastEvaluatedKey")
            if not start_key:
                return schedules
            request["ExclusiveStartKey"] = start_key


def _encode_cursor(start_key: dict[str, Any]) -> str:
    """The id of the page's last schedule: a position in the caller's newest-first list."""
    return str(start_key[SchedulesTable.USER_INDEX_SORT_KEY]["S"])


def _decode_cursor(cursor: str, user_id: str) -> dict[str, Any]:
    """The start key after the schedule id ``cursor`` in ``user_id``'s list. Any id of the
    right shape is a position (the list is the caller's own, so an id of another user's, or of
    a deleted schedule, only says where to start); a malformed one is refused."""
    if not re.fullmatch(SCHEDULE_ID_PATTERN, cursor):
        raise InvalidRequest("next_token is not a schedule id (sch_...) this API gave", field="next_token")
    return {
        _PK: {"S": cursor},
        _SK: {"S": SCHEDULE_SORT_KEY},
        SchedulesTable.USER_INDEX_PARTITION_KEY: {"S": user_id},
        SchedulesTable.USER_INDEX_SORT_KEY: {"S": cursor},
    }
