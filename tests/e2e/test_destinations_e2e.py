"""Destinations through `make run`'s stack over real HTTP, as its banner shows them: the banner's
curl bodies create an SFTP destination on the stack's own SFTP server and an S3 destination in the
customer's account of the embedded AWS, as carol (a destination manager of initech); an export
named with both is delivered byte-equal (sha256) to the download; alice (another tenant) can
neither see, verify nor use them."""

import hashlib
import json
import re
import shlex
import time
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.e2e.test_export_types_e2e import finished
from tests.stack_process import Stack

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def stack(postgres_stack: Stack) -> Stack:
    return postgres_stack


def banner_posts(output: str) -> list[dict[str, Any]]:
    """The bodies of the banner's destination section's curl POSTs, as the shell passes them."""
    section = output.split("Deliver to the customer's own storage", 1)[1].split("Ctrl-C stops everything", 1)[0]
    bodies = []
    for command in section.split("curl -s -X POST")[1:]:
        words = shlex.split(command.split("\n  curl", 1)[0].replace("\\\n", " "))
        bodies.append(json.loads(words[words.index("-d") + 1]))
    return bodies


def test_the_banners_destinations_take_an_export_whole_and_only_their_tenant_sees_them(stack: Stack) -> None:
    output = stack.output()
    assert "as carol, a destination manager" in output
    sftp_body, s3_body, export_body = banner_posts(output)
    files = Path(re.search(r"files land in (\S+);", output).group(1))
    carol, alice = stack.headers("carol"), stack.headers("alice")

    ids = []
    for body in (sftp_body, s3_body):
        created = requests.post(f"{stack.url}/v1/destinations", json=body, headers=carol, timeout=30)
        assert created.status_code == 201, created.text
        ids.append(created.json()["destination_id"])
        verified = requests.post(f"{stack.url}/v1/destinations/{ids[-1]}/verify", headers=carol, timeout=30)
        assert verified.json()["ok"] is True, verified.text
    export = {**export_body, "destinations": ids}
    accepted = requests.post(f"{stack.url}/v1/exports", json=export, headers=carol, timeout=30)
    assert accepted.status_code == 202, accepted.text
    task_id = accepted.json()["task_id"]
    view, content = finished(stack, task_id, user="carol")

    deadline = time.monotonic() + 60
    while any(d["status"] == "PENDING" for d in view["deliveries"]) and time.monotonic() < deadline:
        time.sleep(0.3)
        view = requests.get(f"{stack.url}/v1/exports/{task_id}", headers=carol, timeout=10).json()
    assert [d["status"] for d in view["deliveries"]] == ["DELIVERED", "DELIVERED"], view["deliveries"]
    sftp_delivery = view["deliveries"][0]
    delivered = files / sftp_delivery["remote_path"].removeprefix("/upload/")
    assert hashlib.sha256(delivered.read_bytes()).hexdigest() == view["sha256"] == hashlib.sha256(content).hexdigest()

    # Another tenant: not listed, not found, not verifiable, not usable.
    assert requests.get(f"{stack.url}/v1/destinations", headers=alice, timeout=10).json()["items"] == []
    for destination_id in ids:
        assert (
            requests.get(f"{stack.url}/v1/destinations/{destination_id}", headers=alice, timeout=10).status_code == 404
        )
        verify = requests.post(f"{stack.url}/v1/destinations/{destination_id}/verify", headers=alice, timeout=10)
        assert verify.status_code in (403, 404)
    refused = requests.post(f"{stack.url}/v1/exports", json=export, headers=alice, timeout=10)
    assert (refused.status_code, refused.json()["error"]["field"]) == (404, "destinations.0")


# An armoured block the service takes at creation (it checks the armour) but that holds no key
# OpenPGP can encrypt to: every delivery to it FAILS at once (ENCRYPTION_REFUSED), for the
# customer to fix by changing the destination (docs/destinations.md).
UNUSABLE_PGP_KEY = "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nbm90IGEga2V5\n-----END PGP PUBLIC KEY BLOCK-----\n"


def deliveries_ended(stack: Stack, task_id: str, user: str, timeout: float = 60) -> dict[str, Any]:
    headers = stack.headers(user)
    deadline = time.monotonic() + timeout
    while True:
        view: dict[str, Any] = requests.get(f"{stack.url}/v1/exports/{task_id}", headers=headers, timeout=10).json()
        if (
            view["deliveries"] and all(d["status"] != "PENDING" for d in view["deliveries"])
        ) or time.monotonic() > deadline:
            return view
        time.sleep(0.3)


def test_a_failed_delivery_fixed_on_the_customers_side_is_retried_on_request_and_lands_once(stack: Stack) -> None:
    output = stack.output()
    sftp_body, _, export_body = banner_posts(output)
    files = Path(re.search(r"files land in (\S+);", output).group(1))
    carol = stack.headers("carol")

    # Given carol's SFTP destination whose OpenPGP key cannot encrypt, and an export to it
    body = {**sftp_body, "name": "Retry me", "encryption": {"kind": "pgp", "pgp_public_key": UNUSABLE_PGP_KEY}}
    created = requests.post(f"{stack.url}/v1/destinations", json=body, headers=carol, timeout=30)
    assert created.status_code == 201, created.text
    destination_id = created.json()["destination_id"]
    export = {**export_body, "destinations": [destination_id], "path_template": "retried/{task_id}-{file}"}
    accepted = requests.post(f"{stack.url}/v1/exports", json=export, headers=carol, timeout=30)
    assert accepted.status_code == 202, accepted.text
    task_id = accepted.json()["task_id"]
    _, content = finished(stack, task_id, user="carol")

    # When its delivery has FAILED at once (the export still COMPLETED)
    failed = deliveries_ended(stack, task_id, "carol")
    [delivery] = failed["deliveries"]
    assert (failed["status"], delivery["status"], delivery["error"]["code"]) == (
        "COMPLETED",
        "FAILED",
        "ENCRYPTION_REFUSED",
    )
    retry = f"{stack.url}/v1/exports/{task_id}/deliveries/{destination_id}/retry"

    # ... and once carol changes the destination (no encryption), she retries the delivery
    changed = requests.patch(
        f"{stack.url}/v1/destinations/{destination_id}",
        json={"encryption": {"kind": "none"}},
        headers=carol,
        timeout=30,
    )
    assert changed.status_code == 200, changed.text
    answer = requests.post(retry, headers=carol, timeout=30)

    # Then 202 with the delivery PENDING again, then DELIVERED: one file and its sidecar, byte-equal
    assert answer.status_code == 202, answer.text
    assert answer.headers["Location"] == f"/v1/exports/{task_id}"
    assert [(d["status"], d["requested_retries"]) for d in answer.json()["deliveries"]] == [("PENDING", 1)]
    shown = deliveries_ended(stack, task_id, "carol")
    [delivered] = shown["deliveries"]
    assert (delivered["status"], delivered["attempts"]) == ("DELIVERED", 2), delivered
    landed = files / "retried"
    name = f"{task_id}-{shown['file_name']}"
    assert sorted(p.name for p in landed.iterdir() if p.name.startswith(task_id)) == [name, f"{name}.sha256"]
    assert (landed / name).read_bytes() == content

    # And a second retry is a 409 naming why; another tenant's is a 404 that tells nothing
    again = requests.post(retry, headers=carol, timeout=30)
    assert (again.status_code, again.json()["error"]["code"]) == (409, "DELIVERY_ALREADY_DELIVERED")
    other = requests.post(retry, headers=stack.headers("alice"), timeout=30)
    assert (other.status_code, other.json()["error"]["code"]) == (404, "TASK_NOT_FOUND")
