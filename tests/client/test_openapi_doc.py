"""docs/openapi.json is exactly what the API serves at /openapi.json."""

from tests.client.openapi_doc import DOC_PATH, render, served_openapi


def test_the_committed_openapi_document_is_what_the_api_serves() -> None:
    committed = DOC_PATH.read_text(encoding="utf-8")
    served = render(served_openapi())
    assert committed == served, "docs/openapi.json is stale: run `make openapi` and commit the result"
