"""What the service generates for a destination: its SSH key pair, its ExternalId, and the
fingerprints of SSH public keys (as OpenSSH prints them), through ``cryptography``: no
hand-written crypto."""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import dataclass

from exports.core.config.destinations import Destinations


@dataclass(frozen=True)
class KeyPair:
    """An Ed25519 key pair: the private key in OpenSSH's format (kept as a secret) and the
    public key as one ``authorized_keys`` line (shown to the customer)."""

    private_key: str
    public_key: str

    @property
    def fingerprint(self) -> str:
        """The public key's SHA-256 fingerprint."""
        return fingerprint(self.public_key)


def new_key_pair(comment: str) -> KeyPair:
    """A fresh key pair; ``comment`` ends the public key's line (the destination's id, so the
    customer knows whose key it is in their ``authorized_keys``)."""
    # Imported here: the API's other routes never load cryptography's bindings (cold starts).
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
    ).decode()
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return KeyPair(private_key=private, public_key=f"{public.decode()} {comment}")


def fingerprint(public_key: str) -> str:
    """``SHA256:...`` of an OpenSSH public key line (``ssh-ed25519 AAAA... comment``), as
    ``ssh-keygen -lf`` prints it; ``ValueError`` for a line that is not one."""
    parts = public_key.split()
    if len(parts) < 2:
        raise ValueError("not an OpenSSH public key line")
    try:
        blob = base64.b64decode(parts[1], validate=True)
    except ValueError as error:
        raise ValueError("not an OpenSSH public key line") from error
    return fingerprint_of_blob(blob)


def fingerprint_of_blob(blob: bytes) -> str:
    """``SHA256:...`` of a public key in SSH wire format (what a server sends as its host key)."""
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def new_external_id() -> str:
    """A random ExternalId for a destination's role: the service's, so no tenant can choose
    another tenant's (the confused deputy)."""
    return secrets.token_hex(Destinations.EXTERNAL_ID_BYTES)
