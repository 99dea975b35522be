"""A destination kind is one module and its registry line (docs/how-to/add-a-destination-kind.md):
each registered kind's models carry its name, the resource's models take every registered kind,
no module but the registry imports a kind's, and the how-to names the files a kind is.
tests/processes/test_third_destination_kind.py registers a third kind to show that is all."""

from __future__ import annotations

import re
import typing
from pathlib import Path

from exports.finishing.destinations import registry
from exports.finishing.destinations.model import Destination, DestinationKind
from exports.finishing.destinations.requests import DestinationPatch, DestinationRequest

REPO_ROOT = Path(__file__).resolve().parents[4]
KINDS_PACKAGE = REPO_ROOT / "exports/finishing/destinations/kinds"


def _literal(model: type, field: str = "kind") -> object:
    (value,) = typing.get_args(model.model_fields[field].annotation)  # type: ignore[attr-defined]
    return value


def test_each_kind_names_itself_in_its_target_spec_and_view() -> None:
    for name, kind in registry.KINDS.items():
        assert kind.name == name
        assert _literal(kind.target) == _literal(kind.spec) == _literal(kind.view) == name


def test_the_resource_takes_every_registered_kind_and_only_those() -> None:
    assert [member.value for member in DestinationKind] == list(registry.KINDS)  # type: ignore[attr-defined]
    schema = DestinationRequest.model_json_schema()
    mapping = schema["properties"]["target"]["discriminator"]["mapping"]
    assert sorted(mapping) == sorted(registry.KINDS)
    stored = Destination.model_json_schema()["properties"]["target"]["discriminator"]["mapping"]
    assert sorted(stored) == sorted(registry.KINDS)
    assert set(registry.patch_fields()) <= set(DestinationPatch.model_fields)


def test_no_module_but_the_registry_imports_a_kind() -> None:
    importing = re.compile(r"^\s*(from|import) exports\.finishing\.destinations\.kinds\b", re.MULTILINE)
    naming = sorted(
        str(path.relative_to(REPO_ROOT))
        for folder in ("exports", "local_stack", "functions", "infra")
        for path in (REPO_ROOT / folder).rglob("*.py")
        if path.parent != KINDS_PACKAGE and importing.search(path.read_text(encoding="utf-8"))
    )
    assert naming == ["exports/finishing/destinations/registry.py"]


def test_the_how_to_lists_each_kind_module_and_the_registry() -> None:
    how_to = (REPO_ROOT / "docs/how-to/add-a-destination-kind.md").read_text(encoding="utf-8")
    modules = sorted(path.name for path in KINDS_PACKAGE.glob("*.py") if path.name != "__init__.py")
    assert modules == [f"{name}.py" for name in sorted(registry.KINDS)]
    for module in modules:
        assert f"exports/finishing/destinations/kinds/{module}" in how_to
    assert "exports/finishing/destinations/registry.py" in how_to
