"""The SSRF guard: a callback may only go to a public address, and it goes to the address checked.

Checked at submit (a 4xx naming ``callback_url``) and again before every send, because DNS
answers change. The sender then connects to the checked address itself (no second lookup, so no
DNS rebinding) and sends the original host name for TLS and ``Host``.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from exports.domain.errors import InvalidRequest

Resolver = Callable[[str, int], list[str]]
REFUSED = "CALLBACK_URL_REFUSED"


@dataclass(frozen=True)
class Destination:
    """Where a callback goes: the checked address and what to say to it."""

    scheme: str
    host: str
    port: int
    target: str
    address: str


def system_resolver(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return sorted({str(info[4][0]) for info in infos})


def _refuse(reason: str) -> InvalidRequest:
    return InvalidRequest(f"callback_url {reason}", field="callback_url", code=REFUSED)


# IPv6 ranges that carry an IPv4 address in their last 32 bits and reach it: NAT64 (the
# well-known prefix, and the local-use one, which is never public) and IPv4-compatible addresses.
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address leads to (mapped, 6to4, NAT64, IPv4-compatible), if any."""
    if address.ipv4_mapped or address.sixtofour:
        return address.ipv4_mapped or address.sixtofour
    if address in _NAT64 or address in _NAT64_LOCAL or address in _IPV4_COMPATIBLE:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def _is_public(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if isinstance(address, ipaddress.IPv6Address):
        if address in _NAT64_LOCAL:
            return False
        address = _embedded_ipv4(address) or address
    # is_global is False for private, loopback, link-local (169.254.169.254 included), shared,
    # reserved, unspecified and documentation ranges, and IPv6 unique-local and link-local.
    return address.is_global and not address.is_multicast


def check_destination(url: str, resolve: Resolver, allow_local: bool = False) -> Destination:
    """The destination of ``url`` if it is allowed; :class:`InvalidRequest` naming callback_url if not.

    ``https`` only, to public addresses only. With ``allow_local`` (local development) plain
    ``http`` to loopback is allowed too.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http"):
        raise _refuse("must use https")
    if parts.username or parts.password:
        raise _refuse("must not carry credentials")
    host = parts.hostname
    if not host:
        raise _refuse("has no host")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise _refuse("has an invalid port") from None
    try:
        addresses = [ipaddress.ip_address(a) for a in resolve(host, port)]
    except (OSError, ValueError):
        raise _refuse(f"host {host} does not resolve") from None
    if not addresses:
        raise _refuse(f"host {host} does not resolve")
    local = allow_local and all(a.is_loopback for a in addresses)
    if not local:
        if parts.scheme != "https":
            raise _refuse("must use https")
        if not all(_is_public(a) for a in addresses):
            raise _refuse(f"host {host} resolves to an address that is not public")
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    return Destination(scheme=parts.scheme, host=host, port=port, target=target, address=str(addresses[0]))
