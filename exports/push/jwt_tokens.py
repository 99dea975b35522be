"""JWTs passed as a ``bearer.<jwt>`` subprotocol, verified against the issuer's JWKS with PyJWT,
for the same issuer and audience as the HTTP API's JWT authorizer.

The keys are where the issuer's OpenID discovery document says (``jwks_uri`` of
``<issuer>/.well-known/openid-configuration``), as API Gateway's authorizer finds them: Cognito
happens to publish ``<issuer>/.well-known/jwks.json``, Okta (``/v1/keys``) and Entra ID
(``/discovery/v2.0/keys``) do not."""

from __future__ import annotations

import json
from functools import cached_property
from typing import Any, Final

from exports.push.model import Refused, Viewer

# What API Gateway's JWT authorizer accepts too (Cognito signs with RS256).
_ALGORITHMS = ["RS256"]
DISCOVERY_PATH: Final = "/.well-known/openid-configuration"
_DISCOVERY_TIMEOUT_SEC: Final = 5


class JwksTokenVerifier:
    """:class:`exports.push.ports.TokenVerifier` for tokens of ``issuer`` (keys from its discovery
    document's ``jwks_uri``, cached by PyJWT's client) whose ``aud`` (ID tokens) or ``client_id``
    (access tokens, as the authorizer accepts) is one of ``audience`` (comma-separated)."""

    def __init__(self, issuer: str, audience: str) -> None:
        self._issuer = issuer
        self._audiences = frozenset(part.strip() for part in audience.split(",") if part.strip())
        self._jwks_uri: str | None = None

    def _discovered_jwks_uri(self) -> str:
        """The issuer's ``jwks_uri``, read once (a discovery document for another issuer, or
        without https keys, is refused: tokens are then refused until it is right)."""
        if self._jwks_uri is None:
            import urllib.request  # as PyJWT's key client does: on the first token, not at cold start

            url = f"{self._issuer.rstrip('/')}{DISCOVERY_PATH}"
            try:
                with urllib.request.urlopen(url, timeout=_DISCOVERY_TIMEOUT_SEC) as answer:
                    document = json.load(answer)
            except (OSError, ValueError) as error:
                raise Refused(f"token not verifiable: issuer discovery failed ({type(error).__name__})") from error
            if not isinstance(document, dict):
                document = {}
            jwks_uri = document.get("jwks_uri")
            if document.get("issuer") != self._issuer or not isinstance(jwks_uri, str):
                raise Refused("token not verifiable: the issuer's discovery document names another issuer or no keys")
            self._jwks_uri = jwks_uri
        return self._jwks_uri

    @cached_property
    def _keys(self) -> Any:
        from jwt import PyJWKClient

        return PyJWKClient(self._discovered_jwks_uri(), cache_keys=True, lifespan=3600)

    def verify(self, token: str) -> Viewer:
        """The verified token's viewer; :class:`Refused` for any invalid token (or an issuer
        whose keys cannot be found)."""
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
