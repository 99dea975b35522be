"""JWTs passed as a ``bearer.<jwt>`` subprotocol, verified against the issuer's JWKS with PyJWT,
for the same issuer and audience as the HTTP API's JWT authorizer."""

from __future__ import annotations

from functools import cached_property
from typing import Any

from exports.push.model import Refused, Viewer

# What API Gateway's JWT authorizer accepts too (Cognito signs with RS256).
_ALGORITHMS = ["RS256"]


class JwksTokenVerifier:
    """:class:`exports.push.ports.TokenVerifier` for tokens of ``issuer`` (``<issuer>/.well-known/
    jwks.json``, keys cached by PyJWT's client) whose ``aud`` (ID tokens) or ``client_id`` (access
    tokens, as the authorizer accepts) is one of ``audience`` (comma-separated)."""

    def __init__(self, issuer: str, audience: str) -> None:
        self._issuer = issuer
        self._audiences = frozenset(part.strip() for part in audience.split(",") if part.strip())

    @cached_property
    def _keys(self) -> Any:
        from jwt import PyJWKClient

        return PyJWKClient(f"{self._issuer.rstrip('/')}/.well-known/jwks.json", cache_keys=True, lifespan=3600)

    def verify(self, token: str) -> Viewer:
        """The verified token's viewer; :class:`Refused` for any invalid token."""
        import jwt

        try:
            key = self._keys.get_signing_key_from_jwt(token)
            claims: dict[str, Any] = jwt.decode(
                token,
                key.key,
                algorithms=_ALGORITHMS,
                issuer=self._issuer,
                options={"require": ["exp", "iss", "sub"], "verify_aud": False},
            )
        except jwt.PyJWTError as error:
            raise Refused(f"token not valid: {type(error).__name__}") from error
        if not self._audiences & {claims.get("client_id"), *_audiences(claims.get("aud"))}:
            raise Refused("token not valid: audience")
        return Viewer(str(claims["sub"]), {name: value for name, value in claims.items()})


def _audiences(value: Any) -> tuple[Any, ...]:
    if isinstance(value, list):
        return tuple(value)
    return (value,) if value is not None else ()
