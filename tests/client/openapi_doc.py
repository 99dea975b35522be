"""The OpenAPI document `make run` serves, read in-process (no server, no AWS).

The served document depends on the deployment's export types (each type's request body), so the
committed one is that of the repository's exports.toml as `make run` serves it.
``python -m tests.client.openapi_doc`` writes it to docs/openapi.json (``make openapi``);
test_openapi_doc.py fails while the committed file differs from it, and
tests/e2e/test_openapi_served.py while `make run`'s stack serves anything else.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

from exports.api.http.openapi import SCHEDULE_REQUEST, SCHEDULES_PATH, SHARED_REQUEST, SUBMIT_PATH
from exports.core.config.env import Env
from exports.core.config.names import Names
from exports.core.config.settings import RegistrySettings, mail_domains
from exports.export_types.composition import declared_export_types
from exports.export_types.registry import ExportTypeRegistry
from local_stack.embedded_aws import LOCAL_MAIL_ALLOWED_DOMAINS
from local_stack.stack import DEMO_API_URL_ENV, DEMO_DATABASE_URL_ENV

ROOT = Path(__file__).resolve().parents[2]
DOC_PATH = ROOT / "docs" / "openapi.json"
REPOSITORY_DECLARATION = ROOT / "exports.toml"


def served_openapi(declaration: Path = REPOSITORY_DECLARATION) -> dict[str, Any]:
    """What ``GET /openapi.json`` answers in `make run` with ``declaration``: the API function's
    own document, with the types its registry would hold (built, never connected: the demo
    database's URI and the demo table's name only make its types part of the deployment) and
    the domains local mode mails (the schedule recipients' pattern)."""
    # As make run runs the function: no X-Ray daemon to talk to, a region for the clients the
    # registry builds (never called).
    os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    from functions.submit.handler import api_document

    environ = {
        Env.TASKS_TABLE: Names.TASKS_TABLE,
        Env.ORDERS_TABLE: Names.ORDERS_TABLE,
        Env.CUSTOMERS_TABLE: Names.CUSTOMERS_TABLE,
        Env.EXPORTS_CONFIG: str(declaration),
        DEMO_DATABASE_URL_ENV: "postgresql://exports_reader@/shop",
        # The demo customer service's URL (make run picks its port; the host is what is declared).
        DEMO_API_URL_ENV: "http://127.0.0.1:8600",
    }
    registry = ExportTypeRegistry(declared_export_types(RegistrySettings.from_env(environ), environ))
    return json.loads(api_document(registry.open_to_everyone(), mail_domains(LOCAL_MAIL_ALLOWED_DOMAINS)))


def shared_contract(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` without what depends on the deployment's export types: the per-type
    components and the submit and schedule bodies' unions and examples (the bodies are then the
    shared ``ExportRequest`` and ``ScheduleRequest``). Two deployments' documents differ in
    nothing else but their recipients' ``pattern`` (their mail domains), which every stack of
    the tests shares with `make run`."""
    shared = copy.deepcopy(document)
    schemas = shared["components"]["schemas"]
    for name in [name for name in schemas if name.startswith(("ExportRequest.", "ScheduleRequest.", "Filters."))]:
        del schemas[name]
    for path, shared_name in ((SUBMIT_PATH, SHARED_REQUEST), (SCHEDULES_PATH, SCHEDULE_REQUEST)):
        body = shared["paths"][path]["post"]["requestBody"]
        body.pop("description", None)
        body["content"]["application/json"] = {"schema": {"$ref": f"#/components/schemas/{shared_name}"}}
    return shared


def swagger_spec(page: str) -> dict[str, Any]:
    """The document a Swagger UI page (``GET /docs``) shows: the one in its ``spec:`` option."""
    start = page.index("spec: ") + len("spec: ")
    document, _ = json.JSONDecoder().raw_decode(page, start)
    return document


def render(document: dict[str, Any]) -> str:
    """The committed form: keys sorted, two-space indent, UTF-8, a final newline."""
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main() -> None:
    """Write docs/openapi.json."""
    DOC_PATH.write_text(render(served_openapi()), encoding="utf-8")
    print(f"wrote {DOC_PATH}")


if __name__ == "__main__":
    main()
