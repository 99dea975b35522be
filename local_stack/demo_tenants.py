"""The demo shop's tenants: every demo customer, and so each of their orders, belongs to one.

The users of ``local-users.toml`` carry these as their ``tenant_id`` claim.
"""

from __future__ import annotations

TENANTS = ("acme", "globex", "initech")


def tenant_of(customer_id: str) -> str:
    """The tenant of a demo customer (``C00042``): the same on every run."""
    return TENANTS[int(customer_id[1:]) % len(TENANTS)]
