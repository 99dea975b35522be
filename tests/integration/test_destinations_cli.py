"""``exportctl destinations`` and ``exportctl submit --destination`` against the real API handler
on moto and a real SFTP server (the requests handed to the handler as API Gateway would, as in
test_destinations_sdk): create with a password read from a file, list, verify, submit with a
path template and see the delivery in ``status``; another tenant gets exit 4 (not found)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import httpx

from exports_client.cli import main
from exports_client.output import ExitCode
from local_stack.embedded_aws import Resources
from local_stack.sftp_server import LocalSftpServer
from tests.integration.test_destinations_sdk import handled, sftp  # noqa: F401 (the fixture)
from tests.integration.test_lifecycle import run_queued_work, wait_for


def exportctl(token: str, *args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    argv = [*args, "--url", "https://api.example.test", "--token", token]
    code = main(argv, transport=httpx.MockTransport(handled), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_exportctl_creates_verifies_and_delivers_to_an_sftp_destination(
    sftp: LocalSftpServer,  # noqa: F811 (the fixture)
    running_aws: Resources,
    tmp_path: Path,
) -> None:
    # Given the SFTP user's password in a file
    password = tmp_path / "password"
    password.write_text("open sesame\n")

    # When acme's admin creates a destination for it, with the server's key pinned
    code, out, err = exportctl(
        "acme-admin", "destinations", "create", "sftp", "Acme SFTP", "--json",
        "--host", "127.0.0.1", "--port", str(sftp.port), "--user", "acme", "--path", "/upload",
        "--password-file", str(password), "--host-key-fingerprint", sftp.fingerprint,
    )  # fmt: skip
    assert code == ExitCode.OK, err
    created = json.loads(out)
    destination_id = created["destination_id"]
    assert created["state"] == "ACTIVE" and "open sesame" not in out

    # Then it is listed and verifies, for acme only
    code, out, _ = exportctl("acme-admin", "destinations", "list")
    assert code == ExitCode.OK and destination_id in out
    code, out, _ = exportctl("acme-admin", "destinations", "verify", destination_id)
    assert code == ExitCode.OK and out.startswith("OK")
    for action in ("get", "verify", "delete"):
        code, _, err = exportctl("initech-admin", "destinations", action, destination_id)
        assert code == ExitCode.NOT_FOUND, err

    # And an export submitted to it is delivered where the template says, as status shows
    code, out, err = exportctl(
        "acme-admin", "submit", "orders", "--from", "2025-03-30", "--to", "2025-03-31", "--json",
        "--destination", destination_id, "--path-template", "{task_id}-{file}",
    )  # fmt: skip
    assert code == ExitCode.OK, err
    task_id = json.loads(out)["task_id"]
    run_queued_work(running_aws)

    def delivered() -> dict[str, object] | None:
        task = json.loads(exportctl("acme-admin", "status", task_id, "--json")[1])
        return task if task["deliveries"][0]["status"] != "PENDING" else None

    task = wait_for(delivered)
    remote_path = f"/upload/{task_id}-{task['file_name']}"
    assert task["deliveries"][0]["remote_path"] == remote_path
    assert (sftp.root / remote_path.lstrip("/")).is_file()
    code, out, _ = exportctl("acme-admin", "status", task_id)
    assert f"{destination_id} DELIVERED (1 attempt) {remote_path}" in out
