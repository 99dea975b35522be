"""The SDK's models and calls match the API's contract, so drift fails here first.

docs/openapi.json is kept equal to what the API serves (test_openapi_doc.py); these tests hold
the SDK to that file: every response component has a model with the same JSON Schema, every
operation has a client method, and submit()/list() take exactly the API's parameters.
"""

import inspect
import json
from typing import Any

import pytest
from pydantic import BaseModel, TypeAdapter

from exports.api.models import ErrorBody as ServiceErrorBody
from exports.api.models import ErrorDetail as ServiceErrorDetail
from exports.api.models import FieldProblem as ServiceFieldProblem
from exports_client import ExportsClient, models
from tests.client.openapi_doc import DOC_PATH

DOC = json.loads(DOC_PATH.read_text(encoding="utf-8"))
COMPONENTS: dict[str, Any] = DOC["components"]["schemas"]
REF_PREFIX = "#/components/schemas/"


def referenced(node: Any) -> set[str]:
    """The components ``node`` refers to, and those they refer to, and so on."""
    found: set[str] = set()
    pending = [node]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            ref = item.get("$ref", "")
            if ref.startswith(REF_PREFIX) and ref.removeprefix(REF_PREFIX) not in found:
                found.add(ref.removeprefix(REF_PREFIX))
                pending.append(COMPONENTS[ref.removeprefix(REF_PREFIX)])
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return found


# The components of the answers (the request bodies, ExportRequest and one per export type, are
# checked against submit() below).
RESPONSE_COMPONENTS = referenced([op["responses"] for item in DOC["paths"].values() for op in item.values()])
# Each operation of the API and the client method that calls it.
OPERATIONS = {
    ("post", "/v1/exports"): ExportsClient.submit,
    ("get", "/v1/exports"): ExportsClient.list,
    ("get", "/v1/exports/{task_id}"): ExportsClient.get,
    ("get", "/v1/exports/{task_id}/download"): ExportsClient.download,
    ("post", "/v1/exports/{task_id}/cancel"): ExportsClient.cancel,
    ("post", "/v1/exports/{task_id}/retry"): ExportsClient.retry,
    ("post", "/v1/exports/{task_id}/deliveries/{destination_id}/retry"): ExportsClient.retry_delivery,
    ("get", "/v1/export-types"): ExportsClient.export_types,
    ("get", "/v1/export-types/{name}"): ExportsClient.export_type,
    ("post", "/v1/stream-tickets"): ExportsClient.stream_ticket,
    ("get", "/v1/me"): ExportsClient.me,
    ("post", "/v1/schedules"): ExportsClient.create_schedule,
    ("get", "/v1/schedules"): ExportsClient.list_schedules,
    ("get", "/v1/schedules/{schedule_id}"): ExportsClient.get_schedule,
    ("patch", "/v1/schedules/{schedule_id}"): ExportsClient.update_schedule,
    ("delete", "/v1/schedules/{schedule_id}"): ExportsClient.delete_schedule,
    ("post", "/v1/schedules/{schedule_id}/run"): ExportsClient.run_schedule,
    ("get", "/v1/schedules/{schedule_id}/latest"): ExportsClient.download_latest,
    ("post", "/v1/schedules/{schedule_id}/permalink"): ExportsClient.create_permalink,
    ("delete", "/v1/schedules/{schedule_id}/permalink"): ExportsClient.revoke_permalink,
    # For tools without a token: the SDK hands out its URL (create_permalink).
    ("get", "/v1/permalinks/{schedule_id}"): ExportsClient.create_permalink,
    ("get", "/local/mailbox"): ExportsClient.mailbox,
    ("get", "/v1/audit"): ExportsClient.list_audit,
    ("get", "/v1/audit/usage"): ExportsClient.audit_usage,
    ("post", "/v1/destinations"): ExportsClient.create_destination,
    ("get", "/v1/destinations"): ExportsClient.list_destinations,
    ("get", "/v1/destinations/{destination_id}"): ExportsClient.get_destination,
    ("patch", "/v1/destinations/{destination_id}"): ExportsClient.update_destination,
    ("delete", "/v1/destinations/{destination_id}"): ExportsClient.delete_destination,
    ("post", "/v1/destinations/{destination_id}/confirm"): ExportsClient.confirm_destination,
    ("post", "/v1/destinations/{destination_id}/verify"): ExportsClient.verify_destination,
}
# Schema words that only document: they do not change what a document may contain.
ANNOTATIONS = {"title", "description", "default"}


def contract(schema: Any) -> Any:
    """A JSON Schema without its annotations and nested definitions (compared one by one)."""
    if isinstance(schema, list):
        return [contract(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    kept: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "properties":
            kept[key] = {name: contract(prop) for name, prop in value.items()}
        elif key not in ANNOTATIONS and key != "$defs":
            kept[key] = contract(value)
    return kept


def schema_of(model: Any) -> dict[str, Any]:
    template = "#/components/schemas/{model}"
    if isinstance(model, type) and issubclass(model, BaseModel):
        return model.model_json_schema(ref_template=template)
    return TypeAdapter(model).json_schema(ref_template=template)


@pytest.mark.parametrize("name", sorted(RESPONSE_COMPONENTS))
def test_every_response_component_has_a_model_with_the_same_schema(name: str) -> None:
    model = getattr(models, name, None)
    assert model is not None, f"the API has a new component {name}: add exports_client.models.{name}"
    ours, theirs = contract(schema_of(model)), contract(COMPONENTS[name])
    assert set(ours.get("properties", {})) == set(theirs.get("properties", {})), f"{name} has other fields"
    assert ours == theirs


def test_every_operation_has_a_client_method() -> None:
    documented = {(method, path) for path, item in DOC["paths"].items() for method in item}
    assert documented <= set(OPERATIONS), f"no client method for {sorted(documented - set(OPERATIONS))}"


def test_list_audit_takes_the_query_parameters_of_the_api() -> None:
    documented = {parameter["name"] for parameter in DOC["paths"]["/v1/audit"]["get"]["parameters"]}
    taken = set(inspect.signature(ExportsClient.list_audit).parameters) - {"self"}
    # Days as date objects, named day_from and day_to in Python (from is a keyword).
    assert {"from" if name == "day_from" else "to" if name == "day_to" else name for name in taken} == documented


def test_submit_takes_exactly_the_fields_of_an_export_request() -> None:
    # Besides the request's fields: how long a 429 is waited out, and who is told (the client's own).
    parameters = set(inspect.signature(ExportsClient.submit).parameters) - {"self", "wait_for_capacity", "on_refused"}
    assert parameters == set(COMPONENTS["ExportRequest"]["properties"])
    assert set(COMPONENTS["ExportRequest"]["required"]) == {"export_type"}


def test_list_takes_exactly_the_query_parameters_of_the_api() -> None:
    documented = {parameter["name"] for parameter in DOC["paths"]["/v1/exports"]["get"]["parameters"]}
    assert set(inspect.signature(ExportsClient.list).parameters) - {"self"} == documented


def test_create_schedule_takes_exactly_the_fields_of_a_schedule_request() -> None:
    parameters = set(inspect.signature(ExportsClient.create_schedule).parameters) - {"self", "idempotency_key"}
    assert parameters == set(COMPONENTS["ScheduleRequest"]["properties"])


def test_update_schedule_takes_exactly_the_fields_of_a_schedule_patch() -> None:
    parameters = set(inspect.signature(ExportsClient.update_schedule).parameters) - {"self", "schedule_id"}
    assert parameters == set(COMPONENTS["SchedulePatch"]["properties"])


def test_list_schedules_takes_exactly_the_query_parameters_of_the_api() -> None:
    documented = {parameter["name"] for parameter in DOC["paths"]["/v1/schedules"]["get"]["parameters"]}
    assert set(inspect.signature(ExportsClient.list_schedules).parameters) - {"self"} == documented


def test_errors_are_read_with_the_services_error_shape() -> None:
    # The error envelope is not in the OpenAPI document, so compare with the service's model.
    assert contract(schema_of(models.ErrorBody)) == contract(schema_of(ServiceErrorBody))
    assert contract(schema_of(models.ErrorDetail)) == contract(schema_of(ServiceErrorDetail))
    assert contract(schema_of(models.FieldProblem)) == contract(schema_of(ServiceFieldProblem))


def test_the_terminal_states_are_those_of_the_service() -> None:
    from exports.core.status import TERMINAL

    assert {status.value for status in models.TERMINAL} == {status.value for status in TERMINAL}
