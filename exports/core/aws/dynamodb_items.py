"""Converting between Python values and DynamoDB attribute values."""

from __future__ import annotations

import json
from collections.abc import Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

if TYPE_CHECKING:
    from types_boto3_dynamodb.type_defs import AttributeValueTypeDef

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


def to_attribute(value: Any) -> AttributeValueTypeDef:
    """One DynamoDB attribute value. Floats become Decimals (DynamoDB has no binary floats)."""
    if isinstance(value, float):
        value = Decimal(str(value))
    elif isinstance(value, dict | list):
        value = json.loads(json.dumps(value), parse_float=Decimal)
    return _serializer.serialize(value)


def to_item(values: Mapping[str, Any]) -> dict[str, AttributeValueTypeDef]:
    """A DynamoDB item from plain values, leaving out None (DynamoDB stores absence)."""
    return {name: to_attribute(value) for name, value in values.items() if value is not None}


def from_item(item: Mapping[str, Any], exact: bool = False) -> dict[str, Any]:
    """Plain values from a DynamoDB item. Numbers become ints and floats, or with ``exact``
    stay Decimals (money must not pass through binary floats)."""
    values = {name: _deserializer.deserialize(value) for name, value in item.items()}
    return values if exact else {name: _plain(value) for name, value in values.items()}


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {key: _plain(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [_plain(inner) for inner in value]
    return value
