"""What the export request's schema states is what the model takes: a value the document allows
is never refused for a reason the document does not give."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from exports.accepting.requests import ExportRequest
from exports.core.config.limits import Limits


def _host_url(length: int) -> str:
    """An https URL of ``length`` characters with no path (normalizing it adds a "/")."""
    labels = ("b" * 63 + ".") * 40
    return ("https://" + labels)[: length - 4] + ".com"


def test_a_callback_url_at_the_stated_length_is_taken_though_normalizing_adds_a_slash() -> None:
    at_limit = _host_url(Limits.CALLBACK_URL_MAX_LENGTH)
    request = ExportRequest.model_validate({"export_type": "orders", "callback_url": at_limit})
    assert str(request.callback_url) == at_limit + "/"
    schema = ExportRequest.model_json_schema()["properties"]["callback_url"]["anyOf"][0]
    assert schema["maxLength"] == Limits.CALLBACK_URL_MAX_LENGTH


def test_a_callback_url_past_the_stated_length_is_refused_naming_it() -> None:
    with pytest.raises(ValidationError) as refused:
        ExportRequest.model_validate(
            {"export_type": "orders", "callback_url": _host_url(Limits.CALLBACK_URL_MAX_LENGTH + 1)}
        )
    assert refused.value.errors()[0]["loc"] == ("callback_url",)


def test_a_destination_named_twice_is_refused_and_the_schema_says_so() -> None:
    twice = ["dst_01JNCS6Z000000000000000001"] * 2
    with pytest.raises(ValidationError) as refused:
        ExportRequest.model_validate({"export_type": "orders", "destinations": twice})
    assert refused.value.errors()[0]["loc"] == ("destinations",)
    assert ExportRequest.model_json_schema()["properties"]["destinations"]["uniqueItems"] is True
