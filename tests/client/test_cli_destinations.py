"""``exportctl destinations …`` and ``--destination`` on submit and schedules, in-process against
a scripted API: the body each command sends, the one-time public key and trust policy printed
after a create, what is refused before any request (exit 2), and verify's exit code."""

import io
import json
from pathlib import Path
from typing import Any

import pytest

from exports_client.cli import main
from exports_client.output import ExitCode
from tests.client.fake_api import (
    ACCEPTED,
    BASE_URL,
    TOKEN,
    FakeApi,
    FakeSchedules,
    FakeTime,
    json_response,
    serving_types,
    task_json,
)

DST = "dst_01JEXAMPLE0000000000000000"
FINGERPRINT = "SHA256:" + "A" * 43
PUBLIC_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample exports-dst"


def destination_json(**changes: Any) -> dict[str, Any]:
    """A DestinationView of an SFTP destination with a key pair, as the API answers a create."""
    destination = {
        "destination_id": DST,
        "name": "Acme drop",
        "kind": "sftp",
        "state": "ACTIVE",
        "target": {
            "kind": "sftp",
            "host": "sftp.acme.example",
            "port": 22,
            "username": "exports",
            "path": "/incoming",
            "auth": "key",
            "host_key_fingerprint": FINGERPRINT,
            "public_key_fingerprint": FINGERPRINT,
        },
        "encryption": {"kind": "none"},
        "created_by": "carol",
        "created_at": "2025-04-01T12:00:00Z",
        "updated_at": "2025-04-01T12:00:00Z",
    }
    return {**destination, **changes}


S3_TARGET = {
    "kind": "s3",
    "bucket": "acme-exports",
    "prefix": "daily/",
    "region": "eu-central-1",
    "role_arn": "arn:aws:iam::123456789012:role/exports-delivery",
    "server_side_encryption": "AES256",
    "external_id": "exports-acme-0123456789",
}
TRUST_POLICY = {
    "Version": "2012-10-17",
    "Statement": [
        {"Effect": "Allow", "Action": "sts:AssumeRole", "Condition": {"StringEquals": {"sts:ExternalId": "x"}}}
    ],
}


def run(api: FakeApi, *args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    fake_time = FakeTime()
    code = main(
        [*args, "--url", BASE_URL, "--token", TOKEN],
        transport=api.transport,
        stdout=out,
        stderr=err,
        sleep=fake_time.sleep,
        clock=fake_time.clock,
    )
    return code, out.getvalue(), err.getvalue()


def sent(api: FakeApi, method: str, path: str) -> dict[str, Any]:
    bodies = [json.loads(r.content) for r in api.requests if (r.method, r.url.path) == (method, path)]
    assert bodies, f"no {method} {path} was sent: {api.paths()}"
    return bodies[-1]


def test_create_sftp_sends_the_target_and_prints_the_public_key_once() -> None:
    # Given the API answers the create with the key pair's public half
    api = FakeApi().on("POST", "/v1/destinations", json_response(201, destination_json(public_key=PUBLIC_KEY)))

    # When an SFTP destination with a pinned host key is created
    code, out, err = run(
        api,
        "destinations", "create", "sftp", "Acme drop",
        "--host", "sftp.acme.example", "--user", "exports", "--path", "/incoming",
        "--host-key-fingerprint", FINGERPRINT, "--use-group", "finance", "--idempotency-key", "once",
    )  # fmt: skip

    # Then the body mirrors the options, and the public key is printed whole with what to do
    assert code == ExitCode.OK, err
    assert sent(api, "POST", "/v1/destinations") == {
        "name": "Acme drop",
        "target": {
            "kind": "sftp",
            "host": "sftp.acme.example",
            "username": "exports",
            "path": "/incoming",
            "host_key_fingerprint": FINGERPRINT,
        },
        "use": {"groups": ["finance"]},
    }
    assert api.requests[-1].headers["Idempotency-Key"] == "once"
    assert DST in out and "sftp://exports@sftp.acme.example:22/incoming" in out
    assert PUBLIC_KEY in err and "authorized_keys" in err and "only this once" in err


def test_create_sftp_with_a_password_reads_it_from_a_file_never_an_option(tmp_path: Path) -> None:
    secret = tmp_path / "password"
    secret.write_text("open sesame\n")
    api = FakeApi().on("POST", "/v1/destinations", json_response(201, destination_json()))

    code, _, err = run(
        api, "destinations", "create", "sftp", "Acme drop", "--host", "h.example", "--user", "u",
        "--password-file", str(secret), "--zip-password-file", str(secret), "--port", "2222",
    )  # fmt: skip

    assert code == ExitCode.OK, err
    body = sent(api, "POST", "/v1/destinations")
    assert body["target"] == {"kind": "sftp", "host": "h.example", "port": 2222, "username": "u", "auth": "password",
                              "password": "open sesame"}  # fmt: skip
    assert body["encryption"] == {"kind": "zip", "zip_password": "open sesame"}


def test_an_unconfirmed_host_key_is_shown_with_the_command_that_confirms_it() -> None:
    target = {**destination_json()["target"], "host_key_fingerprint": None, "offered_host_key_fingerprint": FINGERPRINT}
    unconfirmed = destination_json(state="HOST_KEY_UNCONFIRMED", target=target)
    api = FakeApi().on("POST", "/v1/destinations", json_response(201, unconfirmed))
    api.on("POST", f"/v1/destinations/{DST}/confirm", json_response(200, destination_json()))

    code, _, err = run(api, "destinations", "create", "sftp", "Acme drop", "--host", "h.example", "--user", "u")
    assert code == ExitCode.OK, err
    assert f"exportctl destinations confirm-host-key {DST} {FINGERPRINT}" in err

    code, out, err = run(api, "destinations", "confirm-host-key", DST, FINGERPRINT, "--json")
    assert code == ExitCode.OK, err
    assert sent(api, "POST", f"/v1/destinations/{DST}/confirm") == {"host_key_fingerprint": FINGERPRINT}
    assert json.loads(out)["state"] == "ACTIVE"


def test_create_s3_with_a_kms_key_prints_the_trust_policy_to_paste() -> None:
    created = destination_json(kind="s3", target=S3_TARGET, trust_policy=TRUST_POLICY)
    api = FakeApi().on("POST", "/v1/destinations", json_response(201, created))

    code, out, err = run(
        api, "destinations", "create", "s3", "Acme bucket", "--bucket", "acme-exports", "--region", "eu-central-1",
        "--role-arn", S3_TARGET["role_arn"], "--prefix", "daily/", "--kms-key-arn", "arn:aws:kms:eu-central-1:1:key/k",
    )  # fmt: skip

    assert code == ExitCode.OK, err
    assert sent(api, "POST", "/v1/destinations")["target"] == {
        "kind": "s3",
        "bucket": "acme-exports",
        "region": "eu-central-1",
        "role_arn": S3_TARGET["role_arn"],
        "prefix": "daily/",
        "server_side_encryption": "aws:kms",
        "kms_key_arn": "arn:aws:kms:eu-central-1:1:key/k",
    }
    assert "exports-acme-0123456789" in out and "s3://acme-exports/daily/" in out
    assert "trust policy" in err and '"sts:ExternalId": "x"' in err


def test_json_output_is_the_answer_alone_so_scripts_can_keep_the_public_key() -> None:
    api = FakeApi().on("POST", "/v1/destinations", json_response(201, destination_json(public_key=PUBLIC_KEY)))
    code, out, err = run(api, "destinations", "create", "sftp", "x", "--host", "h", "--user", "u", "--json")
    assert code == ExitCode.OK, err
    assert json.loads(out)["public_key"] == PUBLIC_KEY and err == ""


def test_list_get_update_and_delete() -> None:
    api = FakeApi().on("GET", "/v1/destinations", json_response(200, {"items": [destination_json()]}))
    api.on("GET", f"/v1/destinations/{DST}", json_response(200, destination_json()))
    api.on("PATCH", f"/v1/destinations/{DST}", json_response(200, destination_json(name="Renamed")))
    api.on("DELETE", f"/v1/destinations/{DST}", json_response(204, None))

    code, out, _ = run(api, "destinations", "list")
    assert code == ExitCode.OK and DST in out and "ACTIVE" in out
    code, out, _ = run(api, "destinations", "get", DST)
    assert code == ExitCode.OK and FINGERPRINT in out
    code, out, _ = run(api, "destinations", "update", DST, "--name", "Renamed", "--no-encryption")
    assert code == ExitCode.OK and "Renamed" in out
    assert sent(api, "PATCH", f"/v1/destinations/{DST}") == {"name": "Renamed", "encryption": {"kind": "none"}}
    code, out, _ = run(api, "destinations", "delete", DST)
    assert (code, out.strip()) == (ExitCode.OK, f"deleted {DST}")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["update", DST], "nothing to change"),
        (["update", DST, "--no-encryption", "--zip-password-file", "-"], "give one of"),
        (["update", DST, "--password-file", "/nonexistent/secret"], "cannot read /nonexistent/secret"),
    ],
)
def test_what_cannot_be_sent_is_refused_before_any_request(args: list[str], says: str) -> None:
    api = FakeApi()
    code, _, err = run(api, "destinations", *args)
    assert code == ExitCode.USAGE and says in err
    assert api.requests == []


def test_verify_exits_1_with_the_failed_step_and_what_to_do() -> None:
    failed = {"ok": False, "checked_at": "2025-04-01T12:00:00Z", "failed_step": "AUTH", "message": "add our key"}
    api = FakeApi().on("POST", f"/v1/destinations/{DST}/verify", json_response(200, failed))
    code, out, _ = run(api, "destinations", "verify", DST)
    assert (code, out.strip()) == (ExitCode.FAILURE, "FAILED at AUTH: add our key")

    ok = {"ok": True, "checked_at": "2025-04-01T12:00:00Z"}
    api = FakeApi().on("POST", f"/v1/destinations/{DST}/verify", json_response(200, ok))
    code, out, _ = run(api, "destinations", "verify", DST)
    assert code == ExitCode.OK and out.startswith("OK")


def test_submit_names_destinations_and_the_status_shows_each_delivery() -> None:
    delivered = {"destination_id": DST, "status": "DELIVERED", "attempts": 1, "remote_path": "/incoming/orders.csv"}
    failed = {"destination_id": "dst_2", "status": "FAILED", "attempts": 3,
              "error": {"code": "AUTH_FAILED", "message": "the server refused our key"}}  # fmt: skip
    api = serving_types(FakeApi()).on("POST", "/v1/exports", json_response(202, ACCEPTED))
    api.on(
        "GET", "/v1/exports/exp_1", json_response(200, task_json(status="COMPLETED", deliveries=[delivered, failed]))
    )

    code, _, err = run(
        api, "submit", "orders", "--from", "2025-03-01", "--to", "2025-03-31",
        "--destination", DST, "--destination", "dst_2", "--path-template", "{type}/{date}/{file}",
    )  # fmt: skip
    assert code == ExitCode.OK, err
    body = sent(api, "POST", "/v1/exports")
    assert (body["destinations"], body["path_template"]) == ([DST, "dst_2"], "{type}/{date}/{file}")

    code, out, _ = run(api, "status", "exp_1")
    assert f"{DST} DELIVERED (1 attempt) /incoming/orders.csv" in out
    assert "dst_2 FAILED (3 attempts): AUTH_FAILED: the server refused our key" in out


def test_a_path_template_without_a_destination_is_refused() -> None:
    api = serving_types(FakeApi())
    code, _, err = run(api, "submit", "orders", "--from", "2025-03-01", "--to", "2025-03-31", "--path-template", "x")
    assert code == ExitCode.USAGE and "give --destination too" in err
    assert not any(r.method == "POST" for r in api.requests)


def test_a_schedule_is_created_with_destinations_and_shows_them() -> None:
    api = serving_types(FakeApi(FakeSchedules()))
    code, out, err = run(
        api, "schedules", "create", "orders", "--every", "1d", "--from", "previous_day",
        "--destination", DST, "--path-template", "{type}/{date}/{file}",
    )  # fmt: skip
    assert code == ExitCode.OK, err
    body = sent(api, "POST", "/v1/schedules")
    assert (body["destinations"], body["path_template"]) == ([DST], "{type}/{date}/{file}")
    assert "delivered to" in out and DST in out


FAILED_DELIVERY = {
    "destination_id": DST,
    "status": "FAILED",
    "attempts": 7,
    "remote_path": "/incoming/orders.csv",
    "delivered_at": None,
    "error": {"code": "DESTINATION_UNREACHABLE", "step": "AUTH", "message": "the server refused our login"},
    "requested_retries": 0,
}


def test_deliveries_retry_posts_to_the_delivery_and_shows_it_pending_again() -> None:
    # Given the API takes the retry of a FAILED delivery
    pending = {**FAILED_DELIVERY, "status": "PENDING", "requested_retries": 1}
    path = f"/v1/exports/exp_1/deliveries/{DST}/retry"
    api = FakeApi().on("POST", path, json_response(202, task_json("exp_1", "COMPLETED", deliveries=[pending])))

    # When its owner asks for it again
    code, out, err = run(api, "deliveries", "retry", "exp_1", DST)

    # Then one POST to the delivery's retry, and the task's delivery shown PENDING, with how to follow it
    assert code == ExitCode.OK, err
    assert [(r.method, r.url.path) for r in api.requests] == [("POST", path)]
    assert DST in out and "PENDING" in out
    assert "exportctl status exp_1" in err


@pytest.mark.parametrize(
    ("status", "code", "exit_code"),
    [
        (409, "DELIVERY_ALREADY_DELIVERED", ExitCode.REJECTED),
        (410, "FILE_EXPIRED", ExitCode.REJECTED),
        (404, "DELIVERY_NOT_FOUND", ExitCode.NOT_FOUND),
    ],
)
def test_deliveries_retry_refused_says_why_with_the_services_code(status: int, code: str, exit_code: int) -> None:
    body = {"error": {"code": code, "message": "not this time"}}
    api = FakeApi().on("POST", f"/v1/exports/exp_1/deliveries/{DST}/retry", json_response(status, body))

    result, _, err = run(api, "deliveries", "retry", "exp_1", DST)

    assert result == exit_code and code in err
