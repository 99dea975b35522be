"""The export types this deployment offers, by name."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator

from exports.core.caller import Caller
from exports.core.errors import InvalidRequest
from exports.core.export_type import AnyExportType

# A caller without claims, groups or scopes: a type it may use is open to every caller (an access
# rule always asks for something the token has).
ANYONE = Caller(user_id="", scopes=())


class ExportTypeRegistry:
    """Export types by name; the API lists them and the worker runs them."""

    def __init__(
        self, types: Iterable[AnyExportType] = (), *, build: Callable[[], Iterable[AnyExportType]] | None = None
    ) -> None:
        given = tuple(types)
        self._build = build or (lambda: given)
        self._types: dict[str, AnyExportType] | None = None
        self._lock = threading.Lock()

    @classmethod
    def on_first_use(cls, build: Callable[[], Iterable[AnyExportType]]) -> ExportTypeRegistry:
        """A registry whose types ``build`` makes when one is first asked for (reading the
        declaration file and wiring its sources is left to the requests that need a type)."""
        return cls(build=build)

    def _by_name(self) -> dict[str, AnyExportType]:
        types = self._types
        if types is None:
            with self._lock:  # local mode runs several invocations of a function in one process
                types = self._types
                if types is None:
                    types = self._types = {export_type.name: export_type for export_type in self._build()}
        return types

    def get(self, name: str, caller: Caller | None = None) -> AnyExportType:
        """The type called ``name``; :class:`InvalidRequest` naming ``export_type`` otherwise.
        With ``caller``, a type the caller may not use is unknown too, and so is it in the list
        of known types: a refused caller cannot tell it exists."""
        types = self._by_name()
        export_type = types.get(name)
        if export_type is None or (caller is not None and not export_type.allows(caller)):
            known = ", ".join(sorted(self.names_for(caller)))
            raise InvalidRequest(
                f"unknown export type {name!r}; known types: {known}",
                field="export_type",
                code="UNKNOWN_EXPORT_TYPE",
            )
        return export_type

    def for_caller(self, caller: Caller | None) -> list[AnyExportType]:
        """The types ``caller`` may use (every type without a caller), in declaration order."""
        return [export_type for export_type in self if caller is None or export_type.allows(caller)]

    def open_to_everyone(self) -> list[AnyExportType]:
        """The types every caller may use, those without an access rule (what the OpenAPI
        document, served without a token, describes), in declaration order."""
        return self.for_caller(ANYONE)

    def names_for(self, caller: Caller | None) -> list[str]:
        """The names of :meth:`for_caller`."""
        return [export_type.name for export_type in self.for_caller(caller)]

    def __iter__(self) -> Iterator[AnyExportType]:
        return iter(self._by_name().values())
