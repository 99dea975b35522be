"""The OpenAPI document states every real answer: the one error shape, the headers, a bodiless 302."""

from typing import Any

import pytest

from tests.client.openapi_doc import served_openapi

ERROR_REF = "#/components/schemas/ErrorBody"


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return served_openapi()


def operations(document: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(f"{method.upper()} {path}", op) for path, item in document["paths"].items() for method, op in item.items()]


def test_no_operation_documents_a_shape_the_service_never_returns(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    assert not {"HTTPValidationError", "ValidationError", "ResponseValidationError"} & set(schemas)
    for name, operation in operations(document):
        for status, answer in operation["responses"].items():
            if int(status) >= 400:
                assert answer["content"]["application/json"]["schema"] == {"$ref": ERROR_REF}, (name, status)


@pytest.mark.parametrize(
    ("operation", "statuses"),
    [
        ("POST /v1/exports", {"202", "400", "401", "403", "409", "413", "415", "422", "429", "503"}),
        ("GET /v1/exports", {"200", "401", "422", "503"}),
        ("GET /v1/exports/{task_id}", {"200", "401", "404", "503"}),
        ("POST /v1/exports/{task_id}/cancel", {"200", "401", "404", "409", "503"}),
        ("POST /v1/exports/{task_id}/retry", {"202", "401", "403", "404", "409", "422", "429", "503"}),
        ("GET /v1/exports/{task_id}/download", {"302", "401", "404", "409", "503"}),
        ("GET /v1/export-types", {"200", "401", "503"}),
        ("GET /v1/export-types/{name}", {"200", "401", "404", "503"}),
    ],
)
def test_every_real_answer_is_documented(document: dict[str, Any], operation: str, statuses: set[str]) -> None:
    assert set(dict(operations(document))[operation]["responses"]) == statuses


def test_the_headers_are_documented_and_the_redirect_has_no_body(document: dict[str, Any]) -> None:
    ops = dict(operations(document))
    redirect = ops["GET /v1/exports/{task_id}/download"]["responses"]["302"]
    assert "content" not in redirect
    assert redirect["headers"]["Location"]["required"] is True
    for name in ("POST /v1/exports", "POST /v1/exports/{task_id}/retry"):
        accepted = ops[name]["responses"]["202"]["headers"]
        assert accepted["Location"]["required"] and accepted["Retry-After"]["schema"]["type"] == "integer"
    assert ops["GET /v1/exports/{task_id}"]["responses"]["200"]["headers"]["Retry-After"]["required"] is False
    for name, operation in ops.items():
        for status in ("429", "503"):
            if status in operation["responses"]:
                assert operation["responses"][status]["headers"]["Retry-After"]["required"], (name, status)
