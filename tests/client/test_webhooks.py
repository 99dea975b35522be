"""verify_webhook against Standard Webhooks signatures computed here, independently of the SDK."""

import base64
import hashlib
import hmac
import json
import time

import pytest

from exports_client import ExportsClient, WebhookVerificationError, verify_webhook

KEY = b"a 24-byte test signing key"
SECRET = "whsec_" + base64.b64encode(KEY).decode()
NOW = 1_750_000_000
BODY = json.dumps({"task_id": "exp_1", "status": "COMPLETED", "callback_seq": 3}).encode()


def sign(body: bytes, message_id: str = "msg_1", timestamp: int = NOW, key: bytes = KEY) -> str:
    """``v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">``, as the spec says."""
    digest = hmac.new(key, f"{message_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def headers(signature: str, message_id: str = "msg_1", timestamp: int = NOW) -> dict[str, str]:
    return {"webhook-id": message_id, "webhook-timestamp": str(timestamp), "webhook-signature": signature}


def test_a_correctly_signed_webhook_returns_its_payload() -> None:
    payload = verify_webhook(BODY, headers(sign(BODY)), SECRET, now=NOW)
    assert payload == {"task_id": "exp_1", "status": "COMPLETED", "callback_seq": 3}


def test_the_published_standard_webhooks_vector_verifies() -> None:
    # The example of the Standard Webhooks reference libraries.
    published = {
        "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
        "webhook-timestamp": "1614265330",
        "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
    }
    payload = verify_webhook(
        '{"test": 2432232314}', published, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", now=1614265330
    )
    assert payload == {"test": 2432232314}


def test_header_names_are_case_insensitive_and_the_client_offers_the_same_function() -> None:
    mixed = {name.title(): value for name, value in headers(sign(BODY)).items()}
    assert ExportsClient.verify_webhook(BODY.decode(), mixed, SECRET, now=NOW)["task_id"] == "exp_1"


def test_one_matching_signature_among_several_is_enough() -> None:
    others = [sign(BODY, key=b"the old key"), "v1a,c29tZXRoaW5nIGVsc2U=", "v1,not*base64", "garbage"]
    verify_webhook(BODY, headers(" ".join([*others, sign(BODY)])), SECRET, now=NOW)


@pytest.mark.parametrize(
    "tampered",
    [
        BODY.replace(b"COMPLETED", b"FAILED"),
        BODY + b" ",
        json.dumps(json.loads(BODY), indent=1).encode(),  # same JSON, other bytes: not what was signed
    ],
)
def test_a_tampered_body_is_refused(tampered: bytes) -> None:
    with pytest.raises(WebhookVerificationError, match="no matching signature"):
        verify_webhook(tampered, headers(sign(BODY)), SECRET, now=NOW)


def test_the_id_and_timestamp_are_signed_too() -> None:
    with pytest.raises(WebhookVerificationError, match="no matching signature"):
        verify_webhook(BODY, headers(sign(BODY), message_id="msg_2"), SECRET, now=NOW)
    with pytest.raises(WebhookVerificationError, match="no matching signature"):
        verify_webhook(BODY, headers(sign(BODY), timestamp=NOW + 1), SECRET, now=NOW)


def test_another_secret_does_not_verify() -> None:
    other = "whsec_" + base64.b64encode(b"another key").decode()
    with pytest.raises(WebhookVerificationError):
        verify_webhook(BODY, headers(sign(BODY)), other, now=NOW)


@pytest.mark.parametrize(
    ("sent_at", "tolerance", "message"),
    [(NOW - 301, 300, "too old"), (NOW + 301, 300, "too new"), (NOW - 61, 60, "too old")],
)
def test_timestamps_outside_the_tolerance_are_refused_even_when_signed(
    sent_at: int, tolerance: int, message: str
) -> None:
    signed = headers(sign(BODY, timestamp=sent_at), timestamp=sent_at)
    with pytest.raises(WebhookVerificationError, match=message):
        verify_webhook(BODY, signed, SECRET, tolerance=tolerance, now=NOW)


@pytest.mark.parametrize("sent_at", [NOW - 300, NOW + 300])
def test_timestamps_at_the_edge_of_the_tolerance_are_accepted(sent_at: int) -> None:
    verify_webhook(BODY, headers(sign(BODY, timestamp=sent_at), timestamp=sent_at), SECRET, now=NOW)


@pytest.mark.parametrize("missing", ["webhook-id", "webhook-timestamp", "webhook-signature"])
def test_missing_headers_are_refused(missing: str) -> None:
    incomplete = headers(sign(BODY))
    del incomplete[missing]
    with pytest.raises(WebhookVerificationError, match="missing"):
        verify_webhook(BODY, incomplete, SECRET, now=NOW)


def test_a_timestamp_that_is_not_unix_seconds_is_refused() -> None:
    with pytest.raises(WebhookVerificationError, match="Unix time"):
        verify_webhook(BODY, {**headers(sign(BODY)), "webhook-timestamp": "2025-04-01T12:00:00Z"}, SECRET, now=NOW)


def test_the_current_time_is_the_default() -> None:
    with pytest.raises(WebhookVerificationError, match="too old"):
        verify_webhook(BODY, headers(sign(BODY, timestamp=1_000), timestamp=1_000), SECRET)


@pytest.mark.parametrize("secret", ["whsec_***", "whsec_"])
def test_a_malformed_secret_is_a_configuration_error(secret: str) -> None:
    with pytest.raises(ValueError, match="secret"):
        verify_webhook(BODY, headers(sign(BODY)), secret, now=NOW)


def test_the_client_verifies_what_the_service_signs() -> None:
    import time

    from exports.finishing.webhooks.signing import new_secret, signed_headers
    from exports_client import verify_webhook

    secret = new_secret()
    body = b'{"task_id":"exp_1","status":"COMPLETED"}'
    headers = signed_headers(secret, "msg_exp_1_2", int(time.time()), body)
    assert verify_webhook(body, headers, secret)["status"] == "COMPLETED"


def test_what_the_service_signs_verifies_with_the_sdk_and_the_reference_library() -> None:
    """The service's own signer and payload shape, checked by standardwebhooks (the reference)
    and by verify_webhook, then typed by parse_event."""
    from standardwebhooks import Webhook

    from exports.finishing.webhooks.signing import signed_headers
    from exports_client import parse_event

    event = {
        "type": "export.completed",
        "timestamp": "2026-11-29T10:00:00+00:00",
        "data": {
            "task_id": "exp_1", "export_type": "orders", "format": "xlsx", "filters": {}, "priority": 5,
            "status": "COMPLETED", "progress": 100, "rows_written": 3, "attempt": 1, "retry_count": 0,
            "max_retries": 3, "created_at": "2026-11-29T09:59:00+00:00", "expires_at": "2026-12-06T10:00:00+00:00",
            "deadline": "2026-11-29T10:59:00+00:00", "rows": 3, "size_bytes": 10, "sha256": "ab" * 32,
            "file_name": "orders.xlsx", "download_url": "https://x/y",
            "download_expires_at": "2026-11-29T10:15:00+00:00",
            "callback_seq": 2,
        },
    }  # fmt: skip
    body = json.dumps(event).encode()
    now = int(time.time())  # the reference library checks the timestamp against the clock
    sent = signed_headers(SECRET, "msg_exp_1_2", now, body)

    assert Webhook(SECRET).verify(body, sent) == event
    assert verify_webhook(body, sent, SECRET) == event
    parsed = parse_event(verify_webhook(body, sent, SECRET))
    assert parsed.type == "export.completed" and parsed.data.download_url == "https://x/y"
    assert parsed.data.callback_seq == 2
