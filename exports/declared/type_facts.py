"""What a checked type declaration implies, read by the loader, the builder and the source
kinds alike: its caller-bound values, its session settings, its date ranges."""

from __future__ import annotations

from datetime import timedelta
from typing import Final

from exports.core.caller import BindingKind
from exports.core.export_type import ChangeWindow
from exports.declared.model import ParameterDecl, TypeDecl
from exports.declared.parameters import is_required

# The caller-bound value that session.jwt_claims binds, and the setting it goes to (PostgREST's).
JWT_CLAIMS_BINDING: Final = "jwt_claims"
JWT_CLAIMS_SETTING: Final = "request.jwt.claims"


def caller_bindings(declared: TypeDecl) -> dict[str, BindingKind]:
    """The type's caller-bound values by name, with the one ``session.jwt_claims`` adds."""
    bound = {name: binding.type for name, binding in declared.caller.items()}
    if declared.session is not None and declared.session.jwt_claims:
        bound[JWT_CLAIMS_BINDING] = BindingKind.CLAIMS
    return bound


def session_settings(declared: TypeDecl) -> list[tuple[str, str]]:
    """(setting, caller value) pairs a SQL type sets in its transaction."""
    if declared.session is None:
        return []
    settings = list(declared.session.settings.items())
    if declared.session.jwt_claims:
        settings.append((JWT_CLAIMS_SETTING, JWT_CLAIMS_BINDING))
    return settings


def window_range(declared: TypeDecl) -> tuple[str, str, str] | None:
    """The (from, to, kind) parameters a schedule's relative window fills: the date range whose
    ``from`` is ``window``, or the type's only date range; None when there is none."""
    ranges = declared.date_ranges
    if declared.window is not None:
        ranges = [item for item in ranges if item.start == declared.window]
    if len(ranges) != 1:
        return None
    start, end = ranges[0].start, ranges[0].end
    return start, end, declared.parameters[start].type.value


def partition_date_range(declared: TypeDecl) -> tuple[str, str] | None:
    """The (from, to) parameters a date_range split cuts: the range whose ``from`` is
    ``partitions.date_range``, or the type's only range."""
    ranges = [(item.start, item.end) for item in declared.date_ranges]
    wanted = declared.partitions.date_range if declared.partitions else None
    if wanted is not None:
        ranges = [item for item in ranges if item[0] == wanted]
    return ranges[0] if len(ranges) == 1 else None


def is_required_or_defaulted(spec: ParameterDecl) -> bool:
    """Whether a parameter always has a value after validation."""
    return spec.default is not None or is_required(spec)


_UNITS = {"s": 1, "m": 60, "h": 3600}


def change_window(declared: TypeDecl) -> ChangeWindow | None:
    """The declared ``changes`` as the type offers it to feeds; None when it declares none."""
    changes = declared.changes
    if changes is None:
        return None
    lag = timedelta(seconds=int(changes.lag[:-1]) * _UNITS[changes.lag[-1]])
    max_days = next(item.max_days for item in declared.date_ranges if item.start == changes.start)
    # A date-time range passes max_days while it spans less than that many days.
    longest = timedelta(days=max_days) - timedelta(seconds=1)
    return ChangeWindow(changes.column, changes.start, changes.end, lag, changes.floor, longest)
