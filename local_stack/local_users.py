"""The users ``make run`` signs in: a bearer token each, and the claims their JWT would carry.

Users and their claims come from a small TOML file (``local-users.toml`` beside ``exports.toml``,
or ``EXPORTS_LOCAL_USERS``); ``EXPORTS_LOCAL_TOKENS`` (``alice-token=alice,bob-token=bob``)
chooses the tokens, and a user it names that the file does not list carries only ``sub``.
Without it, every user of the file gets a generated token.
"""

from __future__ import annotations

import secrets
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

USERS_FILE = "local-users.toml"
# Local mode's own variables (no function reads them): the users file, and the tokens.
USERS_VARIABLE = "EXPORTS_LOCAL_USERS"
TOKENS_VARIABLE = "EXPORTS_LOCAL_TOKENS"


@dataclass(frozen=True)
class LocalUser:
    """A dev user: the ``sub`` of their token and its other claims (strings, or lists of strings)."""

    user_id: str
    claims: Mapping[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        """The claims in one line for the banner (``tenant_id=acme cognito:groups=finance,admin``)."""
        parts = [
            f"{name}={','.join(value) if isinstance(value, list) else value}" for name, value in self.claims.items()
        ]
        return " ".join(parts) or "no claims"


def default_users_path() -> Path:
    """The users file the repository ships, beside the demo declaration."""
    return Path(__file__).resolve().parent.parent / USERS_FILE


def load_users(path: Path) -> dict[str, LocalUser]:
    """The users of the file, by user id; none when the file does not exist. ValueError names
    what is wrong with a file that cannot be used."""
    if not path.exists():
        return {}
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ValueError(f"{path}: not a readable TOML file: {error}") from None
    users = raw.get("users", {})
    if not isinstance(users, dict):
        raise ValueError(f"{path}: [users] must be a table of users")
    loaded = {}
    for user_id, spec in users.items():
        claims = spec.get("claims", {}) if isinstance(spec, dict) else None
        if not isinstance(claims, dict) or not all(_is_claim(value) for value in claims.values()):
            raise ValueError(f"{path}: users.{user_id}.claims must map claim names to strings or lists of strings")
        if "sub" in claims:
            raise ValueError(f"{path}: users.{user_id}.claims: sub is the user's own name")
        loaded[user_id] = LocalUser(user_id, dict(claims))
    return loaded


def _is_claim(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, list) and all(isinstance(item, str) for item in value))


def signed_in(users: Mapping[str, LocalUser], token_spec: str | None) -> dict[str, LocalUser]:
    """Bearer token -> user: as ``token_spec`` says (``token=user,...``), or a generated token for
    every user of ``users`` (a single ``dev-user`` when there are none)."""
    if not token_spec:
        chosen = users or {"dev-user": LocalUser("dev-user")}
        return {f"dev-{user_id}-{secrets.token_hex(6)}": user for user_id, user in chosen.items()}
    tokens = {}
    for pair in filter(None, (part.strip() for part in token_spec.split(","))):
        token, _, user_id = pair.partition("=")
        token, user_id = token.strip(), user_id.strip()
        if not token or not user_id:
            raise ValueError(f"{TOKENS_VARIABLE}: expected token=user, got {pair!r}")
        tokens[token] = users.get(user_id) or LocalUser(user_id)
    return tokens
