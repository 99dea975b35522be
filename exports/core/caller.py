"""Who is asking, as the gateway's JWT authorizer verified it, and what a declared export type
binds from it: caller-bound values (a tenant id, the user's groups) and access rules.

Claims come as API Gateway's HTTP API passes them in ``requestContext.authorizer.jwt.claims``:
strings, where an array claim such as ``cognito:groups`` arrives as ``"[finance admin]"`` (its
values joined by spaces in brackets); native JSON arrays (another gateway, the tests) read the
same. Nothing here reads the request body: a caller-bound value can only come from the token.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from exports.core.errors import ExportsError

# The claim that carries OAuth scopes (space-separated) when the gateway passes no scope list.
SCOPE_CLAIM = "scope"
# Claims that describe the token itself, not the caller: left out of the claims a task records,
# so the same user's next token (new exp, iat, jti) asks for the same export.
TOKEN_CLAIMS = frozenset({"exp", "iat", "nbf", "auth_time", "jti", "origin_jti", "event_id"})


class CallerRefused(ExportsError):
    """The caller's token lacks a claim the export type binds: nothing is stored (403)."""

    code = "CLAIM_MISSING"

    def __init__(self, message: str, claim: str) -> None:
        super().__init__(message, claim=claim)
        self.claim = claim


@dataclass(frozen=True)
class Caller:
    """A verified caller: the token's subject, its claims and its OAuth scopes."""

    user_id: str
    claims: Mapping[str, Any] = field(default_factory=dict)
    scopes: tuple[str, ...] | None = None

    def text(self, claim: str) -> str | None:
        """The claim as one string; None when absent, empty or not a single value."""
        value = self.claims.get(claim)
        if isinstance(value, bool) or value is None:
            return None
        if isinstance(value, int | float):
            return str(value)
        if isinstance(value, str) and value and not _is_bracketed(value):
            return value
        return None

    def values(self, claim: str) -> list[str] | None:
        """The claim as a list of strings (an array claim, or a single value as a list of one);
        None when absent."""
        value = self.claims.get(claim)
        if value is None:
            return None
        if isinstance(value, list | tuple):
            return [str(item) for item in value if item is not None and str(item)]
        if not isinstance(value, str):
            return [str(value)]
        if _is_bracketed(value):
            return [part for part in value[1:-1].split(" ") if part]
        return [value] if value else []

    def granted_scopes(self) -> set[str]:
        """The token's OAuth scopes: the gateway's list, else the ``scope`` claim split on spaces."""
        if self.scopes is not None:
            return set(self.scopes)
        scope = self.claims.get(SCOPE_CLAIM)
        return set(scope.split()) if isinstance(scope, str) else set()

    def claims_json(self) -> dict[str, Any]:
        """The verified claims as a JSON object, array claims as arrays (PostgREST's
        ``request.jwt.claims``), without those describing the token itself (TOKEN_CLAIMS)."""
        return {
            name: self.values(name) if isinstance(value, str) and _is_bracketed(value) else value
            for name, value in sorted(self.claims.items())
            if name not in TOKEN_CLAIMS
        }


def _is_bracketed(value: str) -> bool:
    return len(value) >= 2 and value[0] == "[" and value[-1] == "]"


class BindingKind(StrEnum):
    """What a caller-bound value is."""

    STRING = "string"
    LIST = "list"
    # Every verified claim, as a JSON object (for request.jwt.claims).
    CLAIMS = "claims"


@dataclass(frozen=True)
class CallerBinding:
    """A value bound from the caller's token under ``name``: one claim as a string or a list,
    or all claims."""

    name: str
    kind: BindingKind = BindingKind.STRING
    claim: str | None = None


def bind_caller(bindings: Sequence[CallerBinding], caller: Caller) -> dict[str, Any]:
    """The values ``bindings`` take for ``caller``, JSON-ready (what a task records); a binding
    whose claim the token lacks refuses the caller (:class:`CallerRefused`), never binds NULL."""
    bound: dict[str, Any] = {}
    for binding in bindings:
        if binding.kind is BindingKind.CLAIMS:
            bound[binding.name] = caller.claims_json()
            continue
        assert binding.claim is not None  # the declaration loader requires it
        value = caller.values(binding.claim) if binding.kind is BindingKind.LIST else caller.text(binding.claim)
        if not value:
            raise CallerRefused(
                f"this export needs the {binding.claim!r} claim in your token, which it does not carry",
                claim=binding.claim,
            )
        bound[binding.name] = value
    return bound


@dataclass(frozen=True)
class AccessRule:
    """Who may use an export type: a caller in one of ``groups`` (read from ``groups_claim``),
    holding one of ``scopes``, and whose every claim of ``claims`` has one of the listed values.
    Every part given must hold; an empty rule allows everyone."""

    groups: tuple[str, ...] = ()
    scopes: tuple[str, ...] = ()
    claims: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    groups_claim: str = "cognito:groups"

    def allows(self, caller: Caller) -> bool:
        """Whether ``caller`` passes the rule."""
        if self.groups and not set(self.groups) & set(caller.values(self.groups_claim) or ()):
            return False
        if self.scopes and not set(self.scopes) & caller.granted_scopes():
            return False
        return all(set(allowed) & set(caller.values(claim) or ()) for claim, allowed in self.claims.items())
