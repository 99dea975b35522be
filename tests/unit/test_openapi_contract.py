"""The OpenAPI document states every real answer (the one error shape, the headers, a bodiless
302, each 409's codes), describes every operation, and describes the body of each export type open
to every caller with an example that passes its schema (tests/e2e/test_openapi_served.py submits
them to `make run`'s stack)."""

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema_rs import Draft202012, Draft202012Validator, Registry
from openapi_spec_validator import validate

from exports.core.task import ExportFormat
from tests.client.openapi_doc import served_openapi

ERROR_REF = "#/components/schemas/ErrorBody"
REF = "#/components/schemas/"
DOCUMENT_URI = "urn:exports:openapi"


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
        ("POST /v1/exports", {"202", "400", "401", "403", "404", "409", "413", "415", "422", "429", "503"}),
        ("GET /v1/exports", {"200", "401", "422", "503"}),
        ("GET /v1/exports/{task_id}", {"200", "401", "404", "503"}),
        ("POST /v1/exports/{task_id}/cancel", {"200", "401", "404", "409", "503"}),
        ("POST /v1/exports/{task_id}/retry", {"202", "401", "403", "404", "409", "422", "429", "503"}),
        ("GET /v1/exports/{task_id}/download", {"302", "401", "404", "409", "503"}),
        ("GET /v1/export-types", {"200", "401", "503"}),
        ("GET /v1/export-types/{name}", {"200", "401", "404", "503"}),
        ("GET /v1/me", {"200", "401", "503"}),
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


def test_the_description_names_every_format_the_service_writes(document: dict[str, Any]) -> None:
    described = document["info"]["description"]
    assert [fmt.value for fmt in ExportFormat if fmt.value not in re.findall(r"[a-z.]+", described)] == []
    assert "CSV/XLSX" not in described


def test_every_operation_has_a_summary_and_a_description(document: dict[str, Any]) -> None:
    for name, operation in operations(document):
        assert operation.get("summary") and operation.get("description"), name


@pytest.mark.parametrize(
    ("operation", "codes"),
    [
        ("POST /v1/exports", {"CONFLICT", "HOST_KEY_UNCONFIRMED"}),
        ("POST /v1/exports/{task_id}/cancel", {"TASK_NOT_CANCELLABLE", "CONFLICT"}),
        ("POST /v1/exports/{task_id}/retry", {"TASK_NOT_RETRYABLE"}),
        ("GET /v1/exports/{task_id}/download", {"TASK_NOT_READY"}),
    ],
)
def test_each_409_names_the_codes_its_operation_answers(
    document: dict[str, Any], operation: str, codes: set[str]
) -> None:
    description = dict(operations(document))[operation]["responses"]["409"]["description"]
    assert set(re.findall(r"\b([A-Z][A-Z_]+): ", description)) == codes


def test_the_document_is_valid_openapi_3_1(document: dict[str, Any]) -> None:
    validate(document)


def test_the_submit_body_is_one_schema_per_type_open_to_every_caller(document: dict[str, Any]) -> None:
    # Given exports.toml's types: orders_all_tenants is for the admin group only.
    schemas = document["components"]["schemas"]
    media = document["paths"]["/v1/exports"]["post"]["requestBody"]["content"]["application/json"]
    mapping = media["schema"]["discriminator"]["mapping"]

    assert list(mapping) == [
        "orders",
        "customers",
        "sales_report",
        "generated_orders",
        "order_changes",
        "orders_dynamodb",
        "customers_api",
    ]
    assert media["schema"]["oneOf"] == [{"$ref": ref} for ref in mapping.values()]
    assert not [name for name in schemas if "orders_all_tenants" in name]
    shared = schemas["ExportRequest"]
    for name, ref in mapping.items():
        request = schemas[ref.removeprefix(REF)]
        assert request["properties"]["export_type"]["const"] == name
        assert set(request["properties"]) == set(shared["properties"])
        assert request["properties"]["filters"]["$ref"] == f"{REF}Filters.{name}"
        # Every demo type has required filters but customers_api, whose one filter (country) is optional.
        optional_filters = name == "customers_api"
        assert request["required"] == (["export_type"] if optional_filters else ["export_type", "filters"])
    assert schemas["Filters.orders"]["required"] == ["date_from", "date_to"]
    assert schemas["Filters.sales_report"]["properties"]["currency"]["pattern"] == "^(?:[A-Z]{3})$"


def test_every_example_is_valid_for_its_schema_and_every_type_has_one(document: dict[str, Any]) -> None:
    bodies = {"/v1/exports": "ExportRequest", "/v1/schedules": "ScheduleRequest"}
    media = {path: document["paths"][path]["post"]["requestBody"]["content"]["application/json"] for path in bodies}
    examples = list(examples_in(document))

    for body in media.values():
        assert set(body["examples"]) == set(body["schema"]["discriminator"]["mapping"])
    assert len(examples) == sum(len(body["examples"]) for body in media.values())
    for where, schema_path, value in examples:
        errors = list(validator(document, schema_path).iter_errors(value))
        assert not errors, (where, [error.message for error in errors])
        for path, shared in bodies.items():
            if where.startswith(f"POST {path} "):  # and it is its own type's: the name is the type's
                assert where.endswith(f" {value['export_type']}")
                branch = validator(document, f"/components/schemas/{shared}.{value['export_type']}")
                assert not list(branch.iter_errors(value)), where


def test_a_plugin_types_definitions_move_into_the_components(tmp_path: Path) -> None:
    # Given the example plugin orders type, whose filters schema has $defs (OrderStatus).
    declaration = tmp_path / "exports.toml"
    declaration.write_text(
        '[sources.demo_tables]\nkind = "dynamodb"\n\n[types.orders]\ndescription = "Orders."\n'
        'source = "demo_tables"\nplugin = "examples.demo_plugins.factories:orders"\n'
    )
    plugin_document = served_openapi(declaration)

    text = json.dumps(plugin_document)
    assert "#/$defs/" not in text and "$defs" not in text
    status = plugin_document["components"]["schemas"]["Filters.orders"]["properties"]["status"]
    assert {"$ref": f"{REF}Filters.orders.OrderStatus"} in status["anyOf"]
    validate(plugin_document)
    for where, schema_path, value in examples_in(plugin_document):
        assert not list(validator(plugin_document, schema_path).iter_errors(value)), where


def test_a_type_without_csv_requires_a_format_and_one_without_a_made_up_value_has_no_example(tmp_path: Path) -> None:
    declaration = tmp_path / "exports.toml"
    declaration.write_text(
        """
[sources.tables]
kind = "dynamodb"

[types.codes]
description = "Codes."
source = "tables"
formats = ["xlsx"]
allow = { groups = ["ops"] }
dynamodb = { table = "codes", partition_key = { name = "pk", value = "{code}" } }
columns = [{ name = "code" }]

[types.codes.parameters.code]
type = "string"
pattern = "[A-Z]{3}"

[types.labels]
description = "Labels."
source = "tables"
formats = ["xlsx", "csv.gz"]
dynamodb = { table = "labels", partition_key = { name = "pk", value = "{label}" } }
columns = [{ name = "label" }]

[types.labels.parameters.label]
type = "string"
pattern = "[a-z]+"
""",
        encoding="utf-8",
    )
    custom = served_openapi(declaration)

    schemas = custom["components"]["schemas"]
    media = custom["paths"]["/v1/exports"]["post"]["requestBody"]["content"]["application/json"]
    assert list(media["schema"]["discriminator"]["mapping"]) == ["labels"]  # codes has an access rule
    labels = schemas["ExportRequest.labels"]
    assert labels["required"] == ["export_type", "format", "filters"]
    assert labels["properties"]["format"]["enum"] == ["xlsx", "csv.gz"]
    assert "default" not in labels["properties"]["format"]
    assert "examples" not in media
    validate(custom)


def test_without_a_type_open_to_everyone_the_body_is_the_shared_request(tmp_path: Path) -> None:
    declaration = tmp_path / "exports.toml"
    declaration.write_text(
        """
[sources.tables]
kind = "dynamodb"

[types.codes]
description = "Codes."
source = "tables"
allow = { groups = ["ops"] }
dynamodb = { table = "codes", partition_key = { name = "pk", value = "ALL" } }
columns = [{ name = "code" }]
""",
        encoding="utf-8",
    )
    custom = served_openapi(declaration)

    body = custom["paths"]["/v1/exports"]["post"]["requestBody"]["content"]["application/json"]
    assert body["schema"] == {"$ref": f"{REF}ExportRequest"}
    assert not [name for name in custom["components"]["schemas"] if name.startswith("Filters.")]


def examples_in(document: dict[str, Any]) -> Iterator[tuple[str, str, Any]]:
    """Every example in the document's operations: where, the JSON pointer of its schema, its value."""
    for path, item in document["paths"].items():
        for method, operation in item.items():
            where = f"{method.upper()} {path}"
            pointer = f"/paths/{escape(path)}/{method}"
            for index, parameter in enumerate(operation.get("parameters", [])):
                for value in parameter_examples(parameter):
                    yield f"{where} {parameter['name']}", f"{pointer}/parameters/{index}/schema", value
            for media_type, media in operation.get("requestBody", {}).get("content", {}).items():
                for name, value in media_examples(media):
                    yield f"{where} {name}", f"{pointer}/requestBody/content/{escape(media_type)}/schema", value


def parameter_examples(parameter: dict[str, Any]) -> list[Any]:
    return media_values(parameter) + list(parameter.get("schema", {}).get("examples", []))


def media_examples(media: dict[str, Any]) -> list[tuple[str, Any]]:
    return [(name, example["value"]) for name, example in media.get("examples", {}).items()] + (
        [("example", media["example"])] if "example" in media else []
    )


def media_values(item: dict[str, Any]) -> list[Any]:
    return [example["value"] for example in item.get("examples", {}).values()] + (
        [item["example"]] if "example" in item else []
    )


def escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def validator(document: dict[str, Any], pointer: str) -> Draft202012Validator:
    """A validator of the schema at ``pointer`` in ``document``, its references resolved there."""
    registry = Registry([(DOCUMENT_URI, document)], draft=Draft202012)
    return Draft202012Validator({"$ref": f"{DOCUMENT_URI}#{pointer}"}, registry=registry)


@pytest.mark.parametrize(
    ("body", "valid"),
    [
        ({"csv_bom": True}, True),
        ({"csv_bom": True, "csv_dialect": {"encoding": "utf-8"}}, True),
        ({"csv_bom": True, "csv_dialect": {"encoding": "gb18030"}}, False),
        ({"csv_bom": False, "csv_dialect": {"encoding": "shift_jis"}}, True),
        ({"csv_dialect": {"decimal_separator": ",", "delimiter": ";"}}, True),
        ({"csv_dialect": {"decimal_separator": ","}}, False),
        ({"csv_dialect": {"decimal_separator": ",", "delimiter": ","}}, False),
        ({"locale": "zh_cn"}, True),
        ({"locale": "00000"}, False),
        ({"path_template": "{type}/{file}"}, False),
        ({"path_template": "{type}/{file}", "destinations": []}, False),
        ({"path_template": "{type}/{file}", "destinations": ["dst_01M95553X8717J230FP3AK4QKE"]}, True),
        ({"path_template": None}, True),
    ],
)
def test_the_document_states_the_rules_between_fields_the_service_checks(
    document: dict[str, Any], body: dict[str, Any], valid: bool
) -> None:
    """What the service refuses of a body, the schema refuses too (no schema-valid body is a 422)."""
    from pydantic import ValidationError

    from exports.accepting.requests import ExportRequest
    from exports.schedules.api_models import ScheduleRequest

    for model, schema in ((ExportRequest, "ExportRequest.orders"), (ScheduleRequest, "ScheduleRequest.orders")):
        full = {"export_type": "orders", "filters": {"date_from": "2026-01-01", "date_to": "2026-01-02"}, **body}
        if model is ScheduleRequest:
            full["cron"] = "0 8 * * 1"
        schema_valid = not list(validator(document, f"/components/schemas/{schema}").iter_errors(full))
        try:
            model.model_validate(full)
            service_valid = True
        except ValidationError:
            service_valid = False
        assert (schema_valid, service_valid) == (valid, valid), (schema, body)


@pytest.mark.parametrize(
    ("address", "valid"),
    [
        ("finance@acme.example", True),
        ("Finance@Globex.EXAMPLE", True),
        ("you@example.com", True),
        ("finance@elsewhere.example", False),
        ("finance@acme.example.org", False),
        ("not an address", False),
    ],
)
def test_a_recipient_outside_the_deployments_domains_is_schema_invalid(
    document: dict[str, Any], address: str, valid: bool
) -> None:
    """`make run` mails its demo domains (local_stack.embedded_aws): on a create and a PATCH, the
    schema takes the recipients the service takes from a caller without a verified address."""
    from pydantic import ValidationError

    from exports.core.config.settings import mail_domains
    from exports.schedules.mail import may_receive
    from local_stack.embedded_aws import LOCAL_MAIL_ALLOWED_DOMAINS

    create = {"export_type": "orders", "filters": {"date_from": "2026-01-01", "date_to": "2026-01-02"}}
    for schema, body in (
        ("ScheduleRequest.orders", {**create, "cron": "0 8 * * 1", "recipients": [address]}),
        ("SchedulePatch", {"recipients": [address]}),
    ):
        assert validator(document, f"/components/schemas/{schema}").is_valid(body) is valid, schema
    from exports.schedules.api_models import ScheduleRequest

    try:
        ScheduleRequest.model_validate({**create, "cron": "0 8 * * 1", "recipients": [address]})
        shaped = True
    except ValidationError:
        shaped = False
    assert (shaped and may_receive(address, mail_domains(LOCAL_MAIL_ALLOWED_DOMAINS), None)) is valid


def test_a_deployment_without_mail_domains_states_the_address_shape_only() -> None:
    """It mails its callers' own verified addresses only, which no document can name."""
    from functions.submit.handler import api_document

    schemas = json.loads(api_document([], frozenset()))["components"]["schemas"]
    create = schemas["ScheduleRequest"]["properties"]["recipients"]["items"]
    patched = schemas["SchedulePatch"]["properties"]["recipients"]["anyOf"]
    patch = next(branch for branch in patched if "items" in branch)
    for item in (create, patch["items"]):
        assert item == {"format": "email", "maxLength": 254, "type": "string"}


@pytest.mark.parametrize(
    ("body", "valid"),
    [
        ({"cron": "0 8 * * 1", "every": {"days": 1}}, False),
        ({"cron": "0 8 * * 1", "every": None}, True),
        ({"cron": None, "every": {"days": 1}}, True),
        ({"every": {"days": 1}}, True),
    ],
)
def test_a_patch_states_that_it_takes_cron_or_every_not_both(
    document: dict[str, Any], body: dict[str, Any], valid: bool
) -> None:
    from pydantic import ValidationError

    from exports.schedules.api_models import SchedulePatch

    try:
        SchedulePatch.model_validate(body)
        service_valid = True
    except ValidationError:
        service_valid = False
    schema_valid = validator(document, "/components/schemas/SchedulePatch").is_valid(body)
    assert (schema_valid, service_valid) == (valid, valid)
