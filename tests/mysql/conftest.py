"""A real MariaDB for the tests of the MySQL kind: one server per test session (Debian's
``mariadb-server``, installed when missing; its own data directory and port in a temporary
folder, stopped at the end), the demo tables loaded into a database of their own."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pymysql
import pytest

from exports.core.aws.clients import ClientFactory
from exports.core.export_type import ExportType
from exports.export_types.build import build_export_types
from exports.export_types.loader import load_declarations
from exports.sources.kind import SourceReaders
from local_stack.demo_mysql import load_demo_mysql
from local_stack.embedded_mariadb import EmbeddedMariaDB

SEED_DAY = date(2025, 3, 31)
SEED_ORDERS = 3000
DEMO_URL_ENV = "EXPORTS_SHOP_MYSQL_URL"
REPO_ROOT = Path(__file__).resolve().parents[2]
DEMO_DECLARATION = REPO_ROOT / "examples" / "mysql" / "exports.toml"


@pytest.fixture(scope="session")
def mariadb() -> Iterator[EmbeddedMariaDB]:
    """The session's MariaDB server."""
    with tempfile.TemporaryDirectory(prefix="exports-mariadb-") as folder:
        server = EmbeddedMariaDB(Path(folder))
        server.start()
        try:
            yield server
        finally:
            server.stop()


def root_keywords(server: EmbeddedMariaDB, database: str) -> dict[str, Any]:
    """PyMySQL's keywords for ``database`` as root over the socket."""
    return {"unix_socket": str(server.socket), "user": "root", "database": database}


@pytest.fixture(scope="session")
def shop_mysql(mariadb: EmbeddedMariaDB) -> str:
    """The URL (as the reader account) of a database holding the demo orders and customers."""
    mariadb.create_database("shop")
    load_demo_mysql(root_keywords(mariadb, "shop"), SEED_ORDERS, SEED_DAY)
    return mariadb.url("shop")


@pytest.fixture
def scratch_mysql(mariadb: EmbeddedMariaDB, request: pytest.FixtureRequest) -> str:
    """The name of an empty database of this test's own."""
    name = "t_" + "".join(c if c.isalnum() else "_" for c in request.node.name.lower())[:50]
    mariadb.admin(f"DROP DATABASE IF EXISTS `{name}`")
    mariadb.create_database(name)
    return name


def run_as_root(server: EmbeddedMariaDB, database: str, *statements: str) -> list[tuple[Any, ...]]:
    """Run ``statements`` as root in ``database`` (committed); the last one's rows."""
    conn = pymysql.connect(**root_keywords(server, database), charset="utf8mb4", autocommit=True)
    try:
        rows: list[tuple[Any, ...]] = []
        with conn.cursor() as cursor:
            for statement in statements:
                cursor.execute(statement)
                rows = list(cursor.fetchall())
        return rows
    finally:
        conn.close()


def root_url(server: EmbeddedMariaDB, database: str) -> str:
    """A URL of ``database`` as root over TCP (a privileged account: the guard must not depend
    on the reader's grants)."""
    return f"mysql://root@127.0.0.1:{server.port}/{quote(database)}"


def declared_types(path: Path | str, environ: dict[str, str]) -> dict[str, ExportType]:
    """The export types of a declaration file, wired to their sources as composition does it."""
    readers = SourceReaders(client=ClientFactory(), environ=environ)
    return {export_type.name: export_type for export_type in build_export_types(load_declarations(path), readers).types}


@pytest.fixture
def demo_mysql_types(shop_mysql: str) -> dict[str, ExportType]:
    """The MySQL demo declaration's types on the demo database."""
    return declared_types(DEMO_DECLARATION, {DEMO_URL_ENV: shop_mysql})
