"""Destinations as the domain states them: what a valid S3 or SFTP destination is, the host key
that must be pinned, encryption's needs, who may manage and use one, the confirmation of a
fetched host key, and the secrets that never show."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import SecretStr, ValidationError

from exports.core.caller import AccessRule, Caller
from exports.finishing.destinations.kind import HostKeyMismatch
from exports.finishing.destinations.kinds.s3 import ServerSideEncryption
from exports.finishing.destinations.kinds.sftp import SftpAuth, SftpTarget
from exports.finishing.destinations.model import (
    DestinationAccess,
    DestinationState,
    Encryption,
    EncryptionKind,
    UseRule,
    confirm_host_key,
)
from exports.finishing.destinations.secrets import DestinationSecrets
from tests.builders_destinations import HOST_KEY, NOW, destination, s3_target, sftp_target

PGP_KEY = "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmDMEZ...\n-----END PGP PUBLIC KEY BLOCK-----\n"


def _error_fields(error: ValidationError) -> set[str]:
    return {".".join(str(part) for part in problem["loc"]) for problem in error.errors()}


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"bucket": "AB"}, "bucket"),
        ({"bucket": "Acme-Exports"}, "bucket"),
        ({"bucket": "acme..exports"}, "bucket"),
        ({"bucket": "192.168.1.10"}, "bucket"),
        ({"bucket": "xn--acme"}, "bucket"),
        ({"bucket": "acme-s3alias"}, "bucket"),
        ({"prefix": "/daily/"}, "prefix"),
        ({"prefix": "daily//x"}, "prefix"),
        ({"prefix": "daily/../other"}, "prefix"),
        ({"prefix": "daily\n"}, "prefix"),
        ({"prefix": "x" * 513}, "prefix"),
        ({"region": "Europe"}, "region"),
        ({"role_arn": "arn:aws:iam::123:role/x"}, "role_arn"),
        ({"role_arn": "arn:aws:iam::210987654321:user/x"}, "role_arn"),
        ({"role_arn": "arn:aws:iam::210987654321:role/*"}, "role_arn"),
        ({"external_id": "x"}, "external_id"),
        ({"unknown": 1}, "unknown"),
    ],
)
def test_an_invalid_s3_target_names_its_field(changes: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as refused:
        s3_target(**changes)
    assert field in _error_fields(refused.value)


def test_sse_kms_needs_a_key_in_the_buckets_region_and_sse_s3_takes_none() -> None:
    key = "arn:aws:kms:eu-west-1:210987654321:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    assert s3_target(server_side_encryption=ServerSideEncryption.SSE_KMS, kms_key_arn=key).kms_key_arn == key
    with pytest.raises(ValidationError, match="kms_key_arn must be a KMS key ARN"):
        s3_target(server_side_encryption=ServerSideEncryption.SSE_KMS)
    with pytest.raises(ValidationError, match="bucket's region"):
        elsewhere = key.replace("eu-west-1", "us-east-1")
        s3_target(server_side_encryption=ServerSideEncryption.SSE_KMS, kms_key_arn=elsewhere)
    with pytest.raises(ValidationError, match="aws:kms only"):
        s3_target(kms_key_arn=key)


def test_an_s3_target_knows_the_customers_account() -> None:
    assert s3_target(role_arn="arn:aws:iam::210987654321:role/path/to/role").account_id == "210987654321"


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"host": "bad_host.example"}, "host"),
        ({"host": "-leading.example"}, "host"),
        ({"host": ""}, "host"),
        ({"host": "a" * 64 + ".example"}, "host"),
        ({"port": 0}, "port"),
        ({"port": 65536}, "port"),
        ({"port": "22"}, "port"),
        ({"username": ""}, "username"),
        ({"username": "two words"}, "username"),
        ({"path": "/upload/../etc"}, "path"),
        ({"path": "/up\x00load"}, "path"),
        ({"host_key_fingerprint": "MD5:aa:bb"}, "host_key_fingerprint"),
    ],
)
def test_an_invalid_sftp_target_names_its_field(changes: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as refused:
        sftp_target(**changes)
    assert field in _error_fields(refused.value)


def test_sftp_hosts_are_names_or_address_literals_in_lower_case() -> None:
    assert sftp_target(host="SFTP.Acme.Example").host == "sftp.acme.example"
    assert sftp_target(host="203.0.113.7").host == "203.0.113.7"
    assert sftp_target(host="2001:db8::7").host == "2001:db8::7"


def test_an_sftp_target_is_never_without_a_host_key_to_pin() -> None:
    with pytest.raises(ValidationError, match="needs its host key"):
        sftp_target(host_key_fingerprint=None)
    offered = sftp_target(host_key_fingerprint=None, offered_host_key_fingerprint=HOST_KEY)
    assert offered.host_key_fingerprint is None


def test_key_authentication_needs_the_services_public_key() -> None:
    with pytest.raises(ValidationError, match="public key"):
        sftp_target(public_key=None)
    assert sftp_target(auth=SftpAuth.PASSWORD, public_key=None).auth is SftpAuth.PASSWORD


def test_a_destination_waits_for_confirmation_exactly_while_its_host_key_is_unpinned() -> None:
    unpinned = sftp_target(host_key_fingerprint=None, offered_host_key_fingerprint=HOST_KEY)
    with pytest.raises(ValidationError, match="waits for confirmation"):
        destination(target=unpinned)  # ACTIVE
    with pytest.raises(ValidationError, match="waits for confirmation"):
        destination(target=sftp_target(), state=DestinationState.HOST_KEY_UNCONFIRMED)
    assert destination(target=unpinned, state=DestinationState.HOST_KEY_UNCONFIRMED).kind == "sftp"


def test_confirming_pins_only_the_fingerprint_shown() -> None:
    unpinned = sftp_target(host_key_fingerprint=None, offered_host_key_fingerprint=HOST_KEY)
    waiting = destination(target=unpinned, state=DestinationState.HOST_KEY_UNCONFIRMED)

    with pytest.raises(HostKeyMismatch, match="not the one shown"):
        confirm_host_key(waiting, "SHA256:" + "B" * 43, NOW)
    confirmed = confirm_host_key(waiting, HOST_KEY, NOW)

    assert confirmed.state is DestinationState.ACTIVE
    assert isinstance(confirmed.target, SftpTarget)
    assert confirmed.target.host_key_fingerprint == HOST_KEY
    assert confirmed.target.offered_host_key_fingerprint is None
    with pytest.raises(HostKeyMismatch, match="no fetched host key"):
        confirm_host_key(confirmed, HOST_KEY, NOW)
    with pytest.raises(HostKeyMismatch):
        confirm_host_key(destination(), HOST_KEY, NOW)  # S3


def test_pgp_needs_an_armoured_public_key_and_only_pgp_takes_one() -> None:
    assert Encryption(kind=EncryptionKind.PGP, pgp_public_key=PGP_KEY).pgp_public_key == PGP_KEY
    with pytest.raises(ValidationError, match="armoured key"):
        Encryption(kind=EncryptionKind.PGP)
    with pytest.raises(ValidationError, match="armoured key"):
        Encryption(kind=EncryptionKind.PGP, pgp_public_key="-----BEGIN PGP PRIVATE KEY BLOCK-----")
    with pytest.raises(ValidationError, match="pgp encryption only"):
        Encryption(kind=EncryptionKind.ZIP, pgp_public_key=PGP_KEY)


def test_which_destinations_keep_a_secret() -> None:
    assert not destination().needs_secret
    assert destination(encryption=Encryption(kind=EncryptionKind.ZIP)).needs_secret
    assert destination(target=sftp_target()).needs_secret


def test_a_zip_password_is_long_enough_and_no_secret_shows_in_a_repr_or_dump() -> None:
    with pytest.raises(ValidationError) as refused:
        DestinationSecrets(zip_password=SecretStr("short"))
    assert _error_fields(refused.value) == {"zip_password"}

    secrets = DestinationSecrets(password=SecretStr("hunter2-hunter2"), zip_password=SecretStr("correct horse battery"))
    assert "hunter2" not in repr(secrets) and "hunter2" not in secrets.model_dump_json()
    assert DestinationSecrets.from_stored(secrets.stored()) == secrets


ACCESS = DestinationAccess(
    manage=AccessRule(groups=("admin",)), use=AccessRule(scopes=("exports/deliver",)), groups_claim="cognito:groups"
)


def _caller(groups: tuple[str, ...] = (), scope: str = "") -> Caller:
    return Caller("u", {"cognito:groups": list(groups), "scope": scope})


def test_managers_manage_and_use_and_users_use_within_both_rules() -> None:
    restricted = destination(use=UseRule(groups=("finance",)))

    assert ACCESS.may_manage(_caller(("admin",)))
    assert not ACCESS.may_manage(_caller(("finance",), "exports/deliver"))
    assert ACCESS.may_use(_caller(("admin",)), restricted)
    assert ACCESS.may_use(_caller(("finance",), "exports/deliver"), restricted)
    assert not ACCESS.may_use(_caller(("sales",), "exports/deliver"), restricted)  # the destination's rule
    assert not ACCESS.may_use(_caller(("finance",)), restricted)  # the deployment's rule
    assert ACCESS.may_use(_caller(("sales",), "exports/deliver"), destination())
