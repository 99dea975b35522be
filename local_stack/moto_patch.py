"""A method or function of moto (or botocore) replaced while anyone needs it replaced.

The local stack and the test suite both install the speed-ups of ``local_stack``: an in-process
stack inside a test session must not remove what the session installed, so a patch stays until as
many :meth:`CountedPatch.uninstall` calls as :meth:`CountedPatch.install` calls. Never on AWS.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any


class CountedPatch:
    """``owner.name`` (of a class or a module) replaced by ``replace(original)`` from the first
    install to the last uninstall."""

    def __init__(self, owner: object, name: str, replace: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
        self.owner = owner
        self.name = name
        self._replace = replace
        self._original: Callable[..., Any] | None = None
        self._installs = 0

    @property
    def original(self) -> Callable[..., Any]:
        """The library's own attribute (installed or not)."""
        return self._original or inspect.getattr_static(self.owner, self.name)

    def install(self) -> None:
        """Replace the attribute (once, however many installs)."""
        self._installs += 1
        if self._original is None:
            # As the class holds it: a static method stays one when it is given back.
            self._original = inspect.getattr_static(self.owner, self.name)
            setattr(self.owner, self.name, self._replace(self._original))

    def uninstall(self) -> None:
        """Undo one :meth:`install`; the last gives the library its own attribute back."""
        self._installs = max(0, self._installs - 1)
        if self._installs == 0 and self._original is not None:
            setattr(self.owner, self.name, self._original)
            self._original = None
