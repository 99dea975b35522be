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

from exports.core.errors import InvalidRequest

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


class UnresolvedHost(InvalidRequest):
    """The callback's host has no address now. An export's callback is refused for it (it is
    called within the hour); a schedule's is taken, since each run's delivery checks its host
    again (docs/schedules.md, "The model")."""

    def __init__(self, host: str) -> None:
        super().__init__(f"callback_url host {host} does not resolve", field="callback_url", code=REFUSED)
        self.host = host


Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def _rules(*rows: tuple[str, str]) -> tuple[tuple[Network, str], ...]:
    return tuple((ipaddress.ip_network(network), rule) for network, rule in rows)


# Every block of the IANA IPv4 and IPv6 Special-Purpose Address Registries (RFC 6890 and its
# updates, as of 2025), plus multicast and what lies outside global unicast. A callback is refused
# if any address of its host falls in one; the 422 names the rule. Blocks the registries call
# globally reachable (AS112 sinks, anycast service addresses, AMT) are refused as well: they are
# protocol infrastructure, never a webhook receiver. Addresses that embed an IPv4 address (mapped,
# 6to4, NAT64, IPv4-compatible) are judged by that IPv4 address.
IPV4_RULES = _rules(
    ("0.0.0.0/8", "a 'this network' address (RFC 791)"),
    ("10.0.0.0/8", "a private address (RFC 1918)"),
    ("100.64.0.0/10", "a shared (carrier-grade NAT) address (RFC 6598)"),
    ("127.0.0.0/8", "a loopback address (RFC 1122)"),
    ("169.254.0.0/16", "a link-local address (RFC 3927)"),
    ("172.16.0.0/12", "a private address (RFC 1918)"),
    ("192.0.0.0/24", "an IETF protocol assignment (RFC 6890)"),
    ("192.0.2.0/24", "a documentation address (RFC 5737)"),
    ("192.31.196.0/24", "an AS112 address (RFC 7535)"),
    ("192.52.193.0/24", "an AMT address (RFC 7450)"),
    ("192.88.99.0/24", "a deprecated 6to4 relay address (RFC 7526)"),
    ("192.168.0.0/16", "a private address (RFC 1918)"),
    ("192.175.48.0/24", "an AS112 address (RFC 7534)"),
    ("198.18.0.0/15", "a benchmarking address (RFC 2544)"),
    ("198.51.100.0/24", "a documentation address (RFC 5737)"),
    ("203.0.113.0/24", "a documentation address (RFC 5737)"),
    ("224.0.0.0/4", "a multicast address (RFC 5771)"),
    ("240.0.0.0/4", "a reserved address (RFC 1112)"),
    ("255.255.255.255/32", "the limited broadcast address (RFC 919)"),
)
IPV6_RULES = _rules(
    ("::1/128", "a loopback address (RFC 4291)"),
    ("::/128", "the unspecified address (RFC 4291)"),
    ("64:ff9b:1::/48", "a local-use IPv4/IPv6 translation address (RFC 8215)"),
    ("100::/64", "a discard-only address (RFC 6666)"),
    ("100:0:0:1::/64", "a dummy IPv6 prefix address (RFC 9780)"),
    ("2001::/23", "an IETF protocol assignment (RFC 2928)"),
    ("2001:db8::/32", "a documentation address (RFC 3849)"),
    ("2620:4f:8000::/48", "an AS112 address (RFC 7534)"),
    ("3fff::/20", "a documentation address (RFC 9637)"),
    ("5f00::/16", "a segment routing (SRv6) SID (RFC 9602)"),
    ("fc00::/7", "a unique-local address (RFC 4193)"),
    ("fe80::/10", "a link-local address (RFC 4291)"),
    ("fec0::/10", "a site-local address (RFC 3879)"),
    ("ff00::/8", "a multicast address (RFC 4291)"),
)
_GLOBAL_UNICAST = ipaddress.IPv6Network("2000::/3")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address leads to (mapped, 6to4, NAT64, IPv4-compatible), if any."""
    if address.ipv4_mapped or address.sixtofour:
        return address.ipv4_mapped or address.sixtofour
    if address in _NAT64 or (address in _IPV4_COMPATIBLE and int(address) > 1):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def refusal_rule(address: Address) -> str | None:
    """Why ``address`` may not receive a callback (the registry block it is in), or None when it
    is a global unicast address."""
    if isinstance(address, ipaddress.IPv6Address):
        for network, rule in IPV6_RULES:
            if address in network:
                return rule
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            reason = refusal_rule(embedded)
            return f"{reason}, embedded in an IPv6 address" if reason else None
        if address not in _GLOBAL_UNICAST:
            return "not a global unicast address (outside 2000::/3, RFC 4291)"
        return None
    for network, rule in IPV4_RULES:
        if address in network:
            return rule
    return None


def check_destination(url: str, resolve: Resolver, allow_local: bool = False) -> Destination:
    """The destination of ``url`` if it is allowed; :class:`InvalidRequest` naming callback_url if not.

    ``https`` only, to public addresses only. With ``allow_local`` (local development) plain
    ``http`` to loopback is allowed too.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http"):
        raise _refuse("must use https")  # nothing else is a webhook; checked before any lookup
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
        raise UnresolvedHost(host) from None
    if not addresses:
        raise UnresolvedHost(host)
    local = allow_local and all(a.is_loopback for a in addresses)
    if not local:
        # The address first: http://192.168.1.5 is refused for being private, not for its scheme.
        for address in addresses:
            rule = refusal_rule(address)
            if rule:
                raise _refuse(f"host {host} resolves to {address}, which is not public: {rule}")
        if parts.scheme != "https":
            raise _refuse("must use https")
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    return Destination(scheme=parts.scheme, host=host, port=port, target=target, address=str(addresses[0]))
