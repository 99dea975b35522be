"""The declaration's ``[destinations]``: who manages and who uses a tenant's destinations, with
their defaults, read as the loader checks the file (an unknown key is refused)."""

from __future__ import annotations

from pathlib import Path

import pytest

from exports.core.caller import Caller
from exports.export_types.loader import DeclarationError, load_declarations
from exports.finishing.destinations.declaration import load_destination_access

HEAD = """
[access]
groups_claim = "groups"

[tenants]
claim = "org"
admin_group = "owners"
"""


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "exports.toml"
    path.write_text(HEAD + text, encoding="utf-8")
    return path


def test_by_default_the_tenants_admin_group_manages_and_everyone_uses(tmp_path: Path) -> None:
    access, tenant_claim = load_destination_access(_file(tmp_path, ""))

    assert tenant_claim == "org"
    assert access.may_manage(Caller("a", {"groups": ["owners"]}))
    assert not access.may_manage(Caller("b", {"groups": ["sales"]}))
    assert access.use.allows(Caller("b", {"groups": ["sales"]}))


def test_declared_rules_replace_the_defaults(tmp_path: Path) -> None:
    text = '\n[destinations]\nmanage = { groups = ["ops"] }\nuse = { scopes = ["exports/deliver"] }\n'
    access, _ = load_destination_access(_file(tmp_path, text))

    assert access.may_manage(Caller("a", {"groups": ["ops"]}))
    assert not access.may_manage(Caller("a", {"groups": ["owners"]}))
    assert access.use.allows(Caller("b", {"scope": "exports/deliver"}))
    assert not access.use.allows(Caller("b", {"scope": "other"}))


def test_the_loader_checks_the_section_too(tmp_path: Path) -> None:
    assert load_declarations(_file(tmp_path, '\n[destinations]\nmanage = { groups = ["ops"] }\n')).file.destinations
    with pytest.raises(DeclarationError, match="destinations"):
        load_declarations(_file(tmp_path, '\n[destinations]\nmanagers = ["ops"]\n'))
