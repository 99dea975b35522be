"""Turning SDK failures into the service's errors, in one place.

:func:`translated` is the only place that reads a botocore error. What an adapter needs to tell
failures apart travels on the error it raises: the AWS code (:attr:`AwsError.aws_code`), the item
a lost condition found (:class:`ConditionNotMet`), a transaction's cancellation reasons by item
name (:class:`TransactionCancelled`). Adapters catch these, never a ``ClientError``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from exports.core.errors import ExportsError, RetryableError

# Error codes AWS services use for "slow down" or "try again".
TRANSIENT_CODES = frozenset(
    {
        "ThrottlingException",
        "Throttling",
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "TooManyRequestsException",
        "SlowDown",
        "InternalServerError",
        "InternalError",
        "ServiceUnavailable",
        "RequestTimeout",
        "TransactionConflictException",
    }
)
CONDITIONAL_CHECK_FAILED = "ConditionalCheckFailedException"
TRANSACTION_CANCELED = "TransactionCanceledException"
# S3's answers for a key that is not there (GetObject, HeadObject).
MISSING_CODES = frozenset({"NoSuchKey", "404", "NotFound"})
# A transaction's cancellation reasons: a lost condition, a conflict with another transaction.
_REASON_CONDITION_FAILED = "ConditionalCheckFailed"
_REASON_CONFLICT = "TransactionConflict"


class AwsError(ExportsError):
    """An AWS call failed for good; ``aws_code`` says how."""

    def __init__(self, message: str, aws_code: str) -> None:
        super().__init__(message, aws_code=aws_code)
        self.aws_code = aws_code


class ConditionNotMet(AwsError):
    """A conditional write's condition did not hold; ``item`` is the stored item (DynamoDB
    attribute values) when the request asked for it."""

    def __init__(self, message: str, item: Mapping[str, Any] | None) -> None:
        super().__init__(message, aws_code=CONDITIONAL_CHECK_FAILED)
        self.item = item


class ObjectMissing(AwsError):
    """The S3 object is not there."""


@dataclass(frozen=True)
class CancellationReason:
    """Why DynamoDB cancelled one item of a transaction (``code`` ``None``: it did not fail),
    and the stored item when the request asked for it."""

    code: str
    item: Mapping[str, Any]

    @property
    def condition_failed(self) -> bool:
        """Whether this item's condition did not hold."""
        return self.code == _REASON_CONDITION_FAILED


class TransactionCancelled(AwsError):
    """A condition stopped a transaction; ``reasons`` by the names its items were given."""

    def __init__(self, message: str, reasons: dict[str, CancellationReason]) -> None:
        super().__init__(message, aws_code=TRANSACTION_CANCELED)
        self.reasons = reasons

    def failed(self, name: str) -> bool:
        """Whether the condition of item ``name`` did not hold."""
        reason = self.reasons.get(name)
        return reason is not None and reason.condition_failed


def _code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


@contextmanager
def translated(operation: str, items: Sequence[str] = ()) -> Iterator[None]:
    """Run an SDK call, raising :class:`RetryableError` for transient faults (a transaction that
    met another in flight too), :class:`ConditionNotMet`, :class:`ObjectMissing`,
    :class:`TransactionCancelled` (its reasons named after ``items``, the names of the
    transaction's items in order) and :class:`AwsError` for the rest."""
    try:
        yield
    except ClientError as error:
        code = _code(error)
        if code in TRANSIENT_CODES:
            raise RetryableError(f"{operation}: {code}", aws_code=code) from error
        if code == CONDITIONAL_CHECK_FAILED:
            # The item is there when the request asked for it (ReturnValuesOnConditionCheckFailure).
            item = error.response.get("Item")
            raise ConditionNotMet(f"{operation}: {code}", item if isinstance(item, dict) else None) from error
        if code in MISSING_CODES:
            raise ObjectMissing(f"{operation}: {code}", aws_code=code) from error
        if code == TRANSACTION_CANCELED:
            reasons = [
                CancellationReason(str(reason.get("Code", "None")), reason.get("Item") or {})
                for reason in error.response.get("CancellationReasons", [])
            ]
            if any(reason.code == _REASON_CONFLICT for reason in reasons):
                raise RetryableError(f"{operation}: transaction conflict") from error
            raise TransactionCancelled(f"{operation}: {code}", dict(zip(items, reasons, strict=False))) from error
        raise AwsError(f"{operation}: {code}", aws_code=code) from error
    except BotoCoreError as error:
        # Connection and endpoint errors: the network or the service may come back.
        raise RetryableError(f"{operation}: {type(error).__name__}") from error
