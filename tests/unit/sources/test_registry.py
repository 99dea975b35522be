"""A source kind is one package registered once (docs/how-to/add-a-source-kind.md): a kind the
registry holds is one the declaration file accepts, the loader checks and the builder makes
types of, and no module but the registry names the kind packages."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from types import MappingProxyType
from typing import Literal, Unpack

import pytest

from exports.core.aws.clients import ClientFactory
from exports.core.export_type import AnyExportType, Column, Cursor, Page
from exports.declared.common import DeclaredExport, DeclaredParts
from exports.declared.model import SourceDecl, TypeDecl
from exports.declared.parameters import DeclaredFilters
from exports.export_types.build import build_export_types
from exports.export_types.loader import DeclarationError, load_declarations
from exports.export_types.schema import declaration_model
from exports.sources import registry
from exports.sources.kind import Fail, SourceKind, SourceReaders, TypeMaker

REPO_ROOT = Path(__file__).resolve().parents[3]
# The modules that may name a kind package besides its own: the registry, and the PostgreSQL and
# MySQL adapters' connection settings, which read their kind's source declaration (TLS and IAM keys).
NAMING_KINDS = {
    "exports/sources/registry.py",
    "exports/sources/postgres/connections.py",
    "exports/sources/mysql/connections.py",
}


class MemorySource(SourceDecl):
    """Rows the declaration lists itself."""

    kind: Literal["memory"]


class MemoryExport(DeclaredExport):
    """One column, one row per listed word."""

    def __init__(self, *, words: list[str], **parts: Unpack[DeclaredParts]) -> None:
        super().__init__(**parts)
        self._words = words

    def columns(self, filters: DeclaredFilters) -> list[Column]:
        return self.chosen_columns(filters)

    def pages(self, filters: DeclaredFilters, cursor: Cursor | None = None) -> Iterator[Page]:
        yield Page([(word,) for word in self._words])


class MemoryKind(SourceKind):
    """A third kind, registered by the test alone: its types list their ``words``."""

    source_model = MemorySource
    title = "memory"
    type_key = "words"
    read_model = list[str]
    type_key_label = "words (memory)"
    bound_in = "the words"
    # What its reader would import: the worker's package would carry it.
    distributions = ("memory-driver",)

    def check_source(self, fail: Fail, source: SourceDecl) -> None:
        """Nothing beyond the model."""

    def check_type(self, fail: Fail, declared: TypeDecl) -> None:
        if not _words(declared):
            raise fail("words", "lists no word")

    def bound_names(self, fail: Fail, declared: TypeDecl) -> set[str]:
        return set()

    def type_maker(self, source_name: str, source: SourceDecl, readers: SourceReaders, base_dir: Path) -> TypeMaker:
        def make(declared: TypeDecl, parts: DeclaredParts) -> AnyExportType:
            return MemoryExport(words=_words(declared), **parts)

        return make


def _words(declared: TypeDecl) -> list[str]:
    words = getattr(declared, "words", None)
    assert isinstance(words, list)
    return words


DECLARATION = """
[sources.memo]
kind = "memory"

[sources.shop]
kind = "postgresql"
url_env = "SHOP_URL"

[types.greetings]
description = "Greetings."
source = "{source}"
{read}
columns = [{{ name = "word" }}]
"""


def write(tmp_path: Path, read: str, source: str = "memo") -> Path:
    path = tmp_path / "exports.toml"
    path.write_text(DECLARATION.format(read=read, source=source), encoding="utf-8")
    return path


@pytest.fixture
def memory_kind(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The registry with the memory kind after the shipped ones."""
    monkeypatch.setattr(registry, "SOURCE_KINDS", MappingProxyType({**registry.SOURCE_KINDS, "memory": MemoryKind()}))
    declaration_model.cache_clear()
    yield
    declaration_model.cache_clear()  # the next file is read with the shipped kinds only


@pytest.mark.usefixtures("memory_kind")
def test_a_registered_kind_is_declared_checked_and_built(tmp_path: Path) -> None:
    declarations = load_declarations(write(tmp_path, 'words = ["hello", "world"]'))

    built = build_export_types(declarations, SourceReaders(client=ClientFactory()))

    (greetings,) = built.types
    assert greetings.name == "greetings"
    assert list(greetings.rows(greetings.parse_filters({}))) == [("hello",), ("world",)]


@pytest.mark.usefixtures("memory_kind")
@pytest.mark.parametrize(
    ("read", "source", "message"),
    [
        ("words = []", "memo", "types.greetings: words: lists no word"),
        ('words = ["hello"]', "shop", "types.greetings: words: source 'shop' is not a memory source"),
        ('query = "SELECT 1 AS word"', "memo", "types.greetings: query: source 'memo' is not a PostgreSQL source"),
        (
            "",
            "memo",
            "declare exactly one of query (PostgreSQL), dynamodb, http, mysql_query (MySQL), words (memory) or plugin",
        ),
    ],
)
def test_the_loader_checks_a_registered_kind_as_its_own(tmp_path: Path, read: str, source: str, message: str) -> None:
    with pytest.raises(DeclarationError, match=re.escape(message)):
        load_declarations(write(tmp_path, read, source))


def test_a_kind_not_registered_is_refused_naming_the_registered_ones(tmp_path: Path) -> None:
    with pytest.raises(DeclarationError, match=r"sources\.memo: Input tag 'memory' found using 'kind' does not match"):
        load_declarations(write(tmp_path, 'words = ["hello"]'))


def test_only_the_registry_names_the_kind_packages() -> None:
    # The folder of each registered kind (exports/sources/sql is what they share, not a kind).
    kind_packages = sorted(type(kind).__module__.split(".")[2] for kind in registry.kinds())
    named = re.compile(rf"\bexports[./]sources[./]({'|'.join(kind_packages)})\b")
    naming = [
        str(path.relative_to(REPO_ROOT))
        for folder in ("exports", "infra", "local_stack", "functions")
        for path in (REPO_ROOT / folder).rglob("*.py")
        if named.search(path.read_text(encoding="utf-8"))
        and path.parent.name not in kind_packages
        and str(path.relative_to(REPO_ROOT)) not in NAMING_KINDS
    ]

    assert kind_packages == ["dynamodb", "http", "mysql", "postgres"]
    assert naming == []


@pytest.mark.parametrize(
    ("source", "declared", "reported"),
    [
        # The kind's key before the type's later keys, the kind's source keys before the limits.
        ("", 'description = "x"\nsource = "shop"\nquery = 5\nfile_name = 7', "types.t: query"),
        ('url_env = 5\nmax_concurrent_exports = "4"', 'description = "x"', "sources.shop: postgresql.url_env"),
    ],
)
def test_a_kinds_keys_are_checked_where_they_always_were(
    tmp_path: Path, source: str, declared: str, reported: str
) -> None:
    path = tmp_path / "exports.toml"
    path.write_text(f'[sources.shop]\nkind = "postgresql"\n{source}\n[types.t]\n{declared}\n', encoding="utf-8")

    with pytest.raises(DeclarationError, match=f"{re.escape(reported)}: Input should be a valid"):
        load_declarations(path)


@pytest.mark.usefixtures("memory_kind")
def test_a_registered_kinds_driver_joins_the_workers_package_after_the_shipped_ones() -> None:
    assert registry.reader_distributions() == ("psycopg", "adbc-driver-postgresql", "PyMySQL", "memory-driver")


def test_the_how_to_lists_the_true_files_of_a_kind() -> None:
    # docs/how-to/add-a-source-kind.md walks through the mysql kind's folder file by file.
    how_to = (REPO_ROOT / "docs" / "how-to" / "add-a-source-kind.md").read_text(encoding="utf-8")
    steps = how_to.split("## The files, in order", 1)[1].split("Then, outside the folder:", 1)[0]
    listed = set(re.findall(r"`exports/sources/mysql/(\w+\.py)`", steps))
    folder = {path.name for path in (REPO_ROOT / "exports" / "sources" / "mysql").glob("*.py")}

    assert listed == folder
