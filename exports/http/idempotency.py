"""``Idempotency-Key`` on submit: the same key and body within 24 h replay the first answer.

Powertools' idempotency utility does the bookkeeping (a conditional put of an in-progress record,
the stored response, a hash of the body to refuse reuse with a different one); its records live
in the tasks table under ``idempotency#…`` keys, out of the user index, expiring by the table's
TTL. A request that fails stores nothing: Powertools deletes the record when the call raises.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyValidationError,
)

from exports.config import Admission, TaskTable
from exports.domain.errors import ConditionFailed, InvalidRequest

HEADER = "idempotency-key"
_VISIBLE_ASCII = re.compile(r"[\x21-\x7e]+")


def idempotency_key(headers: dict[str, str]) -> str | None:
    """The request's key, or None; :class:`InvalidRequest` if it is malformed."""
    key = headers.get(HEADER)
    if key is None:
        return None
    if not 1 <= len(key) <= Admission.IDEMPOTENCY_KEY_MAX_LENGTH or not _VISIBLE_ASCII.fullmatch(key):
        raise InvalidRequest(
            f"Idempotency-Key must be 1 to {Admission.IDEMPOTENCY_KEY_MAX_LENGTH} visible ASCII characters",
            field="Idempotency-Key",
        )
    return key


class IdempotencyKeyReused(InvalidRequest):
    """The key was used before with a different body."""

    def __init__(self) -> None:
        super().__init__(
            "this Idempotency-Key was already used with a different request body",
            field="Idempotency-Key",
            code="IDEMPOTENCY_KEY_REUSED",
        )


class IdempotentCalls:
    """Replays stored answers for repeated (user, key) pairs."""

    def __init__(self, client: Any, table_name: str) -> None:
        persistence = DynamoDBPersistenceLayer(
            table_name=table_name,
            key_attr=TaskTable.PARTITION_KEY,
            expiry_attr=TaskTable.TTL_ATTRIBUTE,
            boto3_client=client,
        )
        config = IdempotencyConfig(
            event_key_jmespath="[user_id, key]",
            payload_validation_jmespath="body",
            expires_after_seconds=Admission.IDEMPOTENCY_TTL_SEC,
            raise_on_no_idempotency_key=True,
        )

        @idempotent_function(
            data_keyword_argument="request", persistence_store=persistence, config=config, key_prefix="idempotency"
        )
        def run(request: dict[str, Any], call: Callable[[], dict[str, Any]]) -> dict[str, Any]:
            return call()

        self._run = run

    def replay_or_call(
        self, user_id: str, key: str, body: dict[str, Any], call: Callable[[], dict[str, Any]]
    ) -> tuple[dict[str, Any], bool]:
        """The stored answer for (user, key) with ``replayed=True``, or ``call()``'s, stored."""
        called = False

        def first_time() -> dict[str, Any]:
            nonlocal called
            called = True
            return call()

        try:
            answer = self._run(request={"user_id": user_id, "key": key, "body": body}, call=first_time)
        except IdempotencyValidationError:
            raise IdempotencyKeyReused() from None
        except IdempotencyAlreadyInProgressError:
            raise ConditionFailed("a request with this Idempotency-Key is still in progress; retry shortly") from None
        return answer, not called
