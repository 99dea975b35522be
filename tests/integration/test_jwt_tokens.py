"""The push channel's ``bearer.<jwt>`` check (JwksTokenVerifier) against a real JWKS served on
127.0.0.1, with tokens signed by a real RSA key: what API Gateway's JWT authorizer accepts passes,
anything else is refused."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from exports.push.jwt_tokens import JwksTokenVerifier
from exports.push.model import Refused

CLIENT_ID = "app-client-1"


def _key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


SIGNING_KEY = _key()
OTHER_KEY = _key()


@pytest.fixture(scope="module")
def issuer() -> Iterator[str]:
    """An issuer that publishes its keys (SIGNING_KEY's public half, kid "k1") where its OpenID
    discovery document says, ``/pool/v1/keys`` (as Okta does), not at ``.well-known/jwks.json``;
    ``/other`` is a second issuer whose discovery document names the first."""
    jwk = json.loads(RSAAlgorithm.to_jwk(SIGNING_KEY.public_key()))
    keys = json.dumps({"keys": [{**jwk, "kid": "k1", "use": "sig", "alg": "RS256"}]}).encode()

    class Provider(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            base = f"http://127.0.0.1:{port}"
            pages = {
                "/pool/.well-known/openid-configuration": {
                    "issuer": f"{base}/pool",
                    "jwks_uri": f"{base}/pool/v1/keys",
                },
                "/other/.well-known/openid-configuration": {
                    "issuer": f"{base}/pool",
                    "jwks_uri": f"{base}/pool/v1/keys",
                },
            }
            body = (
                keys
                if self.path == "/pool/v1/keys"
                else json.dumps(pages[self.path]).encode()
                if self.path in pages
                else None
            )
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body if body is not None else b"{}")

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Provider)
    port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{port}/pool"
    finally:
        server.shutdown()


def token(issuer: str, key: rsa.RSAPrivateKey = SIGNING_KEY, kid: str = "k1", **claims: Any) -> str:
    now = int(time.time())
    payload = {"sub": "user-1", "iss": issuer, "client_id": CLIENT_ID, "exp": now + 300, "iat": now, **claims}
    return jwt.encode(payload, key, algorithm="RS256", headers={"kid": kid})


def test_an_access_token_of_the_issuer_for_the_app_client_is_the_callers(issuer: str) -> None:
    tenant: dict[str, Any] = {"custom:tenant_id": "acme"}
    viewer = JwksTokenVerifier(issuer, f"other, {CLIENT_ID}").verify(token(issuer, **tenant))

    assert viewer.user_id == "user-1" and viewer.claims["custom:tenant_id"] == "acme"


def test_an_id_token_names_the_client_in_its_audience(issuer: str) -> None:
    id_token = token(issuer, client_id=None, aud=CLIENT_ID)

    assert JwksTokenVerifier(issuer, CLIENT_ID).verify(id_token).user_id == "user-1"


@pytest.mark.parametrize(
    "case",
    ["expired", "another audience", "another issuer", "another key", "unknown kid", "no subject", "unsigned"],
)
def test_any_other_token_is_refused(issuer: str, case: str) -> None:
    now = int(time.time())
    bad = {
        "expired": lambda: token(issuer, exp=now - 10),
        "another audience": lambda: token(issuer, client_id="someone-else"),
        "another issuer": lambda: token(issuer, iss="https://evil.example/pool"),
        "another key": lambda: token(issuer, key=OTHER_KEY),
        "unknown kid": lambda: token(issuer, kid="k2"),
        "no subject": lambda: jwt.encode(
            {"iss": issuer, "client_id": CLIENT_ID, "exp": now + 300}, SIGNING_KEY, "RS256", headers={"kid": "k1"}
        ),
        "unsigned": lambda: jwt.encode(
            {"sub": "user-1", "iss": issuer, "client_id": CLIENT_ID, "exp": now + 300}, "", "none"
        ),
    }[case]()

    with pytest.raises(Refused):
        JwksTokenVerifier(issuer, CLIENT_ID).verify(bad)


@pytest.mark.parametrize("other", ["/other", "/missing"])
def test_an_issuer_whose_discovery_names_another_issuer_or_is_missing_verifies_nothing(issuer: str, other: str) -> None:
    # Given an issuer setting whose discovery document names another issuer, or that has none
    elsewhere = issuer.removesuffix("/pool") + other

    # When a token (signed by the real key, claiming that issuer) is checked, Then it is refused
    with pytest.raises(Refused, match="not verifiable"):
        JwksTokenVerifier(elsewhere, CLIENT_ID).verify(token(elsewhere))
