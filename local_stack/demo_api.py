"""The demo customer service ``make run`` serves on 127.0.0.1: the demo customers of one tenant
at a time over a cursor-paginated JSON API, as a team's own microservice would serve them (the
demo declaration's ``customers_api`` type reads it, docs/export-your-own-data.md).

``GET /tenants/{tenant}/customers?limit=N&cursor=C&country=XX`` answers
``{"data": [...], "next_cursor": "..." or null}``; customers come in id order, so a cursor is
the last id of the page before.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterable
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final
from urllib.parse import parse_qs, urlsplit

# The most customers one page holds (a larger limit is cut to it), and the default.
MAX_PAGE: Final = 500
DEFAULT_PAGE: Final = 100
_CUSTOMERS_PATH: Final = re.compile(r"^/tenants/([^/]+)/customers$")
# Marks a Decimal's digits in the JSON text until they replace their quoted string.
_NUMBER: Final = "\ufdd0"


def api_customer(customer: dict[str, Any]) -> dict[str, Any]:
    """A demo customer as the service shows it: nested address, a money amount with its exact
    digits, tags as an array, the sign-up instant with its offset."""
    number = int(customer["customer_id"][1:])
    return {
        "id": customer["customer_id"],
        "name": customer["name"],
        "email": customer["email"],
        "address": {"city": customer["city"], "country": customer["country"]},
        "plan": customer["plan"],
        "lifetime_value": Decimal(number * 7919 % 100_000) / 100,
        "marketing_opt_in": customer["marketing_opt_in"],
        "signed_up_at": customer["signed_up_at"],
        "tags": [customer["plan"], *(["newsletter"] if customer["marketing_opt_in"] else [])],
    }


def json_bytes(document: Any) -> bytes:
    """``document`` as JSON, each Decimal a number with exactly its digits (``12.50``, not ``12.5``)."""
    marked = json.dumps(document, ensure_ascii=False, default=lambda value: f"{_NUMBER}{value}{_NUMBER}")
    return re.sub(f'"{_NUMBER}([-0-9.eE+]+){_NUMBER}"', r"\1", marked).encode()


class DemoApi:
    """The service, serving ``customers`` (the demo's own dicts) from a daemon thread."""

    def __init__(self, customers: Iterable[dict[str, Any]], port: int = 0) -> None:
        by_tenant: dict[str, list[dict[str, Any]]] = {}
        for customer in sorted(customers, key=lambda each: str(each["customer_id"])):
            by_tenant.setdefault(customer["tenant_id"], []).append(api_customer(customer))
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _handler(by_tenant))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="demo-api", daemon=True)

    @property
    def url(self) -> str:
        """Where it listens."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> None:
        """Serve in the background."""
        self._thread.start()

    def shutdown(self) -> None:
        """Stop serving and close the socket."""
        self._server.shutdown()
        self._server.server_close()


def _handler(by_tenant: dict[str, list[dict[str, Any]]]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            match = _CUSTOMERS_PATH.match(parts.path)
            if match is None:
                self._send(404, {"error": "not found"})
                return
            query = {key: values[-1] for key, values in parse_qs(parts.query).items()}
            try:
                limit = min(MAX_PAGE, max(1, int(query.get("limit", DEFAULT_PAGE))))
            except ValueError:
                self._send(400, {"error": "limit is not a number"})
                return
            after = query.get("cursor", "")
            country = query.get("country")
            chosen = [
                customer
                for customer in by_tenant.get(match.group(1), [])
                if customer["id"] > after and (country is None or customer["address"]["country"] == country)
            ]
            page = chosen[:limit]
            following = page[-1]["id"] if len(chosen) > limit else None
            self._send(200, {"data": page, "next_cursor": following})

        def _send(self, status: int, document: dict[str, Any]) -> None:
            body = json_bytes(document)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: make run's log is for the service."""

    return Handler
