"""The time zone of an export: an IANA name from the tz database (docs/formats.md, "Time zones").

A task's date-times from instants (PostgreSQL ``timestamptz``, DynamoDB date-times, a code-defined
type's date-time columns) are written in its zone; the default, ``Etc/UTC``, writes them as the
service always has. Names are those of the tz database the runtime reads (zoneinfo), exactly
spelled (case matters); the aliases of UTC all mean the default, so they make one export.
"""

from __future__ import annotations

import zoneinfo
from datetime import UTC, tzinfo
from functools import cache
from importlib import resources
from typing import Final

UTC_ZONE: Final = "Etc/UTC"
# The tz database's other names for UTC: asked for, they are the default zone.
UTC_ALIASES: Final = frozenset({"UTC", "Etc/UTC", "Etc/UCT", "Etc/Universal", "Etc/Zulu", "UCT", "Universal", "Zulu"})
# Files of the zone directory that are no zone a caller means (the host's own, a placeholder).
_NOT_ZONES: Final = frozenset({"localtime", "Factory", "posixrules"})
# What an error says is accepted: the list itself (about 600 names) is the tz database's.
ACCEPTED: Final = (
    "an IANA time zone name from the tz database, spelled exactly (case matters), such as "
    "Europe/Berlin, America/New_York, Asia/Kathmandu or Etc/UTC (the default)"
)


class UnknownZone(ValueError):
    """A name that is no zone of the tz database."""

    def __init__(self, name: str) -> None:
        shown = name if len(name) <= 64 else name[:64] + "…"
        super().__init__(f"{shown!r} is not a time zone: expected {ACCEPTED}")


@cache
def zone_names() -> frozenset[str]:
    """Every zone name of the tz database the lock pins (the tzdata package; read once): the same
    on every machine, so the OpenAPI document's list of them is too (zoneinfo reads a zone from
    the runtime's own files first, from the package where the runtime has none)."""
    listed = resources.files("tzdata").joinpath("zones").read_text(encoding="utf-8")
    return frozenset(listed.split()) - _NOT_ZONES


def accepted_zones() -> list[str]:
    """Every name :func:`canonical_zone` accepts, sorted (the OpenAPI document's ``TimeZone``)."""
    return sorted(zone_names() | UTC_ALIASES)


def canonical_zone(name: str) -> str:
    """``name`` as a task records it: an alias of UTC as :data:`UTC_ZONE`, any other zone as
    given; :class:`UnknownZone` when the tz database has no such zone."""
    if name in UTC_ALIASES:
        return UTC_ZONE
    if name not in zone_names():
        raise UnknownZone(name)
    return name


def is_utc(name: str) -> bool:
    """Whether ``name`` writes date-times as the service always has (in UTC, no offset)."""
    return name in UTC_ALIASES


def zone(name: str) -> tzinfo:
    """The tzinfo of a zone :func:`canonical_zone` accepted."""
    return UTC if is_utc(name) else zoneinfo.ZoneInfo(name)
