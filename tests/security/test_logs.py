"""No secrets in the logs: a whole task (submit with a bearer token, export, signed callback with
a failed first attempt, download link) runs with every function logging at DEBUG, and the
functions' output is searched for the token, the webhook secret, a callback URL's credentials,
signatures and presigned links."""

import base64
import io
import json
import logging
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from functions.submit.handler import lambda_handler as api_handler
from local_stack.demo_orders import demo_orders
from local_stack.embedded_aws import Resources, put_items
from tests.builders import FakeContext, http_event
from tests.integration.conftest import SEED_DAY, WEBHOOK_SECRET
from tests.receiver import receiver
from tests.reliability.faults import Lanes

BEARER = "eyJhbGciOiJSUzI1NiJ9.c2VjcmV0LXRva2VuLW9mLWFsaWNl.c2lnbmF0dXJl"
CALLBACK_TOKEN = "cb-query-secret-5b1f"


@pytest.fixture
def debug_logs() -> Iterator[io.StringIO]:
    """Every logger of the service at DEBUG (the functions' loggers are ``exports`` and below),
    their JSON lines written here."""
    service = logging.getLogger("exports")
    before = service.level
    buffer = io.StringIO()
    handlers = [h for h in service.handlers if isinstance(h, logging.StreamHandler)]
    assert handlers, "the functions' logger has no handler: import a handler module first"
    streams = [h.setStream(buffer) for h in handlers]
    service.setLevel(logging.DEBUG)
    yield buffer
    service.setLevel(before)
    for handler, stream in zip(handlers, streams, strict=True):
        handler.setStream(stream)


def test_a_full_task_logs_no_token_secret_signature_or_link(
    running_aws: Resources, debug_logs: io.StringIO, capfd: pytest.CaptureFixture[str]
) -> None:
    put_items(running_aws.orders_table, demo_orders(400, SEED_DAY))
    headers = {"authorization": f"Bearer {BEARER}"}
    with receiver([503, 204]) as hook:
        body = {
            "export_type": "orders",
            "filters": {"date_from": "2025-03-30", "date_to": "2025-03-31"},
            "callback_url": f"{hook.url}?token={CALLBACK_TOKEN}",
        }
        submitted = api_handler(http_event("POST", "/v1/exports", body, headers=headers), FakeContext())
        assert submitted["statusCode"] == 202, submitted["body"]
        task_id = json.loads(submitted["body"])["task_id"]
        lanes = Lanes(running_aws)
        lanes.settle("normal", lanes.invoke("normal", lanes.receive("normal")))
        calls = hook.wait_for(2)
        view = api_handler(http_event("GET", f"/v1/exports/{task_id}", headers=headers), FakeContext())
        redirect = api_handler(http_event("GET", f"/v1/exports/{task_id}/download", headers=headers), FakeContext())
    output = capfd.readouterr()
    logged = debug_logs.getvalue() + output.out + output.err

    links = [
        json.loads(view["body"])["download_url"],
        redirect["headers"]["Location"],
        json.loads(calls[-1].body)["data"],
    ]
    secrets = {
        "bearer token": BEARER,
        "webhook secret": WEBHOOK_SECRET,
        "webhook signing key": WEBHOOK_SECRET.removeprefix("whsec_"),
        "callback URL credential": CALLBACK_TOKEN,
        **{f"webhook signature {n}": c.headers["webhook-signature"].split(",", 1)[1] for n, c in enumerate(calls)},
        **{f"link signature {n}": signature for n, signature in enumerate(signatures(links))},
    }
    assert task_id in logged, "the run logged nothing: the search below would prove nothing"
    assert "callback attempt" in logged
    leaked = {name: value for name, value in secrets.items() if value in logged}
    assert leaked == {}, f"secrets in the logs: {sorted(leaked)}"
    assert "X-Amz-Signature" not in logged and "Signature=" not in logged


def signatures(links: list[Any]) -> list[str]:
    """The signature part of presigned links (SigV4 or SigV2), wherever they are."""
    found = []
    for link in links:
        url = link["download_url"] if isinstance(link, dict) else link
        query = parse_qs(urlsplit(url).query)
        for name in ("X-Amz-Signature", "Signature"):
            found += query.get(name, [])
    assert found, links
    # A signature may also be logged URL-encoded or as raw bytes' base64: search both spellings.
    return found + [base64.b64encode(s.encode()).decode() for s in found]
