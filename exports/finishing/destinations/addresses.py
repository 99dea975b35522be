"""The SSRF guard of destinations: the webhooks' rules (exports.core.public_address), applied to
an SFTP host at every connection, since DNS answers change. The connection then goes to the
address checked, never to a second lookup's."""

from __future__ import annotations

import ipaddress

from exports.core.public_address import Resolver, refusal_rule
from exports.finishing.destinations.problems import DestinationProblem, ProblemStep, address_refused


def checked_address(host: str, port: int, resolve: Resolver, allow_local: bool) -> str:
    """The address to connect to: ``host``'s, when every address it resolves to is public (with
    ``allow_local``, local development, when all are loopback); :class:`DestinationProblem`
    (``DNS``, ``ADDRESS``) otherwise."""
    try:
        addresses = [ipaddress.ip_address(address) for address in resolve(host, port)]
    except (OSError, ValueError):
        addresses = []
    if not addresses:
        raise DestinationProblem(
            ProblemStep.DNS, f"{host} does not resolve: check the host name, and that its DNS record is public."
        )
    if not (allow_local and all(address.is_loopback for address in addresses)):
        for address in addresses:
            rule = refusal_rule(address)
            if rule:
                raise address_refused(host, str(address), rule)
    return str(addresses[0])
