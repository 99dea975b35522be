"""A key that cannot encrypt is refused with words the customer can act on: Sequoia's own text
(a parser's message, a Rust backtrace) goes to the operator's log only."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from exports.finishing.delivery import encryption
from exports.finishing.destinations.model import Encryption, EncryptionKind
from tests.builders_destinations import destination

# Armoured, so the destination takes it; no OpenPGP packet inside, so nothing can encrypt to it.
UNUSABLE_KEY = "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nbm90IGEga2V5\n-----END PGP PUBLIC KEY BLOCK-----\n"


def test_an_unusable_openpgp_key_is_refused_in_the_customers_words(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    local = tmp_path / "orders.csv"
    local.write_bytes(b"id\n1\n")
    given = destination(encryption=Encryption(kind=EncryptionKind.PGP, pgp_public_key=UNUSABLE_KEY))

    with caplog.at_level(logging.WARNING), pytest.raises(encryption.EncryptionRefused) as refused:
        encryption.prepare(given, None, local, "orders.csv", tmp_path)

    message = str(refused.value)
    assert message.startswith("the destination's OpenPGP key cannot encrypt: set pgp_public_key")
    assert "backtrace" not in message.lower() and "sequoia" not in message.lower() and "\n" not in message
    assert any("detail" in record.__dict__ for record in caplog.records)
