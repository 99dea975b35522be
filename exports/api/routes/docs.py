"""The documentation routes: the OpenAPI document and Swagger UI, served without a token.

No ``from __future__ import annotations`` here: Powertools reads the route signatures through the
tracer's wrapper, so the annotations must be real objects, not strings.
"""

from aws_lambda_powertools.event_handler import Response, content_types

from exports.api import app as api
from exports.api import queries
from exports.api.app import api_document, app
from exports.api.http.openapi import (
    swagger_page,
)
from exports.core.config.api import DOCS_PATH, OPENAPI_PATH


def _served_document() -> str:
    """This deployment's document: its types every caller may use, its recipients' domains."""
    deps = api.dependencies()
    return api_document(queries.documented_export_types(deps), deps.settings.allowed_mail_domains)


@app.get(OPENAPI_PATH, include_in_schema=False)
def openapi_document() -> Response[str]:
    """The OpenAPI document of this API, with the export types every caller may use (it is
    served without a token)."""
    document = _served_document()
    return Response(status_code=200, content_type=content_types.APPLICATION_JSON, body=document)


@app.get(DOCS_PATH, include_in_schema=False)
def swagger_ui() -> Response[str]:
    """Swagger UI on the document ``/openapi.json`` serves."""
    document = _served_document()
    return Response(status_code=200, content_type=content_types.TEXT_HTML, body=swagger_page(document))
