"""Encryption at delivery, opened as the customer opens it: an OpenPGP file to their public key
decrypts with GnuPG (`gpg --decrypt`, their key made by gpg itself), a ZIP opens with 7-Zip and
the destination's password and with nothing else; both hold the very bytes of the download, and
the sidecar's sha256 is the delivered (encrypted) file's, and so is the one the task's delivery and
the audit record give. Delivered end to end as in
test_file_delivery.py: API, worker, the workflow's DeliverFiles, a real SFTP server and the
customer's bucket in a second account. The tools are Debian's (`make crypto-tools`)."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from local_stack.embedded_aws import Resources
from local_stack.sftp_server import LocalSftpServer
from tests.integration.test_file_delivery import (
    PASSWORD,
    call,
    customer_s3,
    deliveries_ended,
    downloaded,
    export_body,
    sftp,
    submit,
)
from tests.integration.test_lifecycle import run_queued_work, wait_for
from tests.receiver import receiver

__all__ = ["sftp"]  # the fixture, shared
ZIP_PASSWORD = "correct horse battery staple"


def tool(name: str) -> str:
    found = shutil.which(name)
    assert found, f"{name} is missing: `make crypto-tools` installs it (Debian's gnupg and p7zip-full)"
    return found


@pytest.fixture
def customer_key(tmp_path: Path) -> tuple[Path, str]:
    """A customer's OpenPGP key pair in a GnuPG home of its own, and its armoured public key."""
    home = tmp_path / "gnupg"
    home.mkdir(mode=0o700)
    gpg = [tool("gpg"), "--homedir", str(home), "--batch", "--pinentry-mode", "loopback", "--passphrase", ""]
    subprocess.run(
        [*gpg, "--quick-gen-key", "Customer <files@customer.example>", "default", "default", "never"],
        check=True,
        capture_output=True,
    )
    public = subprocess.run([*gpg, "--armor", "--export", "files@customer.example"], check=True, capture_output=True)
    return home, public.stdout.decode()


def delivery_record(task_id: str, shown: dict[str, Any]) -> dict[str, Any]:
    """The task's one ``delivery.made`` record in the tenant's audit trail (GET /v1/audit)."""
    status, page = call("GET", "/v1/audit", query={"from": shown["created_at"][:10], "limit": "100"})
    assert status == 200, page
    [record] = [r for r in page["items"] if r["subject"] == task_id and r["detail"].get("channel") == "destination"]
    assert record["action"] == "delivery.made", record
    return dict(record["detail"])


def assert_the_delivered_files_own_hash_is_given(task_id: str, shown: dict[str, Any], delivered: bytes) -> None:
    """The task's delivery and the audit record name the file the customer received (the
    encrypted one), not the export's, which stays the task's own sha256."""
    sha256 = hashlib.sha256(delivered).hexdigest()
    assert sha256 != shown["sha256"]
    [delivery] = shown["deliveries"]
    assert (delivery["sha256"], delivery["size_bytes"]) == (sha256, len(delivered))
    record = delivery_record(task_id, shown)
    assert (record["sha256"], record["bytes"]) == (sha256, len(delivered))
    assert record["export_sha256"] == shown["sha256"]


def sftp_destination(server: LocalSftpServer, encryption: dict[str, Any]) -> str:
    body = {
        "name": "Encrypted SFTP",
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
        "encryption": encryption,
    }
    status, created = call("POST", "/v1/destinations", body)
    assert status == 201, created
    return str(created["destination_id"])


def test_an_openpgp_delivery_decrypts_with_gpg_to_the_downloaded_bytes(
    sftp: LocalSftpServer, running_aws: Resources, customer_key: tuple[Path, str]
) -> None:
    home, public_key = customer_key
    destination_id = sftp_destination(sftp, {"kind": "pgp", "pgp_public_key": public_key})
    with receiver([204]) as hook:
        task_id = submit(export_body([destination_id], path_template="{file}", callback_url=hook.url))
        run_queued_work(running_aws)
        shown = wait_for(lambda: deliveries_ended(task_id))
        completed, delivered_hook = (json.loads(call.body) for call in hook.wait_for(2))

    [delivery] = shown["deliveries"]
    assert delivery["status"] == "DELIVERED", delivery
    assert delivery["remote_path"] == f"/upload/{shown['file_name']}.pgp"
    delivered = sftp.root / "upload" / f"{shown['file_name']}.pgp"
    plain = subprocess.run(
        [
            tool("gpg"),
            "--homedir",
            str(home),
            "--batch",
            "--pinentry-mode",
            "loopback",
            "--passphrase",
            "",
            "--decrypt",
            str(delivered),
        ],
        check=True,
        capture_output=True,
    ).stdout
    assert plain == downloaded(shown)
    assert delivered.read_bytes() != plain
    sidecar = (sftp.root / "upload" / f"{shown['file_name']}.pgp.sha256").read_text()
    assert sidecar == f"{hashlib.sha256(delivered.read_bytes()).hexdigest()}  {shown['file_name']}.pgp\n"
    assert_the_delivered_files_own_hash_is_given(task_id, shown, delivered.read_bytes())
    # The export.delivered webhook names the same file: the encrypted one, beside the export's own.
    assert (completed["type"], delivered_hook["type"]) == ("export.completed", "export.delivered")
    assert delivered_hook["data"]["delivery"]["sha256"] == hashlib.sha256(delivered.read_bytes()).hexdigest()
    assert delivered_hook["data"]["sha256"] == shown["sha256"]


def test_a_zip_delivery_to_the_customers_bucket_opens_with_7z_and_the_password_only(
    running_aws: Resources, tmp_path: Path
) -> None:
    customer_s3().create_bucket(Bucket="acme-vault")
    body = {
        "name": "Vault",
        "target": {
            "kind": "s3",
            "bucket": "acme-vault",
            "region": "us-east-1",
            "role_arn": "arn:aws:iam::210987654321:role/exports-delivery",
        },
        "encryption": {"kind": "zip", "zip_password": ZIP_PASSWORD},
    }
    status, created = call("POST", "/v1/destinations", body)
    assert status == 201, created
    task_id = submit(export_body([created["destination_id"]], path_template="{file}"))
    run_queued_work(running_aws)
    shown = wait_for(lambda: deliveries_ended(task_id))

    [delivery] = shown["deliveries"]
    assert delivery["status"] == "DELIVERED", delivery
    assert delivery["remote_path"] == f"{shown['file_name']}.zip"
    archive = tmp_path / "delivered.zip"
    stored = customer_s3().get_object(Bucket="acme-vault", Key=delivery["remote_path"])
    archive.write_bytes(stored["Body"].read())
    assert stored["Metadata"] == {"sha256": hashlib.sha256(archive.read_bytes()).hexdigest()}
    assert_the_delivered_files_own_hash_is_given(task_id, shown, archive.read_bytes())

    listing = subprocess.run(
        [tool("7z"), "l", "-slt", f"-p{ZIP_PASSWORD}", str(archive)], check=True, capture_output=True, text=True
    )
    assert "Method = AES-256 Deflate" in listing.stdout, listing.stdout
    opened = subprocess.run(
        [tool("7z"), "x", "-so", f"-p{ZIP_PASSWORD}", str(archive), shown["file_name"]], check=True, capture_output=True
    ).stdout
    assert opened == downloaded(shown)
    wrong = subprocess.run(
        [tool("7z"), "x", "-so", "-pnot the password", str(archive)], check=False, capture_output=True
    )
    assert wrong.returncode != 0 and wrong.stdout != opened
