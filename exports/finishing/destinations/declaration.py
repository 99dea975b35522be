"""The deployment's rules for destinations, read from the declaration file's ``[destinations]``,
``[tenants]`` and ``[access]`` sections (the declaration loader checks the whole file; this reads
these three only, as :func:`exports.audit.tenancy.load_tenancy` does)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from exports.core.caller import AccessRule
from exports.core.config.declarations import default_declaration_path
from exports.declared.model import AccessDecl, AllowDecl, DestinationsDecl, TenantsDecl
from exports.finishing.destinations.model import DestinationAccess


def _rule(allow: AllowDecl, groups_claim: str) -> AccessRule:
    return AccessRule(
        groups=tuple(allow.groups),
        scopes=tuple(allow.scopes),
        claims={claim: tuple(values) for claim, values in allow.claims.items()},
        groups_claim=groups_claim,
    )


def destination_access(destinations: DestinationsDecl, tenants: TenantsDecl, access: AccessDecl) -> DestinationAccess:
    """Who manages (by default the tenants' admin group) and who uses (by default everyone)."""
    manage = destinations.manage or AllowDecl(groups=[tenants.admin_group])
    return DestinationAccess(
        manage=_rule(manage, access.groups_claim),
        use=_rule(destinations.use, access.groups_claim),
        groups_claim=access.groups_claim,
    )


def load_destination_access(path: Path | str | None) -> tuple[DestinationAccess, str]:
    """The rules, and the claim that names a caller's tenant, from the file at ``path`` (None:
    the one the repository ships)."""
    raw = tomllib.loads(Path(path or default_declaration_path()).read_text(encoding="utf-8"))
    tenants = TenantsDecl.model_validate(raw.get("tenants", {}))
    rules = destination_access(
        DestinationsDecl.model_validate(raw.get("destinations", {})),
        tenants,
        AccessDecl.model_validate(raw.get("access", {})),
    )
    return rules, tenants.claim
