"""Download links: minted per request for the owner of a COMPLETED task only, and short-lived by
configuration (``EXPORTS_DOWNLOAD_URL_TTL_SEC``), whether they come from the task, the download
redirect or the callback."""

import json
import time
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from exports.core.aws.s3_results import S3ResultStore
from exports.core.config.env import Env
from exports.core.config.results import Results
from functions.submit import handler as api
from local_stack.demo_orders import demo_orders
from local_stack.embedded_aws import Resources, put_items
from tests.builders import FakeContext, http_event
from tests.integration.conftest import SEED_DAY, _clear_caches
from tests.receiver import receiver
from tests.reliability.faults import Lanes


def call(method: str, path: str, user: str = "alice", body: Any = None) -> dict[str, Any]:
    return api.lambda_handler(http_event(method, path, body, user=user), FakeContext())


def completed_task(resources: Resources, callback_url: str | None = None, day: int = 10) -> str:
    body: dict[str, Any] = {
        "export_type": "orders",
        "filters": {"date_from": f"2025-03-{day:02d}", "date_to": f"2025-03-{day:02d}"},
    }
    if callback_url:
        body["callback_url"] = callback_url
    result = call("POST", "/v1/exports", body=body)
    assert result["statusCode"] == 202, result["body"]
    lanes = Lanes(resources)
    lanes.settle("normal", lanes.invoke("normal", lanes.receive("normal")))
    return json.loads(result["body"])["task_id"]


def lifetime_sec(url: str, minted_at: float) -> float:
    """How long ``url`` stays valid: SigV4's X-Amz-Expires, or SigV2's absolute Expires."""
    query = parse_qs(urlsplit(url).query)
    if "X-Amz-Expires" in query:
        return float(query["X-Amz-Expires"][0])
    return float(query["Expires"][0]) - minted_at


def assert_lifetime(url: str, minted_at: float, ttl: int) -> None:
    """``minted_at`` is taken just before the request: a SigV2 link's whole-second expiry may lie up
    to a second past ``minted_at + ttl``."""
    assert ttl - 5 <= lifetime_sec(url, minted_at) <= ttl + 1, url


@pytest.mark.parametrize("ttl", [Results.DOWNLOAD_URL_TTL_SEC, 120])
def test_links_live_exactly_as_long_as_configured(orders: Resources, monkeypatch: pytest.MonkeyPatch, ttl: int) -> None:
    monkeypatch.setenv(Env.DOWNLOAD_URL_TTL_SEC, str(ttl))
    _clear_caches()
    task_id = completed_task(orders)

    minted_at = time.time()
    view = json.loads(call("GET", f"/v1/exports/{task_id}")["body"])
    redirect = call("GET", f"/v1/exports/{task_id}/download")

    assert api.dependencies().settings.download_url_ttl_sec == ttl
    assert_lifetime(view["download_url"], minted_at, ttl)
    assert_lifetime(redirect["headers"]["Location"], minted_at, ttl)
    expires_at = datetime.fromisoformat(view["download_expires_at"]).timestamp()
    assert ttl - 5 <= expires_at - minted_at <= ttl + 1
    assert redirect["headers"]["Cache-Control"] == "no-store"


def test_links_are_signed_with_sigv4(orders: Resources) -> None:
    """botocore presigns S3 links with Signature Version 2 where the region still accepts it (it
    does in us-east-1) unless the client asks for ``s3v4``: an absolute ``Expires`` and a
    signature scheme S3 has deprecated (and refuses on buckets created since mid-2020). The link
    must be SigV4, whose ``X-Amz-Expires`` is the configured lifetime."""
    task_id = completed_task(orders)
    url = json.loads(call("GET", f"/v1/exports/{task_id}")["body"])["download_url"]
    query = parse_qs(urlsplit(url).query)
    assert query.get("X-Amz-Algorithm") == ["AWS4-HMAC-SHA256"], url
    assert query["X-Amz-Expires"] == [str(Results.DOWNLOAD_URL_TTL_SEC)]


def test_a_fresh_link_is_minted_on_every_read_and_never_in_lists(
    orders: Resources, monkeypatch: pytest.MonkeyPatch
) -> None:
    task_id = completed_task(orders)
    minted: list[int] = []
    original = S3ResultStore.presign_download

    def spy(self: S3ResultStore, key: str, file_name: str, ttl_sec: int) -> str:
        minted.append(ttl_sec)
        return original(self, key, file_name, ttl_sec)

    monkeypatch.setattr(S3ResultStore, "presign_download", spy)

    call("GET", f"/v1/exports/{task_id}")
    call("GET", f"/v1/exports/{task_id}/download")
    listed = json.loads(call("GET", "/v1/exports")["body"])["items"]

    assert minted == [Results.DOWNLOAD_URL_TTL_SEC] * 2
    assert [item["download_url"] for item in listed] == [None]


def test_no_link_for_a_task_that_has_no_file(aws: Resources) -> None:
    body = {"export_type": "orders", "filters": {"date_from": "2025-03-01", "date_to": "2025-03-01"}}
    task_id = json.loads(call("POST", "/v1/exports", body=body)["body"])["task_id"]
    assert json.loads(call("GET", f"/v1/exports/{task_id}")["body"])["download_url"] is None
    refused = call("GET", f"/v1/exports/{task_id}/download")
    assert refused["statusCode"] == 409
    assert "Location" not in (refused.get("headers") or {})


def test_the_callback_carries_a_link_as_short_lived_as_the_others(running_aws: Resources) -> None:
    put_items(running_aws.orders_table, demo_orders(400, SEED_DAY))
    with receiver([204]) as hook:
        completed_task(running_aws, callback_url=hook.url)
        (call_,) = hook.wait_for(1)
    payload = json.loads(call_.body)["data"]
    assert payload["status"] == "COMPLETED"
    assert_lifetime(payload["download_url"], call_.at - time.monotonic() + time.time(), Results.DOWNLOAD_URL_TTL_SEC)
    expire_at = datetime.fromisoformat(payload["download_expires_at"])
    assert 0 < (expire_at - datetime.now(UTC)).total_seconds() <= Results.DOWNLOAD_URL_TTL_SEC
