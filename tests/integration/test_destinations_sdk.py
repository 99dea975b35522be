"""The Python SDK's destination calls against the real API handler on moto and a real SFTP
server (each HTTP request handed to the handler as API Gateway would, with the token's claims):
create, list, get, verify, change, delete; another tenant's destination is NotFoundError; an
export submitted with destinations shows its deliveries through the SDK."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from exports_client import ExportsClient, NotFoundError
from functions.submit import handler as api
from local_stack.embedded_aws import Resources
from local_stack.sftp_server import LocalSftpServer, SftpUser
from tests.builders import FakeContext, http_event
from tests.integration.test_lifecycle import run_queued_work, wait_for

CLAIMS = {
    "acme-admin": ("alice", {"custom:tenant_id": "acme", "cognito:groups": "[admin]"}),
    "initech-admin": ("carol", {"custom:tenant_id": "initech", "cognito:groups": "[admin]"}),
}


def handled(request: httpx.Request) -> httpx.Response:
    """The request as the API function answers it behind API Gateway's JWT authorizer."""
    user, claims = CLAIMS[request.headers["authorization"].removeprefix("Bearer ")]
    query = dict(request.url.params)
    headers = {k: v for k, v in request.headers.items() if k.lower() in ("content-type", "idempotency-key")}
    body = request.content.decode() if request.content else None
    event = http_event(
        request.method, request.url.path, user=user, claims=claims, headers=headers, query=query or None, raw_body=body
    )
    result = api.lambda_handler(event, FakeContext())
    return httpx.Response(result["statusCode"], headers=result.get("headers") or {}, content=result.get("body") or "")


def client(token: str) -> ExportsClient:
    return ExportsClient("https://api.example.test", token, transport=httpx.MockTransport(handled))


@pytest.fixture
def sftp(tmp_path: Path, running_aws: Resources) -> Iterator[LocalSftpServer]:
    (tmp_path / "upload").mkdir()
    server = LocalSftpServer(tmp_path)
    server.users["acme"] = SftpUser(password="open sesame")
    server.start()
    yield server
    server.shutdown()


def test_the_sdk_manages_verifies_and_delivers_to_a_destination(sftp: LocalSftpServer, running_aws: Resources) -> None:
    target = {
        "kind": "sftp",
        "host": "127.0.0.1",
        "port": sftp.port,
        "username": "acme",
        "path": "/upload",
        "auth": "password",
        "password": "open sesame",
        "host_key_fingerprint": sftp.fingerprint,
    }
    with client("acme-admin") as acme, client("initech-admin") as initech:
        created = acme.create_destination("Acme SFTP", target, idempotency_key="create-once")
        again = acme.create_destination("Acme SFTP", target, idempotency_key="create-once")
        assert again.destination_id == created.destination_id and created.state == "ACTIVE"
        assert [d.destination_id for d in acme.list_destinations().items] == [created.destination_id]
        assert acme.verify_destination(created.destination_id).ok is True
        renamed = acme.update_destination(created.destination_id, name="Acme drop")
        assert renamed.name == acme.get_destination(created.destination_id).name == "Acme drop"
        with pytest.raises(NotFoundError):
            initech.get_destination(created.destination_id)
        assert initech.list_destinations().items == []

        accepted = acme.submit(
            "orders",
            {"date_from": "2025-03-30", "date_to": "2025-03-31"},
            destinations=[created.destination_id],
            path_template="{task_id}-{file}",
        )
        run_queued_work(running_aws)
        task = wait_for(lambda: (t := acme.get(accepted.task_id)).deliveries[0].status != "PENDING" and t)
        [delivery] = task.deliveries
        assert delivery.status == "DELIVERED" and delivery.remote_path == f"/upload/{accepted.task_id}-{task.file_name}"

        sidecar = sftp.root / "upload" / f"{accepted.task_id}-{task.file_name}.sha256"
        assert sidecar.read_text().split()[0] == task.sha256
        acme.delete_destination(created.destination_id)
        with pytest.raises(NotFoundError):
            acme.get_destination(created.destination_id)
