"""A COMPLETED export delivered to its destinations, end to end: submitted through the API
handler with destinations, run by the worker, delivered by the lifecycle workflow's DeliverFiles
state that moto executes (our callback function as its Lambda function), to a real asyncssh SFTP
server on 127.0.0.1 and to a bucket in a second AWS account through its role and ExternalId. Then
what a customer meets: a server down (retried, then delivered once it is back, one file), a
refused login (retried, then FAILED in words they can act on, the export still COMPLETED and
downloadable), another tenant's destination refused at submit."""

from __future__ import annotations

import email
import email.policy
import hashlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
import requests
from moto.core import DEFAULT_ACCOUNT_ID
from moto.ses.models import ses_backends

from exports.core.config.retry import FILE_DELIVERY_RETRY
from functions.callback import handler as callback
from functions.submit import handler as api
from local_stack.embedded_aws import REGION, Resources
from local_stack.sftp_server import LocalSftpServer, SftpUser
from tests.builders import FakeContext, http_event
from tests.integration.conftest import CompressedRetryClock
from tests.integration.test_lifecycle import expected_signature, run_queued_work, wait_for
from tests.receiver import receiver

ACME = {"custom:tenant_id": "acme", "cognito:groups": "[admin]"}
INITECH = {"custom:tenant_id": "initech", "cognito:groups": "[admin]"}
CUSTOMER_ACCOUNT = "210987654321"
CUSTOMER_ROLE = f"arn:aws:iam::{CUSTOMER_ACCOUNT}:role/exports-delivery"
PASSWORD = "open sesame"


def call(
    method: str, path: str, body: Any = None, claims: dict[str, str] = ACME, query: dict[str, str] | None = None
) -> tuple[int, Any]:
    result = api.lambda_handler(http_event(method, path, body, claims=claims, query=query), FakeContext())
    text = result.get("body") or ""
    return result["statusCode"], json.loads(text) if text else None


@pytest.fixture
def sftp(tmp_path: Path, running_aws: Resources) -> Iterator[LocalSftpServer]:
    """The customer's SFTP server (loopback: allowed in local mode, as running_aws sets)."""
    (tmp_path / "upload").mkdir()
    server = LocalSftpServer(tmp_path)
    server.users["acme"] = SftpUser(password=PASSWORD)
    server.start()
    yield server
    server.shutdown()


def sftp_destination(server: LocalSftpServer, claims: dict[str, str] = ACME) -> str:
    body = {
        "name": "Acme SFTP",
        "target": {
            "kind": "sftp",
            "host": "127.0.0.1",
            "port": server.port,
            "username": "acme",
            "path": "/upload",
            "auth": "password",
            "password": PASSWORD,
            "host_key_fingerprint": server.fingerprint,
        },
    }
    status, created = call("POST", "/v1/destinations", body, claims)
    assert status == 201, created
    return str(created["destination_id"])


def customer_s3() -> Any:
    """The customer's own view of their account (moto keeps each account apart)."""
    credentials = boto3.client("sts", region_name=REGION).assume_role(
        RoleArn=CUSTOMER_ROLE, RoleSessionName="customer"
    )["Credentials"]
    return boto3.client(
        "s3",
        region_name=REGION,
        aws_access_key_id=credentials["AccessKeyId"],
        aws_secret_access_key=credentials["SecretAccessKey"],
        aws_session_token=credentials["SessionToken"],
    )


def s3_destination() -> str:
    customer_s3().create_bucket(Bucket="acme-lake")
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
    status, created = call("POST", "/v1/destinations", body)
    assert status == 201, created
    return str(created["destination_id"])


def export_body(destinations: list[str], **changes: Any) -> dict[str, Any]:
    return {
        "export_type": "orders",
        "format": "csv",
        "timeout_sec": 30,
        "filters": {"date_from": "2025-03-30", "date_to": "2025-03-31"},
        "destinations": destinations,
        "path_template": "{type}/{date}/{task_id}-{file}",
        **changes,
    }


def submit(body: dict[str, Any], claims: dict[str, str] = ACME) -> str:
    status, accepted = call("POST", "/v1/exports", body, claims)
    assert status == 202, accepted
    return str(accepted["task_id"])


def task(task_id: str) -> dict[str, Any]:
    shown: dict[str, Any] = call("GET", f"/v1/exports/{task_id}")[1]
    return shown


def deliveries_ended(task_id: str) -> dict[str, Any] | None:
    shown = task(task_id)
    ended = shown["deliveries"] and all(d["status"] != "PENDING" for d in shown["deliveries"])
    return shown if ended else None


def downloaded(shown: dict[str, Any]) -> bytes:
    response = requests.get(shown["download_url"], timeout=10)
    assert response.status_code == 200
    return response.content


def test_a_completed_export_lands_whole_on_sftp_and_in_the_customers_bucket(
    sftp: LocalSftpServer, running_aws: Resources
) -> None:
    sftp_id, s3_id = sftp_destination(sftp), s3_destination()
    task_id = submit(export_body([sftp_id, s3_id]))
    run_queued_work(running_aws)
    shown = wait_for(lambda: deliveries_ended(task_id))

    assert shown["status"] == "COMPLETED"
    content = downloaded(shown)
    sha256 = hashlib.sha256(content).hexdigest()
    assert shown["sha256"] == sha256
    by_id = {d["destination_id"]: d for d in shown["deliveries"]}
    name = f"{task_id}-{shown['file_name']}"
    sftp_delivery, s3_delivery = by_id[sftp_id], by_id[s3_id]
    assert sftp_delivery["status"] == s3_delivery["status"] == "DELIVERED"
    assert sftp_delivery["attempts"] == s3_delivery["attempts"] == 1
    assert sftp_delivery["delivered_at"] and sftp_delivery["error"] is None

    # SFTP: the file and its sha256 sidecar, and nothing else (no temporary file left).
    day_dir = sftp.root / "upload" / "orders" / shown["finished_at"][:10]
    assert sftp_delivery["remote_path"] == f"/upload/orders/{shown['finished_at'][:10]}/{name}"
    assert sorted(p.name for p in day_dir.iterdir()) == [name, f"{name}.sha256"]
    assert (day_dir / name).read_bytes() == content
    assert (day_dir / f"{name}.sha256").read_text() == f"{sha256}  {name}\n"

    # S3: one object under the prefix, the same bytes, its sha256 in its metadata, encrypted.
    key = f"exports/orders/{shown['finished_at'][:10]}/{name}"
    assert s3_delivery["remote_path"] == key
    bucket = customer_s3()
    assert [o["Key"] for o in bucket.list_objects_v2(Bucket="acme-lake")["Contents"]] == [key]
    stored = bucket.get_object(Bucket="acme-lake", Key=key)
    assert stored["Body"].read() == content
    assert stored["Metadata"] == {"sha256": sha256}
    assert stored["ServerSideEncryption"] == "AES256"


def test_a_server_that_is_down_gets_the_file_once_it_is_back(
    sftp: LocalSftpServer, running_aws: Resources, retry_clock: CompressedRetryClock
) -> None:
    sftp_id = sftp_destination(sftp)
    sftp.stop()
    task_id = submit(export_body([sftp_id], path_template="{file}"))
    run_queued_work(running_aws)

    first = wait_for(lambda: (t := task(task_id))["deliveries"][0]["attempts"] >= 1 and t)
    [pending] = first["deliveries"]
    assert pending["status"] == "PENDING"
    assert pending["error"]["step"] == "TCP" and "check that the server is up" in pending["error"]["message"]
    assert first["status"] == "COMPLETED"
    sftp.start()

    shown = wait_for(lambda: deliveries_ended(task_id))
    [delivery] = shown["deliveries"]
    assert delivery["status"] == "DELIVERED" and delivery["attempts"] >= 2 and delivery["error"] is None
    assert sorted(p.name for p in (sftp.root / "upload").iterdir()) == [
        shown["file_name"],
        shown["file_name"] + ".sha256",
    ]
    assert (sftp.root / "upload" / shown["file_name"]).read_bytes() == downloaded(shown)
    # The workflow's retrier waited between the attempts (DeliverFiles' Retry, not a loop of ours).
    assert retry_clock.intervals


def test_a_refused_login_is_retried_then_failed_in_the_customers_words_and_the_export_stays_completed(
    sftp: LocalSftpServer,
    running_aws: Resources,
    retry_clock: CompressedRetryClock,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Every retry of FILE_DELIVERY_RETRY (some 25 minutes at most) in a few seconds (the scale of
    # the module pytest loaded the fixture from: it imports conftest files under its own name).
    monkeypatch.setattr(sys.modules[type(retry_clock).__module__], "RETRY_TIME_SCALE", 0.002)
    sftp_id = sftp_destination(sftp)
    sftp.users["acme"] = SftpUser(password="changed by the customer")
    task_id = submit(export_body([sftp_id]))
    run_queued_work(running_aws)

    shown = wait_for(lambda: deliveries_ended(task_id), timeout=180)
    [delivery] = shown["deliveries"]
    assert delivery["status"] == "FAILED"
    assert delivery["attempts"] == FILE_DELIVERY_RETRY.attempts
    assert delivery["error"]["code"] == "DESTINATION_UNREACHABLE" and delivery["error"]["step"] == "AUTH"
    assert "refused our login as acme" in delivery["error"]["message"]
    assert shown["status"] == "COMPLETED" and downloaded(shown)
    assert list((sftp.root / "upload").iterdir()) == []
    assert len(retry_clock.intervals) == FILE_DELIVERY_RETRY.retries
    emitted = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]
    assert any(m.get("FileDeliveryFailed") == [1.0] for m in emitted)
    # The customer's side: a ticket, never the page of a fault of ours.
    assert not any("FileDeliveryFault" in m for m in emitted)


def test_another_tenants_destination_is_refused_at_submit_as_if_it_did_not_exist(
    sftp: LocalSftpServer, running_aws: Resources
) -> None:
    initech_id = sftp_destination(sftp, claims=INITECH)
    status, refused = call("POST", "/v1/exports", export_body([initech_id]))
    assert status == 404, refused
    assert (refused["error"]["code"], refused["error"]["field"]) == ("DESTINATION_NOT_FOUND", "destinations.0")
    status, missing = call("POST", "/v1/exports", export_body(["dst_01JABCDEFGHJKMNPQRSTVWXYZ0"]))
    assert (status, missing["error"]["message"].split(" dst_")[0]) == (
        404,
        refused["error"]["message"].split(" dst_")[0],
    )
    assert call("GET", "/v1/exports")[1]["items"] == []


def test_a_delivery_attempt_twice_leaves_one_file_and_a_delivered_one_is_not_sent_again(
    sftp: LocalSftpServer, running_aws: Resources
) -> None:
    sftp_id = sftp_destination(sftp)
    task_id = submit(export_body([sftp_id], path_template="{file}"))
    run_queued_work(running_aws)
    shown = wait_for(lambda: deliveries_ended(task_id))
    delivered_at = shown["deliveries"][0]["delivered_at"]

    callback.lambda_handler({"action": "deliver_files", "task_id": task_id}, FakeContext())

    again = task(task_id)
    assert again["deliveries"][0]["delivered_at"] == delivered_at and again["deliveries"][0]["attempts"] == 1
    assert len(list((sftp.root / "upload").iterdir())) == 2


def test_a_schedule_names_its_destinations_each_run_delivers_and_its_mail_says_where_with_the_file(
    sftp: LocalSftpServer, running_aws: Resources
) -> None:
    sftp_id, deleted = sftp_destination(sftp), sftp_destination(sftp)
    # The name is the customer's text, markup and all.
    assert call("PATCH", f"/v1/destinations/{sftp_id}", {"name": "Acme <SFTP> & co"})[0] == 200
    body = {
        "name": "Nightly",
        "cron": "0 8 * * 1",
        **{k: v for k, v in export_body([sftp_id, deleted]).items() if k != "filters"},
        "filters": {"date_from": "2025-03-30", "date_to": "2025-03-31"},
        "recipients": ["finance@acme.example"],
    }
    status, created = call("POST", "/v1/schedules", body)
    assert status == 201, created
    assert (created["destinations"], created["path_template"]) == (
        [sftp_id, deleted],
        "{type}/{date}/{task_id}-{file}",
    )
    assert call("DELETE", f"/v1/destinations/{deleted}")[0] == 204

    status, run = call("POST", f"/v1/schedules/{created['schedule_id']}/run")
    assert status == 202, run
    run_queued_work(running_aws)
    shown = wait_for(lambda: deliveries_ended(run["task_id"]))

    delivery, failed = shown["deliveries"]
    assert delivery["status"] == "DELIVERED" and delivery["destination_id"] == sftp_id
    assert failed["status"] == "FAILED" and failed["destination_id"] == deleted
    content = downloaded(shown)
    assert (sftp.root / delivery["remote_path"].lstrip("/")).read_bytes() == content

    # The run's mail, sent once the delivery ended: where the file went, and the file itself
    # (small: under the deployment's attachment limit), byte for byte.
    [sent] = wait_for(lambda: list(ses_backends[DEFAULT_ACCOUNT_ID][REGION].sent_messages))
    mail = email.message_from_bytes(sent.raw_data.encode(), policy=email.policy.default)
    text = mail.get_body(("plain",)).get_content().splitlines()
    # Each destination by its name and kind (plain text: the name as written, nothing escaped),
    # the one deleted meanwhile by its id.
    assert f'Delivered to "Acme <SFTP> & co" (sftp): {delivery["remote_path"]}' in text
    assert f"Delivery to {deleted} failed (1 attempts): the destination was deleted before delivery" in text
    assert mail.get_body(("html",)) is None
    assert f"Attached: {shown['file_name']}" in text
    [attachment] = list(mail.iter_attachments())
    assert attachment.get_filename() == shown["file_name"]
    assert attachment.get_payload(decode=True) == content


def test_the_subscriber_hears_completed_then_where_the_file_went_signed(
    sftp: LocalSftpServer, running_aws: Resources
) -> None:
    sftp_id = sftp_destination(sftp)
    sftp.stop()
    with receiver([204]) as hook:
        task_id = submit(export_body([sftp_id, s3_destination()], callback_url=hook.url))
        run_queued_work(running_aws)
        wait_for(lambda: task(task_id)["deliveries"][0]["attempts"] >= 1)
        sftp.start()
        calls = hook.wait_for(3)

    bodies = [json.loads(c.body) for c in calls]
    assert len(bodies) == 3
    assert bodies[0]["type"] == "export.completed"
    by_destination = {b["data"]["delivery"]["destination_id"]: b for b in bodies[1:]}
    assert {b["type"] for b in bodies[1:]} == {"export.delivered"} and sftp_id in by_destination
    assert by_destination[sftp_id]["data"]["delivery"]["status"] == "DELIVERED"
    assert all(c.headers["webhook-signature"] == expected_signature(c) for c in calls)
    assert len({c.headers["webhook-id"] for c in calls}) == len(calls)


def test_each_delivery_that_ends_is_in_the_tenants_audit_trail_which_verifies(
    sftp: LocalSftpServer, running_aws: Resources
) -> None:
    from exports.audit.model import verify
    from tests.integration.test_audit_trail import exportctl_verify

    # Given an export to two destinations, one of them deleted before the file is delivered
    kept, deleted = sftp_destination(sftp), sftp_destination(sftp)
    task_id = submit(export_body([kept, deleted], path_template="{file}"))
    assert call("DELETE", f"/v1/destinations/{deleted}")[0] == 204

    # When it runs and its deliveries end
    run_queued_work(running_aws)
    shown = wait_for(lambda: deliveries_ended(task_id))
    callback.lambda_handler({"action": "deliver_files", "task_id": task_id}, FakeContext())  # a repeated step

    # Then acme's trail, read through GET /v1/audit, has one record per delivery by system
    status, page = call("GET", "/v1/audit", query={"from": shown["created_at"][:10], "limit": "100"})
    assert status == 200, page
    records = page["items"]
    assert verify(records).ok
    files = [r for r in records if r["subject"] == task_id and r["detail"].get("channel") == "destination"]
    made, failed = sorted(files, key=lambda r: r["action"] != "delivery.made")
    assert (made["action"], made["actor"], made["tenant"]) == ("delivery.made", "system", "acme")
    assert made["detail"]["destination_id"] == kept and made["detail"]["kind"] == "sftp"
    assert made["detail"]["remote_path"] == f"/upload/{shown['file_name']}"
    assert (made["detail"]["sha256"], made["detail"]["bytes"]) == (shown["sha256"], shown["size_bytes"])
    assert made["detail"]["attempts"] == 1 and made["detail"]["error"] is None
    assert failed["action"] == "delivery.failed" and failed["detail"]["destination_id"] == deleted
    assert failed["detail"]["kind"] is None  # deleted: its kind is not known any more
    assert failed["detail"]["error"] == {
        "code": "DESTINATION_NOT_FOUND",
        "message": "the destination was deleted before delivery",
    }
    # Another tenant sees none of it; exportctl verifies the chain over HTTP
    assert not any(r["subject"] == task_id for r in call("GET", "/v1/audit", claims=INITECH)[1]["items"])
    verified = exportctl_verify({"dave": {"custom:tenant_id": "acme", "cognito:groups": ["admin"]}}, "dave")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert json.loads(verified.stdout)["ok"] is True


def test_a_secret_we_cannot_read_fails_the_delivery_as_a_fault_of_ours_which_pages(
    sftp: LocalSftpServer, running_aws: Resources, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given an SFTP destination whose secret is gone from Secrets Manager (not the customer's doing)
    sftp_id = sftp_destination(sftp)
    boto3.client("secretsmanager", region_name=REGION).delete_secret(
        SecretId=f"exports/finishing/destinations/{sftp_id}", ForceDeleteWithoutRecovery=True
    )

    # When an export names it
    task_id = submit(export_body([sftp_id]))
    run_queued_work(running_aws)
    shown = wait_for(lambda: deliveries_ended(task_id))

    # Then the delivery FAILED at once with our code, and the fault metric the paging alarm watches
    [delivery] = shown["deliveries"]
    assert (delivery["status"], delivery["attempts"]) == ("FAILED", 1)
    assert delivery["error"]["code"] == "DESTINATION_SECRET_MISSING"
    emitted = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]
    assert any(m.get("FileDeliveryFault") == [1.0] for m in emitted)
    assert shown["status"] == "COMPLETED"


def retry_delivery(task_id: str, destination_id: str, **kwargs: Any) -> tuple[int, Any]:
    return call("POST", f"/v1/exports/{task_id}/deliveries/{destination_id}/retry", **kwargs)


def test_a_failed_delivery_is_retried_on_request_once_the_server_takes_the_key_again_with_one_file(
    sftp: LocalSftpServer,
    running_aws: Resources,
    retry_clock: CompressedRetryClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a delivery that FAILED: the customer's server refused our login through every retry
    monkeypatch.setattr(sys.modules[type(retry_clock).__module__], "RETRY_TIME_SCALE", 0.002)
    sftp_id = sftp_destination(sftp)
    sftp.users["acme"] = SftpUser(password="changed by the customer")
    with receiver([204]) as hook:
        task_id = submit(export_body([sftp_id], path_template="{file}", callback_url=hook.url))
        run_queued_work(running_aws)
        failed = wait_for(lambda: deliveries_ended(task_id), timeout=180)
        [delivery] = failed["deliveries"]
        assert (failed["status"], delivery["status"], delivery["error"]["step"]) == ("COMPLETED", "FAILED", "AUTH")
        attempts = delivery["attempts"]

        # When the server takes our login again and its owner asks for the delivery again
        sftp.users["acme"] = SftpUser(password=PASSWORD)
        status, accepted = retry_delivery(task_id, sftp_id)

        # Then it is PENDING again at once, in a round of its own, and is delivered: one file and
        # its sidecar on the server, byte-equal to the download
        assert status == 202, accepted
        assert accepted["task_id"] == task_id
        [pending] = accepted["deliveries"]
        assert (pending["status"], pending["requested_retries"], pending["attempts"]) == ("PENDING", 1, attempts)
        shown = wait_for(lambda: deliveries_ended(task_id))
        [delivered] = shown["deliveries"]
        assert (delivered["status"], delivered["attempts"], delivered["error"]) == ("DELIVERED", attempts + 1, None)
        upload = sftp.root / "upload"
        assert sorted(p.name for p in upload.iterdir()) == [shown["file_name"], shown["file_name"] + ".sha256"]
        content = downloaded(shown)
        assert (upload / shown["file_name"]).read_bytes() == content
        assert (upload / f"{shown['file_name']}.sha256").read_text().split()[0] == hashlib.sha256(content).hexdigest()
        # ... and its subscriber hears it ended, as of the first round
        types = [json.loads(c.body)["type"] for c in hook.wait_for(3)]
    assert types == ["export.completed", "export.delivery_failed", "export.delivered"]

    # And a second request is refused: the file is there already
    status, refused = retry_delivery(task_id, sftp_id)
    assert (status, refused["error"]["code"]) == (409, "DELIVERY_ALREADY_DELIVERED")
    assert len(list(upload.iterdir())) == 2

    # And the tenant's audit trail has the failure, who asked again, and the delivery
    status, page = call("GET", "/v1/audit", query={"from": shown["created_at"][:10], "limit": "100"})
    assert status == 200, page
    files = [r for r in page["items"] if r["subject"] == task_id and r["detail"].get("channel") == "destination"]
    assert sorted((r["action"], r["actor"], r["detail"]["attempts"]) for r in files) == [
        ("delivery.failed", "system", attempts),
        ("delivery.made", "system", attempts + 1),
        ("delivery.retried", "alice", attempts),
    ]
    [asked] = [r for r in files if r["action"] == "delivery.retried"]
    assert asked["detail"]["requested_retries"] == 1 and asked["detail"]["error"]["step"] == "AUTH"


def test_a_delivery_retried_on_request_is_the_callers_in_their_tenant_only_and_a_pending_one_is_not_retried(
    sftp: LocalSftpServer, running_aws: Resources
) -> None:
    # Given a delivery still being tried (the server is down)
    sftp_id = sftp_destination(sftp)
    sftp.stop()
    task_id = submit(export_body([sftp_id], path_template="{file}"))
    run_queued_work(running_aws)
    wait_for(lambda: task(task_id)["deliveries"][0]["attempts"] >= 1)

    # When its owner asks again while it is PENDING, Then 409 naming why; nothing changed
    status, refused = retry_delivery(task_id, sftp_id)
    assert (status, refused["error"]["code"]) == (409, "DELIVERY_IN_PROGRESS")
    assert task(task_id)["deliveries"][0]["requested_retries"] == 0

    # When the same user asks from another tenant, another user asks, or the task names no such
    # destination, Then each is a 404 that tells nothing of the delivery
    other_tenant = retry_delivery(task_id, sftp_id, claims=INITECH)
    assert (other_tenant[0], other_tenant[1]["error"]["code"]) == (404, "TASK_NOT_FOUND")
    result = api.lambda_handler(
        http_event("POST", f"/v1/exports/{task_id}/deliveries/{sftp_id}/retry", user="mallory", claims=ACME),
        FakeContext(),
    )
    assert (result["statusCode"], json.loads(result["body"])["error"]["code"]) == (404, "TASK_NOT_FOUND")
    unknown = retry_delivery(task_id, "dst_01JABCDEFGHJKMNPQRSTVWXYZ0")
    assert (unknown[0], unknown[1]["error"]["code"]) == (404, "DELIVERY_NOT_FOUND")
    sftp.start()
    wait_for(lambda: deliveries_ended(task_id))


def test_a_schedules_destinations_are_changed_by_patch_checked_as_on_a_create_and_audited(
    sftp: LocalSftpServer, running_aws: Resources
) -> None:
    # Given a schedule that delivers nowhere, and a destination of acme's and one of initech's
    acme_id, initech_id = sftp_destination(sftp), sftp_destination(sftp, claims=INITECH)
    body = {
        "name": "Nightly",
        "cron": "0 8 * * 1",
        **{k: v for k, v in export_body([]).items() if k not in ("destinations", "path_template")},
    }
    status, created = call("POST", "/v1/schedules", body)
    assert status == 201, created
    path = f"/v1/schedules/{created['schedule_id']}"
    assert (created["destinations"], created["path_template"]) == ([], None)

    # When its owner names another tenant's destination, or one that never existed, Then 404
    # DESTINATION_NOT_FOUND on the field, the same words for both, nothing changed
    status, refused = call("PATCH", path, {"destinations": [initech_id]})
    assert (status, refused["error"]["field"]) == (404, "destinations.0")
    status, missing = call("PATCH", path, {"destinations": ["dst_01JABCDEFGHJKMNPQRSTVWXYZ0"]})
    assert (
        status == 404 and missing["error"]["message"].split(" dst_")[0] == refused["error"]["message"].split(" dst_")[0]
    )
    # ... a template for no destination is refused too: in the body (422), or on the schedule (409)
    status, contradicted = call("PATCH", path, {"destinations": [], "path_template": "{file}"})
    assert (status, contradicted["error"]["field"]) == (422, "path_template")
    status, conflict = call("PATCH", path, {"path_template": "{file}"})
    assert (status, conflict["error"]["code"], conflict["error"]["field"]) == (
        409,
        "SCHEDULE_CONFLICT",
        "path_template",
    )
    status, bad_template = call("PATCH", path, {"destinations": [acme_id], "path_template": "../{file}"})
    assert (status, bad_template["error"]["field"]) == (422, "path_template")
    assert call("GET", path)[1]["destinations"] == []

    # When it names its own tenant's destination and a template
    status, changed = call("PATCH", path, {"destinations": [acme_id], "path_template": "{task_id}-{file}"})

    # Then the schedule delivers there, and the change is in the tenant's audit trail
    assert status == 200, changed
    assert (changed["destinations"], changed["path_template"]) == ([acme_id], "{task_id}-{file}")
    status, page = call("GET", "/v1/audit", query={"from": changed["created_at"][:10], "limit": "100"})
    assert status == 200, page
    [record] = [
        r for r in page["items"] if r["subject"] == created["schedule_id"] and r["action"] == "schedule.changed"
    ]
    assert record["detail"]["delivery"] == {
        "tenant": "acme",
        "destination_ids": [acme_id],
        "path_template": "{task_id}-{file}",
    }

    # And a template alone keeps the destinations; a run delivers where the schedule now says
    status, renamed = call("PATCH", path, {"path_template": "{file}"})
    assert (status, renamed["destinations"], renamed["path_template"]) == (200, [acme_id], "{file}")
    status, run = call("POST", f"{path}/run")
    assert status == 202, run
    run_queued_work(running_aws)
    shown = wait_for(lambda: deliveries_ended(run["task_id"]))
    [delivery] = shown["deliveries"]
    assert (delivery["status"], delivery["remote_path"]) == ("DELIVERED", f"/upload/{shown['file_name']}")

    # And `[]` stops delivering (null would too)
    status, cleared = call("PATCH", path, {"destinations": []})
    assert (status, cleared["destinations"], cleared["path_template"]) == (200, [], None)
