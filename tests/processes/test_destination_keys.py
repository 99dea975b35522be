"""The key pair, fingerprints and ExternalId the service generates for destinations."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat, load_ssh_private_key

from exports.finishing.destinations.keys import fingerprint, new_external_id, new_key_pair


def test_a_key_pair_is_an_openssh_private_key_and_its_public_line() -> None:
    pair = new_key_pair("dst_01")
    private = load_ssh_private_key(pair.private_key.encode(), password=None)
    algorithm, blob, comment = pair.public_key.split()

    assert algorithm == "ssh-ed25519" and comment == "dst_01"
    assert pair.fingerprint == fingerprint(pair.public_key)
    assert new_key_pair("dst_01").fingerprint != pair.fingerprint  # fresh every time
    own_public = private.public_key().public_bytes(Encoding.OpenSSH, PublicFormat.OpenSSH).decode()
    assert own_public == f"{algorithm} {blob}"  # the line is the private key's own public key


@pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="OpenSSH's ssh-keygen is not installed")
def test_the_fingerprint_is_the_one_ssh_keygen_prints(tmp_path: Path) -> None:
    pair = new_key_pair("dst_01")
    public = tmp_path / "key.pub"
    public.write_text(pair.public_key + "\n")
    printed = subprocess.run(["ssh-keygen", "-lf", str(public)], capture_output=True, text=True, check=True).stdout

    assert printed.split()[1] == pair.fingerprint


@pytest.mark.parametrize("line", ["", "ssh-ed25519", "ssh-ed25519 not*base64"])
def test_a_line_that_is_no_public_key_has_no_fingerprint(line: str) -> None:
    with pytest.raises(ValueError, match="not an OpenSSH public key line"):
        fingerprint(line)


def test_external_ids_are_random_and_fit_iams_pattern() -> None:
    first, second = new_external_id(), new_external_id()
    assert first != second and len(first) == 48 and first.isalnum()
