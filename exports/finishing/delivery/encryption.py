"""Encryption at delivery, as the destination asks (docs/destinations.md): the file as it is,
OpenPGP to the customer's public key, or a ZIP with AES-256 and the destination's password.

No cryptography of ours: OpenPGP is Sequoia's (pysequoia: a maintained implementation of RFC 9580
that GnuPG reads), the ZIP is pyzipper's WinZip AE-2 (AES-256 in CTR mode with HMAC-SHA1, the
format 7-Zip, WinZip and macOS's Archive Utility open). The file is encrypted from the function's
ephemeral storage to a second file there, never held whole in memory. S3's own server-side
encryption applies on top, unchanged.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from exports.finishing.destinations.model import Destination, EncryptionKind
from exports.finishing.destinations.secrets import DestinationSecrets

logger = logging.getLogger(__name__)
# How much of a library's refusal the log keeps (its first lines say what was wrong).
_DETAIL_MAX: Final = 500
# What each kind adds to the file's name at the destination.
SUFFIXES: Final = {EncryptionKind.NONE: "", EncryptionKind.PGP: ".pgp", EncryptionKind.ZIP: ".zip"}


class EncryptionRefused(ValueError):
    """The destination's key or password cannot encrypt (a key without an encryption subkey)."""


@dataclass(frozen=True)
class Prepared:
    """The file to deliver and the name it gets."""

    path: Path
    file_name: str


def prepare(
    destination: Destination, secrets: DestinationSecrets | None, local: Path, file_name: str, scratch: Path
) -> Prepared:
    """``local`` as ``destination`` wants it, written under ``scratch`` when encrypted."""
    kind = destination.encryption.kind
    if kind is EncryptionKind.NONE:
        return Prepared(local, file_name)
    out = scratch / f"{destination.destination_id}{SUFFIXES[kind]}"
    if kind is EncryptionKind.PGP:
        _pgp(destination.encryption.pgp_public_key or "", local, out)
    else:
        password = secrets.zip_password if secrets else None
        if password is None:
            raise EncryptionRefused("the destination's ZIP password is gone: set it again")
        _zip(password.get_secret_value(), local, file_name, out)
    return Prepared(out, file_name + SUFFIXES[kind])


def _pgp(public_key: str, local: Path, out: Path) -> None:
    """A binary OpenPGP message to the key's encryption subkeys (what ``gpg --decrypt`` reads)."""
    from pysequoia import Cert, encrypt_file

    try:
        cert = Cert.from_bytes(public_key.encode())
        encrypt_file(str(local), str(out), recipients=[cert], armor=False)
    except Exception as error:  # pysequoia raises plain exceptions for unusable keys
        # Sequoia's text (a parser's words, a Rust backtrace) is for the operator's log only: the
        # customer reads what to change (issue 49: no library text reaches a caller).
        logger.warning("OpenPGP key refused", extra={"detail": str(error)[:_DETAIL_MAX]})
        raise EncryptionRefused(
            "the destination's OpenPGP key cannot encrypt: set pgp_public_key to an armoured OpenPGP public key"
            " with an encryption subkey (gpg --armor --export <key id>)"
        ) from None


def _zip(password: str, local: Path, file_name: str, out: Path) -> None:
    """One entry, ``file_name``, deflated and encrypted with AES-256 (WinZip AE-2)."""
    import pyzipper

    with pyzipper.AESZipFile(out, "w", compression=pyzipper.ZIP_DEFLATED, encryption=pyzipper.WZ_AES) as archive:
        archive.setpassword(password.encode())
        archive.setencryption(pyzipper.WZ_AES, nbits=256)
        archive.write(local, arcname=file_name)
