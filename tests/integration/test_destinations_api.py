"""/v1/destinations through the API handler on moto, with a real SFTP server on 127.0.0.1 and a
bucket in a second AWS account: create (host key fetched then confirmed, or pinned), the public
key shown once, verify's steps in the customer's words, changes, deletion, the tenant boundary
(another tenant's destination is 404 everywhere), who manages and who uses, Idempotency-Key."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from exports.core.config.env import Env
from exports.finishing.destinations.secrets_manager import secret_name
from functions.submit import handler as api
from local_stack.embedded_aws import REGION, Resources
from local_stack.sftp_server import LocalSftpServer, SftpUser
from tests.builders import FakeContext, http_event

ACME_ADMIN = {"custom:tenant_id": "acme", "cognito:groups": "[admin]"}
ACME_MEMBER = {"custom:tenant_id": "acme", "cognito:groups": "[sales]"}
INITECH_ADMIN = {"custom:tenant_id": "initech", "cognito:groups": "[admin]"}
CUSTOMER_ACCOUNT = "210987654321"
CUSTOMER_ROLE = f"arn:aws:iam::{CUSTOMER_ACCOUNT}:role/exports-delivery"


def s3_target(**changes: Any) -> dict[str, Any]:
    return {"kind": "s3", "bucket": "acme-lake", "region": REGION, "role_arn": CUSTOMER_ROLE, **changes}


def call(
    method: str, path: str, body: Any = None, claims: dict[str, str] | None = None, user: str = "alice", **kwargs: Any
) -> tuple[int, dict[str, str], Any]:
    event = http_event(method, path, body, user=user, claims=ACME_ADMIN if claims is None else claims, **kwargs)
    result = api.lambda_handler(event, FakeContext())
    text = result.get("body") or ""
    headers = {k.lower(): v for k, v in (result.get("headers") or {}).items()}
    return result["statusCode"], headers, json.loads(text) if text else None


@pytest.fixture
def sftp(tmp_path: Path, aws: Resources, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalSftpServer]:
    """The customer's SFTP server (loopback: allowed as in local development)."""
    monkeypatch.setenv(Env.ALLOW_LOCAL_CALLBACKS, "true")
    api.dependencies.cache_clear()
    api.destination_dependencies.cache_clear()
    (tmp_path / "upload").mkdir()
    server = LocalSftpServer(tmp_path)
    server.users["acme"] = SftpUser(password="open sesame")
    server.start()
    yield server
    server.shutdown()


def sftp_body(server: LocalSftpServer, **target: Any) -> dict[str, Any]:
    return {
        "name": "Acme SFTP",
        "target": {"kind": "sftp", "host": "127.0.0.1", "port": server.port, "username": "acme", "path": "/upload"}
        | target,
    }


def test_an_sftp_destination_is_fetched_confirmed_keyed_and_verified(sftp: LocalSftpServer) -> None:
    status, headers, created = call("POST", "/v1/destinations", sftp_body(sftp))

    assert status == 201, created
    destination_id = created["destination_id"]
    assert headers["location"] == f"/v1/destinations/{destination_id}"
    assert created["state"] == "HOST_KEY_UNCONFIRMED"
    assert created["target"]["offered_host_key_fingerprint"] == sftp.fingerprint
    public_key = created["public_key"]
    assert public_key.startswith("ssh-ed25519 ") and public_key.endswith(destination_id)

    status, _, refused = call("POST", f"/v1/destinations/{destination_id}/verify")
    assert (status, refused["error"]["code"]) == (409, "HOST_KEY_UNCONFIRMED")
    status, _, refused = call(
        "POST", f"/v1/destinations/{destination_id}/confirm", {"host_key_fingerprint": "SHA256:" + "A" * 43}
    )
    assert (status, refused["error"]["code"]) == (409, "HOST_KEY_MISMATCH")
    status, _, confirmed = call(
        "POST", f"/v1/destinations/{destination_id}/confirm", {"host_key_fingerprint": sftp.fingerprint}
    )
    assert status == 200 and confirmed["state"] == "ACTIVE"
    assert confirmed["target"]["host_key_fingerprint"] == sftp.fingerprint

    _, _, report = call("POST", f"/v1/destinations/{destination_id}/verify")
    assert report["ok"] is False and report["failed_step"] == "AUTH"
    assert "authorized_keys" in report["message"] and "as acme" in report["message"]

    sftp.users["acme"].authorized_keys.append(public_key)
    status, _, report = call("POST", f"/v1/destinations/{destination_id}/verify")
    assert status == 200 and report["ok"] is True and report["failed_step"] is None
    assert list((sftp.root / "upload").iterdir()) == []  # the probe removed

    status, _, shown = call("GET", f"/v1/destinations/{destination_id}")
    assert status == 200 and shown["public_key"] is None  # shown once
    assert shown["target"]["public_key_fingerprint"].startswith("SHA256:")
    private = boto3.client("secretsmanager", region_name=REGION).get_secret_value(SecretId=secret_name(destination_id))
    assert "OPENSSH PRIVATE KEY" in json.loads(private["SecretString"])["private_key"]
    assert "PRIVATE" not in json.dumps([created, confirmed, shown])


def test_a_pinned_password_destination_reports_a_wrong_password_then_works_once_changed(
    sftp: LocalSftpServer,
) -> None:
    body = sftp_body(sftp, auth="password", password="wrong", host_key_fingerprint=sftp.fingerprint)
    _, _, created = call("POST", "/v1/destinations", body)
    assert created["state"] == "ACTIVE" and created["public_key"] is None
    url = f"/v1/destinations/{created['destination_id']}"

    _, _, report = call("POST", f"{url}/verify")
    assert (report["ok"], report["failed_step"]) == (False, "AUTH")
    status, _, changed = call("PATCH", url, {"password": "open sesame", "name": "Acme drop"})
    assert status == 200 and changed["name"] == "Acme drop"
    _, _, report = call("POST", f"{url}/verify")
    assert report["ok"] is True
    assert "open sesame" not in json.dumps([created, changed, report])


def test_a_host_key_that_cannot_be_fetched_refuses_the_creation_naming_the_host(sftp: LocalSftpServer) -> None:
    sftp.stop()
    status, _, refused = call("POST", "/v1/destinations", sftp_body(sftp, auth="password", password="pw"))

    assert status == 422
    assert refused["error"]["code"] == "DESTINATION_UNREACHABLE" and refused["error"]["field"] == "target.host"
    assert call("GET", "/v1/destinations")[2]["items"] == []


@pytest.mark.parametrize(
    ("target", "field"),
    [
        ({"external_id": "mine"}, "external_id"),
        ({"bucket": "Not A Bucket"}, "bucket"),
        ({"role_arn": "arn:aws:iam::1:role/x"}, "role_arn"),
    ],
)
def test_bad_s3_fields_are_422_naming_the_field_and_nothing_is_stored(
    aws: Resources, target: dict[str, Any], field: str
) -> None:
    status, _, refused = call("POST", "/v1/destinations", {"name": "Lake", "target": s3_target(**target)})

    assert status == 422 and refused["error"]["field"].endswith(field), refused
    assert call("GET", "/v1/destinations")[2]["items"] == []


def _customer_bucket(name: str) -> None:
    """A bucket in the customer's account (moto keeps each account apart)."""
    credentials = boto3.client("sts", region_name=REGION).assume_role(
        RoleArn=CUSTOMER_ROLE, RoleSessionName="customer-setup"
    )["Credentials"]
    boto3.client(
        "s3",
        region_name=REGION,
        aws_access_key_id=credentials["AccessKeyId"],
        aws_secret_access_key=credentials["SecretAccessKey"],
        aws_session_token=credentials["SessionToken"],
    ).create_bucket(Bucket=name)


def test_an_s3_destination_shows_its_trust_policy_and_verifies_in_the_customers_bucket(aws: Resources) -> None:
    _customer_bucket("acme-lake")
    body = {
        "name": "Lake",
        "target": {
            "kind": "s3",
            "bucket": "acme-lake",
            "prefix": "exports/",
            "region": REGION,
            "role_arn": CUSTOMER_ROLE,
        },
    }
    status, _, created = call("POST", "/v1/destinations", body)

    assert status == 201, created
    external_id = created["target"]["external_id"]
    assert len(external_id) == 48
    [statement] = created["trust_policy"]["Statement"]
    assert statement["Principal"] == {"AWS": aws.destination_principal_arn}
    assert statement["Condition"] == {"StringEquals": {"sts:ExternalId": external_id}}
    assert created["permissions_policy"]["Statement"][0]["Resource"] == "arn:aws:s3:::acme-lake/exports/*"

    _, _, report = call("POST", f"/v1/destinations/{created['destination_id']}/verify")
    assert report["ok"] is True, report

    _, _, other = call("POST", "/v1/destinations", {"name": "Gone", "target": s3_target(bucket="acme-gone")})
    _, _, report = call("POST", f"/v1/destinations/{other['destination_id']}/verify")
    assert (report["ok"], report["failed_step"]) == (False, "PATH")
    assert "acme-gone" in report["message"]


def test_another_tenant_never_sees_uses_or_changes_a_destination(sftp: LocalSftpServer) -> None:
    body = sftp_body(sftp, auth="password", password="open sesame", host_key_fingerprint=sftp.fingerprint)
    _, _, created = call("POST", "/v1/destinations", body)
    url = f"/v1/destinations/{created['destination_id']}"

    answers = [
        call("GET", url, claims=INITECH_ADMIN),
        call("PATCH", url, {"name": "mine"}, claims=INITECH_ADMIN),
        call("POST", f"{url}/verify", claims=INITECH_ADMIN),
        call("POST", f"{url}/confirm", {"host_key_fingerprint": sftp.fingerprint}, claims=INITECH_ADMIN),
        call("DELETE", url, claims=INITECH_ADMIN),
    ]
    assert [(status, body["error"]["code"]) for status, _, body in answers] == [(404, "DESTINATION_NOT_FOUND")] * 5
    assert call("GET", "/v1/destinations", claims=INITECH_ADMIN)[2]["items"] == []
    assert call("GET", url)[2]["name"] == "Acme SFTP"  # unchanged


def test_members_use_what_they_may_and_only_managers_manage(sftp: LocalSftpServer) -> None:
    body = sftp_body(sftp, auth="password", password="open sesame", host_key_fingerprint=sftp.fingerprint)
    _, _, everyone = call("POST", "/v1/destinations", body)
    _, _, finance = call("POST", "/v1/destinations", {**body, "name": "Finance", "use": {"groups": ["finance"]}})

    listed = call("GET", "/v1/destinations", claims=ACME_MEMBER)[2]["items"]
    assert [d["destination_id"] for d in listed] == [everyone["destination_id"]]
    assert call("GET", f"/v1/destinations/{finance['destination_id']}", claims=ACME_MEMBER)[0] == 404
    status, _, refused = call("POST", "/v1/destinations", body, claims=ACME_MEMBER)
    assert (status, refused["error"]["code"]) == (403, "NOT_DESTINATION_MANAGER")
    assert call("DELETE", f"/v1/destinations/{everyone['destination_id']}", claims=ACME_MEMBER)[0] == 403
    status, _, refused = call("GET", "/v1/destinations", claims={})
    assert (status, refused["error"]["code"]) == (403, "CLAIM_MISSING")


def test_patch_refuses_fields_of_the_other_kind_and_delete_removes_the_secret(sftp: LocalSftpServer) -> None:
    body = sftp_body(sftp, auth="password", password="open sesame", host_key_fingerprint=sftp.fingerprint)
    _, _, created = call("POST", "/v1/destinations", body)
    url = f"/v1/destinations/{created['destination_id']}"

    status, _, refused = call("PATCH", url, {"prefix": "x/"})
    assert (status, refused["error"]["field"]) == (422, "prefix")
    status, _, refused = call("PATCH", url, {"path": "/up/../etc"})
    assert (status, refused["error"]["field"]) == (422, "path")
    assert call("PATCH", url, {"path": "/upload/daily"})[2]["target"]["path"] == "/upload/daily"

    assert call("DELETE", url)[0] == 204
    assert call("GET", url)[0] == 404
    described = boto3.client("secretsmanager", region_name=REGION).describe_secret(
        SecretId=secret_name(created["destination_id"])
    )
    assert "DeletedDate" in described


def test_an_idempotent_create_replays_the_first_answer(sftp: LocalSftpServer) -> None:
    body = sftp_body(sftp, auth="password", password="open sesame", host_key_fingerprint=sftp.fingerprint)
    key = {"idempotency-key": "create-once"}
    first = call("POST", "/v1/destinations", body, headers=key)
    again = call("POST", "/v1/destinations", body, headers=key)

    assert again[1].get("idempotent-replayed") == "true"
    assert again[2]["destination_id"] == first[2]["destination_id"]
    assert len(call("GET", "/v1/destinations")[2]["items"]) == 1


def test_the_same_key_with_another_password_is_another_request(sftp: LocalSftpServer) -> None:
    body = sftp_body(sftp, auth="password", password="open sesame", host_key_fingerprint=sftp.fingerprint)
    key = {"idempotency-key": "create-once"}
    assert call("POST", "/v1/destinations", body, headers=key)[0] == 201

    other = sftp_body(sftp, auth="password", password="another one", host_key_fingerprint=sftp.fingerprint)
    status, _, refused = call("POST", "/v1/destinations", other, headers=key)

    assert (status, refused["error"]["code"]) == (422, "IDEMPOTENCY_KEY_REUSED")
    assert "another one" not in json.dumps(refused)


def test_every_change_and_verification_is_in_the_tenants_audit_trail(sftp: LocalSftpServer) -> None:
    body = sftp_body(sftp, auth="password", password="open sesame", host_key_fingerprint=sftp.fingerprint)
    _, _, created = call("POST", "/v1/destinations", body)
    url = f"/v1/destinations/{created['destination_id']}"
    call("PATCH", url, {"name": "Renamed"})
    call("POST", f"{url}/verify")
    call("DELETE", url)

    status, _, page = call("GET", "/v1/audit", query={"subject": created["destination_id"]})

    assert status == 200, page
    actions = [record["action"] for record in page["items"]]
    assert actions == ["destination.created", "destination.changed", "destination.verified", "destination.deleted"]
    verified = page["items"][2]["detail"]["verification"]
    assert verified["ok"] is True and page["items"][0]["actor"] == "alice"
    assert "open sesame" not in json.dumps(page)
