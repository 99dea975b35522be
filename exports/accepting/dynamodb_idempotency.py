"""Idempotency records of submits with an ``Idempotency-Key``, in the tasks table.

Powertools' idempotency utility does the bookkeeping (a conditional put of an in-progress record,
the stored response, a hash of the body to refuse reuse with a different one); its records live
in the tasks table under ``idempotency#…`` keys (:mod:`exports.core.aws.task_table`), out of the
user index, expiring by the table's TTL. A request that fails stores nothing: Powertools deletes
the record when the call raises.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyValidationError,
)

from exports.core.aws.task_table import IDEMPOTENCY_PREFIX
from exports.core.config.limits import Admission
from exports.core.config.tables import TaskTable
from exports.core.errors import ConditionFailed, InvalidRequest

if TYPE_CHECKING:
    from types_boto3_dynamodb import DynamoDBClient


class IdempotencyKeyReused(InvalidRequest):
    """The key was used before with a different body."""

    def __init__(self) -> None:
        super().__init__(
            "this Idempotency-Key was already used with a different request body",
            field="Idempotency-Key",
            code="IDEMPOTENCY_KEY_REUSED",
        )


class IdempotentCalls:
    """Replays stored answers for repeated (user, caller scope, key) triples."""

    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        persistence = DynamoDBPersistenceLayer(
            table_name=table_name,
            key_attr=TaskTable.PARTITION_KEY,
            expiry_attr=TaskTable.TTL_ATTRIBUTE,
            boto3_client=client,
        )
        config = IdempotencyConfig(
            event_key_jmespath="[user_id, scope, key]",
            payload_validation_jmespath="body",
            expires_after_seconds=Admission.IDEMPOTENCY_TTL_SEC,
            raise_on_no_idempotency_key=True,
        )

        def run(request: dict[str, Any], call: Callable[[], dict[str, Any]]) -> dict[str, Any]:
            return call()

        # Powertools' decorator is untyped: applied by call, with the signature it keeps.
        self._run: Callable[..., dict[str, Any]] = idempotent_function(
            data_keyword_argument="request", persistence_store=persistence, config=config, key_prefix=IDEMPOTENCY_PREFIX
        )(run)

    def replay_or_call(
        self, user_id: str, key: str, body: dict[str, Any], call: Callable[[], dict[str, Any]], scope: str = ""
    ) -> tuple[dict[str, Any], bool]:
        """The stored answer for (user, scope, key) with ``replayed=True``, or ``call()``'s,
        stored. ``scope``: the caller's bound claims (a key reused under another tenant claim is
        another request)."""
        called = False

        def first_time() -> dict[str, Any]:
            nonlocal called
            called = True
            return call()

        try:
            answer = self._run(request={"user_id": user_id, "scope": scope, "key": key, "body": body}, call=first_time)
        except IdempotencyValidationError:
            raise IdempotencyKeyReused() from None
        except IdempotencyAlreadyInProgressError:
            raise ConditionFailed("a request with this Idempotency-Key is still in progress; retry shortly") from None
        return answer, not called
