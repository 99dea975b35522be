"""Standard Webhooks signatures, checked against an independent computation."""

import base64
import hashlib
import hmac

import pytest

from exports.finishing.webhooks.signing import new_secret, sign, signed_headers

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


def test_signature_is_hmac_sha256_of_id_timestamp_body_with_the_decoded_key() -> None:
    body = b'{"task_id":"exp_1","status":"COMPLETED"}'
    key = base64.b64decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
    expected = base64.b64encode(hmac.new(key, b"msg_1.1700000000." + body, hashlib.sha256).digest()).decode()
    assert sign(SECRET, "msg_1", 1700000000, body) == f"v1,{expected}"


def test_headers_carry_id_timestamp_and_signature() -> None:
    headers = signed_headers(SECRET, "msg_1", 1700000000, b"{}")
    assert headers["webhook-id"] == "msg_1"
    assert headers["webhook-timestamp"] == "1700000000"
    assert headers["webhook-signature"] == sign(SECRET, "msg_1", 1700000000, b"{}")


def test_any_change_changes_the_signature() -> None:
    base = sign(SECRET, "msg_1", 1, b"{}")
    assert sign(SECRET, "msg_2", 1, b"{}") != base
    assert sign(SECRET, "msg_1", 2, b"{}") != base
    assert sign(SECRET, "msg_1", 1, b"{ }") != base


def test_generated_secrets_are_usable_and_distinct() -> None:
    first, second = new_secret(), new_secret()
    assert first.startswith("whsec_") and first != second
    assert sign(first, "m", 1, b"").startswith("v1,")


def test_a_secret_without_the_prefix_is_refused() -> None:
    with pytest.raises(ValueError, match="whsec_"):
        sign("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "m", 1, b"")
