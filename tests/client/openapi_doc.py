"""The OpenAPI document the API serves, read in-process (no server, no AWS).

``python -m tests.client.openapi_doc`` writes it to docs/openapi.json (``make openapi``);
test_openapi_doc.py fails while the committed file differs from it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.builders import FakeContext, http_event

DOC_PATH = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"


def served_openapi() -> dict[str, Any]:
    """What ``GET /openapi.json`` answers, resolved by the API function's own router."""
    from functions.submit.handler import app

    response = app.resolve(http_event("GET", "/openapi.json", user=None), FakeContext())
    assert response["statusCode"] == 200, response
    return json.loads(response["body"])


def render(document: dict[str, Any]) -> str:
    """The committed form: keys sorted, two-space indent, UTF-8, a final newline."""
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main() -> None:
    """Write docs/openapi.json."""
    DOC_PATH.write_text(render(served_openapi()), encoding="utf-8")
    print(f"wrote {DOC_PATH}")


if __name__ == "__main__":
    main()
