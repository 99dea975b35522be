"""A real PostgreSQL for the tests: one embedded server per test session (the same module
``make run`` uses), a database of demo data, and helpers to read what the server is doing."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import psycopg
import pytest

from exports.core.aws.clients import ClientFactory
from exports.core.export_type import ExportType
from exports.export_types.build import build_export_types
from exports.export_types.loader import default_path, load_declarations
from exports.sources.kind import SourceReaders
from local_stack.demo_database import load_demo_data
from local_stack.embedded_postgres import EmbeddedPostgres
from tests.integration.conftest import aws  # noqa: F401  (moto for the worker tests)

SEED_DAY = date(2025, 3, 31)
SEED_ORDERS = 3000
DEMO_URL_ENV = "EXPORTS_SHOP_DATABASE_URL"


@pytest.fixture(scope="session")
def postgres() -> Iterator[EmbeddedPostgres]:
    """The session's PostgreSQL server."""
    with tempfile.TemporaryDirectory(prefix="exports-pg-") as folder:
        server = EmbeddedPostgres(Path(folder) / "data")
        server.start()
        yield server
        server.stop()


@pytest.fixture(scope="session")
def shop(postgres: EmbeddedPostgres) -> str:
    """The URI of a database holding the demo orders (90 days up to SEED_DAY) and customers."""
    postgres.create_database("shop")
    uri = postgres.uri("shop")
    load_demo_data(uri, SEED_ORDERS, SEED_DAY)
    return uri


@pytest.fixture
def scratch(postgres: EmbeddedPostgres, request: pytest.FixtureRequest) -> str:
    """The URI of an empty database of this test's own."""
    name = "t_" + request.node.name.lower().replace("[", "_").replace("]", "").replace("-", "_")[:50]
    with psycopg.connect(postgres.uri(), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return postgres.uri(name)


def declared_types(path: Path | str, environ: dict[str, str]) -> dict[str, ExportType]:
    """The export types of a declaration file, wired to PostgreSQL as composition does it."""
    # The real factory: a url_env source never asks it for a client (no secret, no IAM token).
    readers = SourceReaders(client=ClientFactory(), environ=environ)
    return {export_type.name: export_type for export_type in build_export_types(load_declarations(path), readers).types}


@pytest.fixture
def demo_types(shop: str) -> dict[str, ExportType]:
    """The repository's exports.toml types on the demo database."""
    return declared_types(default_path(), {DEMO_URL_ENV: shop})


def write_declaration(folder: Path, text: str) -> Path:
    """A declaration file with ``text`` in ``folder``."""
    path = folder / "exports.toml"
    path.write_text(text, encoding="utf-8")
    return path


def backends(uri: str, like: str = "exports:%") -> list[dict[str, Any]]:
    """The server's sessions whose application_name matches ``like``."""
    with psycopg.connect(uri, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT application_name, state, query FROM pg_stat_activity WHERE application_name LIKE %s", [like]
        ).fetchall()
    return [{"application_name": row[0], "state": row[1], "query": row[2]} for row in rows]


def environ_for(uri: str) -> dict[str, str]:
    """The variables a declaration's ``url_env = "DB_URL"`` source reads."""
    return {**os.environ, "DB_URL": uri}
