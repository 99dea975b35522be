"""TLS to a MySQL source on a real MariaDB that accepts TLS only (``require_secure_transport``,
as RDS with ``require_secure_transport = 1``): a secret's source verifies the server against the
runtime's trust store by default, a declared CA bundle (the RDS bundle's place) against that
file, and a certificate that cannot be verified fails the export for good. An RDS IAM token
(boto3's, signed with moto's credentials) is the password over verified TLS; an authentication
method the worker cannot answer fails for good saying what to do."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from moto import mock_aws

from exports.adapters import mysql_connections
from exports.adapters.clients import ClientFactory
from exports.adapters.mysql_connections import connection_settings, rds_token_maker
from exports.adapters.mysql_source import MySqlReader
from exports.domain.errors import ExportFailed, SourceCode
from exports.export_types.base import Unbounded
from exports.ports import SqlRead
from exports.sources.mysql.model import MySqlIamAuth, MySqlSource, SslMode
from local_stack.embedded_mariadb import READER_PASSWORD, READER_USER, EmbeddedMariaDB
from tests.tls import TestAuthority

READ = SqlRead(
    "SELECT VARIABLE_VALUE AS cipher FROM information_schema.SESSION_STATUS WHERE VARIABLE_NAME = 'Ssl_cipher'", {}
)


@pytest.fixture(scope="module")
def authority(tmp_path_factory: pytest.TempPathFactory) -> TestAuthority:
    return TestAuthority.create(tmp_path_factory.mktemp("ca"))


@pytest.fixture(scope="module")
def server(authority: TestAuthority, tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedMariaDB]:
    certificate = authority.issue(tmp_path_factory.mktemp("server"))
    running = EmbeddedMariaDB(
        tmp_path_factory.mktemp("mariadb-tls"), tls=(certificate.cert_file, certificate.key_file), require_tls=True
    )
    running.start()
    yield running
    running.stop()


@pytest.fixture(autouse=True)
def no_trust_store_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)


def runtime_trusts(monkeypatch: pytest.MonkeyPatch, bundle: Path | None) -> None:
    """The runtime's own trust store is ``bundle`` (None: it has none)."""
    monkeypatch.setattr(mysql_connections, "runtime_ca_bundle", lambda: None if bundle is None else str(bundle))


def reader(server: EmbeddedMariaDB, host: str = "127.0.0.1", base_dir: Path = Path("."), **tls: Any) -> MySqlReader:
    """A reader of a source behind a secret (which defaults to VERIFY_IDENTITY against "system")."""
    source = MySqlSource(kind="mysql", secret_arn="arn:aws:secretsmanager:eu-west-1:1:secret:db", **tls)
    secret = {
        "host": host,
        "port": server.port,
        "username": READER_USER,
        "password": READER_PASSWORD,
        "dbname": "mysql",
    }
    return MySqlReader("db", connection_settings("db", source, {}, lambda arn: secret, lambda auth: "", base_dir))


def cipher(reader: MySqlReader) -> str:
    (batch,) = list(reader.batches(READ, Unbounded()))
    return str(batch.rows[0][0])


def test_system_roots_are_the_runtimes_trust_store(
    server: EmbeddedMariaDB, authority: TestAuthority, monkeypatch: Any
) -> None:
    runtime_trusts(monkeypatch, authority.ca_file)

    assert cipher(reader(server)) != ""


def test_a_bundle_shipped_with_the_declaration_is_verified_against(
    server: EmbeddedMariaDB, authority: TestAuthority, monkeypatch: Any
) -> None:
    runtime_trusts(monkeypatch, None)

    assert cipher(reader(server, base_dir=authority.ca_file.parent, ssl_ca=authority.ca_file.name)) != ""


@pytest.mark.parametrize(
    ("trusted", "host", "reason"),
    [("other CA", "127.0.0.1", "does not chain to a trusted CA"), ("test CA", "localhost", "names another host")],
)
def test_a_certificate_that_cannot_be_verified_fails_for_good(
    server: EmbeddedMariaDB,
    authority: TestAuthority,
    monkeypatch: Any,
    tmp_path: Path,
    trusted: str,
    host: str,
    reason: str,
) -> None:
    other = TestAuthority.create(tmp_path, name="another CA")
    runtime_trusts(monkeypatch, authority.ca_file if trusted == "test CA" else other.ca_file)

    with pytest.raises(ExportFailed) as raised:
        cipher(reader(server, host=host))

    assert raised.value.code == SourceCode.TLS_UNVERIFIED
    assert reason in raised.value.message and "ssl_ca" in raised.value.message
    assert READER_PASSWORD not in raised.value.message


def test_a_connection_without_tls_is_refused_for_good(server: EmbeddedMariaDB) -> None:
    source = MySqlSource(kind="mysql", url_env="DB_URL")
    url = f"mysql://{READER_USER}:{READER_PASSWORD}@127.0.0.1:{server.port}/mysql?ssl_mode=DISABLED"
    plain = MySqlReader("db", connection_settings("db", source, {"DB_URL": url}, _none, _none, Path(".")))

    with pytest.raises(ExportFailed) as raised:
        cipher(plain)

    # MySQL 8 answers 3159 (SOURCE_ACCESS_DENIED, "requires TLS"); MariaDB 1045, as for a wrong password.
    assert raised.value.code == SourceCode.AUTH_FAILED
    assert "requires TLS" in raised.value.message


def test_a_declared_bundle_that_is_missing_fails_for_good(server: EmbeddedMariaDB, tmp_path: Path) -> None:
    with pytest.raises(ExportFailed) as raised:
        reader(server, ssl_ca=str(tmp_path / "gone.pem"))

    assert raised.value.code == SourceCode.TLS_UNVERIFIED and "cannot be read" in raised.value.message


def _none(_: Any) -> Any:
    raise AssertionError("not asked")


IAM_USER = "iam_exporter"


def iam_reader(server: EmbeddedMariaDB, make_token: Any) -> MySqlReader:
    """A reader of a source with RDS IAM authentication (TLS by default, VERIFY_IDENTITY)."""
    source = MySqlSource(
        kind="mysql",
        iam_auth=MySqlIamAuth(host="127.0.0.1", port=server.port, user=IAM_USER, database="mysql", region="eu-west-1"),
    )
    return MySqlReader("db", connection_settings("db", source, {}, _none, make_token, Path(".")))


def test_an_rds_iam_token_is_the_password_and_goes_only_over_verified_tls(
    server: EmbeddedMariaDB, authority: TestAuthority, monkeypatch: Any
) -> None:
    """RDS checks the token with its own plugin (mysql_clear_password, no MariaDB here has it):
    this MariaDB user's password is a real token boto3 signed with moto's credentials, so what is
    tested is the path the token takes: made by the worker's maker for the declared host, port,
    user and region, sent as the password, over TLS verified against the trust store."""
    made: list[str] = []

    def make_token(auth: Any) -> str:
        with mock_aws():
            made.append(rds_token_maker(ClientFactory())(auth))
        return made[0]  # the one the user was created with (a new one each second otherwise)

    make_token(MySqlIamAuth(host="127.0.0.1", port=server.port, user=IAM_USER, database="mysql", region="eu-west-1"))
    (token,) = made
    server.admin(
        f"DROP USER IF EXISTS '{IAM_USER}'@'%'",
        f"CREATE USER '{IAM_USER}'@'%' IDENTIFIED BY '{token}' REQUIRE SSL",
        f"GRANT SELECT ON mysql.* TO '{IAM_USER}'@'%'",
    )
    runtime_trusts(monkeypatch, authority.ca_file)

    assert token.startswith(f"127.0.0.1:{server.port}/?Action=connect&DBUser={IAM_USER}&")
    assert "%2Feu-west-1%2Frds-db%2Faws4_request" in token and "&X-Amz-Signature=" in token
    assert cipher(iam_reader(server, make_token)) != ""
    assert len(made) == 2  # asked again at the connection, never cached across connections
    other = TestAuthority.create(Path(authority.ca_file).parent / "other", name="another CA")
    runtime_trusts(monkeypatch, other.ca_file)
    with pytest.raises(ExportFailed) as raised:
        cipher(iam_reader(server, make_token))
    assert raised.value.code == SourceCode.TLS_UNVERIFIED and token not in raised.value.message


def test_an_authentication_method_the_worker_cannot_answer_fails_for_good_saying_what_to_do(
    server: EmbeddedMariaDB, authority: TestAuthority, monkeypatch: Any
) -> None:
    """MySQL 8's caching_sha2_password without TLS needs cryptography, which the worker does not
    ship; MariaDB's ed25519 needs pynacl the same way: PyMySQL raises the same error for both."""
    if "ed25519" not in server.admin("SHOW PLUGINS"):
        server.admin("INSTALL SONAME 'auth_ed25519'")
    server.admin(
        "DROP USER IF EXISTS 'edwards'@'%'",
        "CREATE USER 'edwards'@'%' IDENTIFIED VIA ed25519 USING PASSWORD('secret-pass')",
        "GRANT SELECT ON mysql.* TO 'edwards'@'%'",
    )
    runtime_trusts(monkeypatch, authority.ca_file)
    source = MySqlSource(kind="mysql", url_env="DB_URL", ssl_mode=SslMode.VERIFY_IDENTITY, ssl_ca="system")
    url = f"mysql://edwards:secret-pass@127.0.0.1:{server.port}/mysql"
    edwards = MySqlReader("db", connection_settings("db", source, {"DB_URL": url}, _none, _none, Path(".")))

    with pytest.raises(ExportFailed) as raised:
        cipher(edwards)

    assert raised.value.code == SourceCode.AUTH_FAILED
    assert "pynacl" in raised.value.message and "secret-pass" not in raised.value.message
