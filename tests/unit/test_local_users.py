"""make run's dev users: tokens, and the claims the local gateway passes as API Gateway would."""

from pathlib import Path

import pytest

from exports.core.caller import Caller
from local_stack.gateway import authorizer_claims
from local_stack.local_users import LocalUser, default_users_path, load_users, signed_in


def test_the_shipped_users_are_in_three_tenants_and_carol_is_an_admin() -> None:
    users = load_users(default_users_path())
    assert {name: user.claims["custom:tenant_id"] for name, user in users.items()} == {
        "alice": "acme",
        "bob": "globex",
        "carol": "initech",
    }
    assert "admin" in users["carol"].claims["cognito:groups"]


def test_generated_tokens_sign_in_every_user_and_given_tokens_only_those_named() -> None:
    users = load_users(default_users_path())
    generated = signed_in(users, None)
    assert sorted(user.user_id for user in generated.values()) == ["alice", "bob", "carol"]
    assert all(token.startswith(f"dev-{user.user_id}-") for token, user in generated.items())

    given = signed_in(users, "a-token=alice,z-token=zed")
    assert given["a-token"] == users["alice"]
    assert given["z-token"] == LocalUser("zed")  # in no file: only its sub


def test_list_claims_reach_the_function_as_the_http_api_authorizer_writes_them() -> None:
    claims = authorizer_claims(LocalUser("carol", {"custom:tenant_id": "initech", "cognito:groups": ["a", "b"]}))
    assert claims["cognito:groups"] == "[a b]" and claims["sub"] == "carol"
    assert Caller("carol", claims).values("cognito:groups") == ["a", "b"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[users.a]\nclaims = { n = 1 }", "strings or lists of strings"),
        ('[users.a]\nclaims = { sub = "b" }', "sub is the user's own name"),
        ("[users", "not a readable TOML file"),
    ],
)
def test_a_bad_users_file_is_refused_naming_the_user(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "users.toml"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        load_users(path)
