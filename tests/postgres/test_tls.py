"""TLS to a PostgreSQL source on a real server that accepts TLS only: ``sslrootcert=system`` is
the runtime's trust store (not the empty one of psycopg-binary's own OpenSSL), and a certificate
that cannot be verified fails the export for good with ``SOURCE_TLS_UNVERIFIED``."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from exports.core.errors import ExportFailed, SourceCode
from exports.core.export_type import Unbounded
from exports.sources.postgres import connections as postgres_connections
from exports.sources.postgres.connections import connection_settings
from exports.sources.postgres.model import PostgresSource, SslMode
from exports.sources.postgres.reader import PostgresReader
from exports.sources.sql.ports import SqlRead
from local_stack.embedded_postgres import TlsPostgres
from tests.stack_process import free_port
from tests.tls import TestAuthority

READ = SqlRead("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid() AND ssl", {})


@pytest.fixture(scope="module")
def authority(tmp_path_factory: pytest.TempPathFactory) -> TestAuthority:
    return TestAuthority.create(tmp_path_factory.mktemp("ca"))


@pytest.fixture(scope="module")
def server(authority: TestAuthority, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsPostgres]:
    certificate = authority.issue(tmp_path_factory.mktemp("server"))
    running = TlsPostgres(certificate.cert_file, certificate.key_file, free_port(), secrets.token_hex(8))
    running.start()
    yield running
    running.stop()


@pytest.fixture(autouse=True)
def no_trust_store_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on Lambda: no SSL_CERT_FILE or SSL_CERT_DIR (both OpenSSLs would read them)."""
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)


def runtime_trusts(monkeypatch: pytest.MonkeyPatch, bundle: Path | None) -> None:
    """The runtime's own trust store is ``bundle`` (None: it has none)."""
    monkeypatch.setattr(postgres_connections, "runtime_ca_bundle", lambda: None if bundle is None else str(bundle))


def reader(server: TlsPostgres, host: str = "127.0.0.1", **tls: Any) -> PostgresReader:
    """A reader of a source behind a secret (which defaults to verify-full against "system")."""
    source = PostgresSource(kind="postgresql", secret_arn="arn:aws:secretsmanager:eu-west-1:1:secret:db", **tls)
    secret = {"host": host, "port": server.port, "username": TlsPostgres.USER, "password": server.password}
    settings = connection_settings("db", source, {}, lambda arn: secret, lambda auth: "", Path("."))
    return PostgresReader("db", settings)


def test_system_roots_are_the_runtimes_trust_store(server, authority, monkeypatch):
    runtime_trusts(monkeypatch, authority.ca_file)

    assert reader(server).count(READ, Unbounded()) == 1  # one row: this connection is encrypted


def test_the_runtime_trust_store_is_the_interpreters_openssl_default(monkeypatch, tmp_path):
    bundle = tmp_path / "bundle.pem"
    bundle.write_text("")
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))

    resolved = postgres_connections.trust_runtime_roots("db", {"sslmode": "verify-ca", "sslrootcert": "system"})

    assert resolved == {"sslmode": "verify-full", "sslrootcert": str(bundle)}


def no_secret(arn: str) -> dict[str, str]:
    """The secret reader of a source given by URL: never called."""
    raise AssertionError(f"a URL source read the secret {arn}")


def test_a_uri_naming_system_roots_is_resolved_too(server, authority, monkeypatch):
    runtime_trusts(monkeypatch, authority.ca_file)
    uri = (
        f"postgresql://{TlsPostgres.USER}:{server.password}@127.0.0.1:{server.port}/postgres"
        "?sslmode=verify-full&sslrootcert=system"
    )
    source = PostgresSource(kind="postgresql", url_env="DB_URL")
    settings = connection_settings("db", source, {"DB_URL": uri}, no_secret, lambda auth: "", Path("."))

    assert PostgresReader("db", settings).count(READ, Unbounded()) == 1


@pytest.mark.parametrize(
    ("trusted", "host", "reason"),
    [
        ("other CA", "127.0.0.1", "does not chain to a trusted CA"),
        ("test CA", "localhost", "names another host"),
    ],
)
def test_a_certificate_that_cannot_be_verified_fails_for_good(
    server, authority, monkeypatch, tmp_path, trusted, host, reason
):
    other = TestAuthority.create(tmp_path, name="another CA")
    runtime_trusts(monkeypatch, authority.ca_file if trusted == "test CA" else other.ca_file)

    with pytest.raises(ExportFailed) as raised:
        reader(server, host=host).count(READ, Unbounded())

    assert raised.value.code == SourceCode.TLS_UNVERIFIED
    assert reason in raised.value.message and "sslrootcert" in raised.value.message
    assert server.password not in raised.value.message


def test_a_declared_bundle_that_is_missing_fails_for_good(server, monkeypatch, tmp_path):
    with pytest.raises(ExportFailed) as raised:
        reader(server, sslmode=SslMode.VERIFY_FULL, sslrootcert=str(tmp_path / "gone.pem")).count(READ, Unbounded())

    assert raised.value.code == SourceCode.TLS_UNVERIFIED and "cannot be read" in raised.value.message


def test_a_runtime_without_a_trust_store_says_what_to_configure(server, monkeypatch):
    runtime_trusts(monkeypatch, None)

    with pytest.raises(ExportFailed) as raised:
        reader(server).count(READ, Unbounded())

    assert raised.value.code == SourceCode.TLS_UNVERIFIED
    assert "SSL_CERT_FILE" in raised.value.message and "sslrootcert" in raised.value.message
