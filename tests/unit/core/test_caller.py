"""Who is asking: claims as the HTTP API authorizer passes them, bound values and access rules."""

import pytest

from exports.accepting.admission_rules import dedup_key
from exports.core.caller import (
    AccessRule,
    BindingKind,
    Caller,
    CallerBinding,
    CallerRefused,
    bind_caller,
)

TENANT = CallerBinding("tenant_id", BindingKind.STRING, "custom:tenant_id")
GROUPS = CallerBinding("groups", BindingKind.LIST, "cognito:groups")


def test_a_string_claim_binds_as_it_is_and_an_array_claim_in_the_gateways_format_as_a_list() -> None:
    caller = Caller("alice", {"sub": "alice", "custom:tenant_id": "acme", "cognito:groups": "[finance admin]"})
    assert bind_caller([TENANT, GROUPS], caller) == {"tenant_id": "acme", "groups": ["finance", "admin"]}


def test_a_native_array_claim_and_a_single_value_bind_as_lists() -> None:
    assert bind_caller([GROUPS], Caller("a", {"cognito:groups": ["x", "y"]})) == {"groups": ["x", "y"]}
    assert bind_caller([GROUPS], Caller("a", {"cognito:groups": "x"})) == {"groups": ["x"]}


@pytest.mark.parametrize(
    "claims",
    [
        {},
        {"custom:tenant_id": ""},
        {"custom:tenant_id": None},
        {"custom:tenant_id": "[acme globex]"},
        {"custom:tenant_id": ["acme"]},
    ],
)
def test_a_missing_empty_or_list_valued_string_claim_refuses_the_caller_never_binds_null(claims: dict) -> None:
    with pytest.raises(CallerRefused) as refused:
        bind_caller([TENANT], Caller("alice", claims))
    assert refused.value.code == "CLAIM_MISSING" and refused.value.claim == "custom:tenant_id"


def test_an_empty_list_claim_refuses_the_caller() -> None:
    with pytest.raises(CallerRefused):
        bind_caller([GROUPS], Caller("alice", {"cognito:groups": "[]"}))


def test_the_claims_binding_is_every_claim_as_json_without_those_describing_the_token() -> None:
    caller = Caller("alice", {"sub": "alice", "cognito:groups": "[a b]", "exp": "1700000000", "iat": "1", "org": "o1"})
    claims = CallerBinding("jwt_claims", BindingKind.CLAIMS)
    assert bind_caller([claims], caller) == {"jwt_claims": {"sub": "alice", "cognito:groups": ["a", "b"], "org": "o1"}}


def test_an_access_rule_needs_every_part_it_names() -> None:
    rule = AccessRule(groups=("finance",), scopes=("exports/read",), claims={"custom:plan": ("enterprise",)})
    allowed = Caller("a", {"cognito:groups": "[finance]", "custom:plan": "enterprise"}, scopes=("exports/read",))
    assert rule.allows(allowed)
    assert not rule.allows(Caller("a", {"cognito:groups": "[sales]", "custom:plan": "enterprise"}, ("exports/read",)))
    assert not rule.allows(Caller("a", {"cognito:groups": "[finance]", "custom:plan": "free"}, ("exports/read",)))
    assert not rule.allows(Caller("a", {"cognito:groups": "[finance]", "custom:plan": "enterprise"}, ()))
    assert not rule.allows(Caller("a", {}))


def test_scopes_come_from_the_scope_claim_when_the_gateway_gives_no_list_and_groups_from_the_named_claim() -> None:
    assert AccessRule(scopes=("exports",)).allows(Caller("a", {"scope": "openid exports"}))
    assert not AccessRule(scopes=("exports",)).allows(Caller("a", {"scope": "openid"}))
    okta = AccessRule(groups=("finance",), groups_claim="groups")
    assert okta.allows(Caller("a", {"groups": ["finance"]})) and not okta.allows(
        Caller("a", {"cognito:groups": "[finance]"})
    )


def test_the_same_request_of_the_same_user_under_another_tenant_has_another_dedup_key() -> None:
    filters = {"date_from": "2025-01-01"}
    acme = dedup_key("alice", "orders", "csv", filters, False, caller={"tenant_id": "acme"})
    globex = dedup_key("alice", "orders", "csv", filters, False, caller={"tenant_id": "globex"})
    assert acme != globex
    assert acme == dedup_key("alice", "orders", "csv", filters, False, caller={"tenant_id": "acme"})
    # A type that binds nothing keeps the keys it always had.
    assert dedup_key("alice", "orders", "csv", filters, False, caller={}) == dedup_key(
        "alice", "orders", "csv", filters, False
    )
