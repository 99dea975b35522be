"""moto's DynamoDB answers about items, written as JSON directly.

moto writes every answer by walking the operation's output shape from botocore's model, looking
each member up by its aliases: a Query page of orders took longer to serialise than to run, and
the serialiser took a fifth to a third of the CPU of the in-process worker and fault-injection
tests (and slowed a local stack's DynamoDB exports about 2.5 times). An answer about items is
already the wire's JSON once moto has turned its attribute values into dicts, so the operations
below are dumped with moto's own encoder for DynamoDB (bytes in base64, times as epoch seconds);
every other operation, and every error, keeps moto's serialiser.
``tests/integration/test_moto_item_responses.py`` checks that botocore reads the same answers
either way.

Installed by the local stack and, for the whole session, by the test suite. Never on AWS.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from moto.dynamodb.models.utilities import DynamoJsonEncoder
from moto.dynamodb.responses import DynamoResult

from local_stack.moto_patch import MOTO, CountedPatch

ITEM_OPERATIONS = frozenset(
    {
        "GetItem",
        "BatchGetItem",
        "TransactGetItems",
        "Query",
        "Scan",
        "PutItem",
        "UpdateItem",
        "DeleteItem",
        "BatchWriteItem",
        "TransactWriteItems",
    }
)
CONTENT_TYPE = "application/x-amz-json-1.0"


def _dumped(original: Callable[..., Any]) -> Callable[..., Any]:
    """``DynamoResult.execute_result`` that dumps the answers of :data:`ITEM_OPERATIONS`."""

    def execute_result(result: DynamoResult, context: Any) -> Any:
        if context.operation_model.name not in ITEM_OPERATIONS:
            return original(result, context)
        return 200, {"Content-Type": CONTENT_TYPE}, json.dumps(result.result, cls=DynamoJsonEncoder)

    return execute_result


JSON_ITEMS = CountedPatch(DynamoResult, "execute_result", _dumped, verified_on=MOTO)
