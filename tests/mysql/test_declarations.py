"""Declarations of the MySQL kind: the loader refuses, at start-up and at synth, a query that
writes or locks, hides a second statement or code in a comment, or binds what it does not
declare; connections verify TLS by default; the grants follow the source; local mode's check
describes the query on the server."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from exports.export_types.build import check_results
from exports.export_types.loader import DeclarationError, load_declarations
from exports.sources.mysql.connections import connection_settings
from exports.sources.mysql.kind import MySqlKind
from exports.sources.mysql.model import MySqlSource
from exports.sources.sql.connections import SourceNotConfigured
from tests.mysql.conftest import DEMO_DECLARATION, declared_types

SOURCE = '[sources.db]\nkind = "mysql"\nurl_env = "DB_URL"\n'


def write(folder: Path, text: str) -> Path:
    path = folder / "exports.toml"
    path.write_text(text, encoding="utf-8")
    return path


def typed(query: str, extra: str = "") -> str:
    return SOURCE + f"[types.t]\ndescription = \"x\"\nsource = \"db\"\nmysql_query = '''{query}'''\n{extra}"


REFUSED = {
    "INSERT": ("INSERT INTO t VALUES (1)", "must be a SELECT"),
    "UPDATE": ("UPDATE t SET a = 1", "must be a SELECT"),
    "DELETE": ("DELETE FROM t", "must be a SELECT"),
    "CALL": ("CALL p()", "must be a SELECT"),
    "SET": ("SET SESSION TRANSACTION READ WRITE", "must be a SELECT"),
    "a second statement": ("SELECT 1 AS a; COMMIT; DELETE FROM t", "holds a ';'"),
    "a statement after a string": ("SELECT 'a\\';' AS a; DELETE FROM t", "holds a ';'"),
    "INTO OUTFILE": ("SELECT a FROM t INTO OUTFILE '/tmp/x'", "'INTO OUTFILE'"),
    "INTO DUMPFILE": ("SELECT a FROM t INTO  DUMPFILE '/tmp/x'", "'INTO DUMPFILE'"),
    "INTO a variable": ("SELECT a INTO @x FROM t", "'INTO @'"),
    "FOR UPDATE": ("SELECT a FROM t FOR UPDATE", "'FOR UPDATE'"),
    "LOCK IN SHARE MODE": ("SELECT a FROM t LOCK IN SHARE MODE", "'LOCK IN SHARE MODE'"),
    "an executable comment": ("SELECT a FROM t /*!50000 INTO OUTFILE '/tmp/x' */", "executable comment"),
    "MariaDB's executable comment": ("SELECT a /*M! , 1 */ FROM t", "executable comment"),
    "a string never closed": ("SELECT 'a AS a", "a string is never closed"),
    "an undeclared placeholder": ("SELECT a FROM t WHERE a = %(nope)s", "%(nope)s is not a declared parameter"),
    "a lone %": ("SELECT a FROM t WHERE b LIKE 'x%'", "write a literal % as %%"),
}


@pytest.mark.parametrize(("query", "message"), REFUSED.values(), ids=REFUSED.keys())
def test_a_query_that_does_not_only_read_is_refused_at_load(tmp_path: Path, query: str, message: str) -> None:
    with pytest.raises(DeclarationError) as raised:
        load_declarations(write(tmp_path, typed(query)))

    assert "types.t: mysql_query" in str(raised.value)
    assert message in str(raised.value)


ACCEPTED = [
    "SELECT a FROM t WHERE b = ';' -- a comment; with a semicolon\n",
    "SELECT a FROM t # another; comment\n",
    "SELECT `we;ird` AS a FROM t /* a ; in a comment */",
    "WITH x AS (SELECT 1 AS a) SELECT a FROM x",
    "(SELECT 1 AS a) UNION (SELECT 2)",
    "SELECT a FROM t WHERE b LIKE 'x%%' AND c = 'into outfile'",
    'SELECT "It\\\'s; fine" AS a',
]


@pytest.mark.parametrize("query", ACCEPTED)
def test_a_query_that_reads_is_accepted(tmp_path: Path, query: str) -> None:
    assert list(load_declarations(write(tmp_path, typed(query))).file.types) == ["t"]


def test_a_mysql_type_declares_no_session(tmp_path: Path) -> None:
    with pytest.raises(DeclarationError, match="session"):
        load_declarations(write(tmp_path, typed("SELECT 1 AS a", '[types.t.session]\nrole = "r"\n')))


def test_iam_tokens_are_refused_without_tls(tmp_path: Path) -> None:
    source = (
        '[sources.db]\nkind = "mysql"\nssl_mode = "DISABLED"\n'
        'iam_auth = { host = "h", user = "u", database = "d" }\n'
        '[types.t]\ndescription = "x"\nsource = "db"\nmysql_query = "SELECT 1 AS a"\n'
    )
    with pytest.raises(DeclarationError, match="ssl_mode: cannot be DISABLED with iam_auth"):
        load_declarations(write(tmp_path, source))


def test_connections_from_a_secret_or_iam_verify_tls_by_default(tmp_path: Path) -> None:
    secret = {"host": "db.example.internal", "port": 3307, "dbname": "shop", "username": "exporter", "password": "pw"}
    source = MySqlSource(kind="mysql", secret_arn="arn:aws:secretsmanager:eu-west-1:1:secret:x")
    settings = connection_settings("db", source, {}, lambda arn: secret, lambda auth: "token", tmp_path)()
    context = settings.pop("ssl")
    assert settings == {
        "host": "db.example.internal",
        "port": 3307,
        "database": "shop",
        "user": "exporter",
        "password": "pw",
    }
    assert context.check_hostname and context.verify_mode.name == "CERT_REQUIRED"

    (tmp_path / "ca.pem").write_text(Path(__import__("certifi").where()).read_text())
    iam = MySqlSource.model_validate(
        {"kind": "mysql", "iam_auth": {"host": "h", "user": "u", "database": "d"}, "ssl_ca": "ca.pem"}
    )
    settings = connection_settings("db", iam, {}, lambda arn: secret, lambda auth: f"token-for-{auth.user}", tmp_path)()
    assert settings["password"] == "token-for-u" and settings["port"] == 3306 and settings["ssl"].check_hostname

    url = MySqlSource(kind="mysql", url_env="DB_URL")
    environ = {"DB_URL": "mysql://us%40er:p%3Ass@db:3310/shop?ssl_mode=required"}
    settings = connection_settings("db", url, environ, lambda arn: secret, lambda auth: "", tmp_path)()
    assert (settings["user"], settings["password"], settings["host"], settings["port"]) == ("us@er", "p:ss", "db", 3310)
    assert not settings["ssl"].check_hostname

    unset = MySqlSource(kind="mysql", url_env="NOT_SET_HERE")
    with pytest.raises(SourceNotConfigured, match="NOT_SET_HERE, which is not set"):
        connection_settings("db", unset, {}, lambda arn: secret, lambda auth: "", tmp_path)


def test_the_grants_follow_the_source() -> None:
    kind = MySqlKind()
    source = MySqlSource.model_validate(
        {
            "kind": "mysql",
            "iam_auth": {"host": "h", "user": "exporter", "database": "d", "resource_id": "cluster-ABC"},
            "ssl_ca": "certs/rds-global-bundle.pem",
        }
    )

    assert kind.shipped_files(source) == [("ssl_ca", "certs/rds-global-bundle.pem")]
    assert [(user.resource_id, user.user) for user in kind.rds_users(_fail, source)] == [("cluster-ABC", "exporter")]
    secret = MySqlSource(kind="mysql", secret_arn="arn:aws:secretsmanager:eu-west-1:1:secret:shop")
    assert kind.secret_arns(secret) == ["arn:aws:secretsmanager:eu-west-1:1:secret:shop-??????"]


def _fail(key: str, message: str) -> Exception:
    return ValueError(f"{key}: {message}")


def test_the_demo_types_pass_the_start_up_check(demo_mysql_types: dict[str, Any]) -> None:
    check_results(load_declarations(DEMO_DECLARATION), list(demo_mysql_types.values()))


def test_a_query_missing_its_order_key_is_a_declaration_error_at_start_up(shop_mysql: str, tmp_path: Path) -> None:
    path = write(tmp_path, typed("SELECT order_id AS a FROM orders", 'order_key = ["order_id"]\n'))
    types = declared_types(path, {"DB_URL": shop_mysql})

    with pytest.raises(DeclarationError, match="order_key: the query returns no column 'order_id'"):
        check_results(load_declarations(path), list(types.values()))


def test_a_query_the_server_refuses_is_a_declaration_error_at_start_up(shop_mysql: str, tmp_path: Path) -> None:
    path = write(tmp_path, typed("SELECT nope AS a FROM orders"))
    types = declared_types(path, {"DB_URL": shop_mysql})

    with pytest.raises(DeclarationError, match=r"Unknown column 'nope'.*MySQL error 1054"):
        check_results(load_declarations(path), list(types.values()))


def test_building_the_types_does_not_import_the_driver() -> None:
    """The API builds the registry too: only a query needs PyMySQL."""
    script = (
        "import sys\nfrom exports.export_types.build import build_export_types\n"
        "from exports.export_types.loader import load_declarations\nfrom exports.sources.kind import SourceReaders\n"
        "from exports.core.aws.clients import ClientFactory\n"
        f"built = build_export_types(load_declarations({str(DEMO_DECLARATION)!r}), "
        "SourceReaders(client=ClientFactory(), environ={'EXPORTS_SHOP_MYSQL_URL': 'mysql://u@nowhere/db'}))\n"
        "print([t.name for t in built.types], 'pymysql' in sys.modules)"
    )
    probe = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)

    assert probe.stdout.strip() == "['mysql_orders', 'mysql_customers', 'mysql_orders_all_tenants'] False"
