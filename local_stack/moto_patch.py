"""A method or function of moto (or botocore, or Powertools) replaced while anyone needs it replaced.

The local stack and the test suite both install the speed-ups of ``local_stack``: an in-process
stack inside a test session must not remove what the session installed, so a patch stays until as
many :meth:`CountedPatch.uninstall` calls as :meth:`CountedPatch.install` calls. Never on AWS.

Every patch replaces a library's internals, so each names the library version it was verified
on, and installing it on another version fails loudly (:class:`UnverifiedLibrary`) rather than
warn: a patch on a changed internal can break local mode subtly (lost writes, wrong answers),
and the versions are pinned (pyproject.toml), so a mismatch means a bump whose patches must be
checked again, and their ``verified_on`` updated, in the same change.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from importlib.metadata import version
from typing import Any, Final

# The pinned versions the patches were verified on (pyproject.toml, requirements.lock).
MOTO: Final = ("moto", "5.2.5")
BOTOCORE: Final = ("botocore", "1.44.8")
POWERTOOLS: Final = ("aws-lambda-powertools", "3.37.0")


class UnverifiedLibrary(RuntimeError):
    """A patch installed on a version of its library it was not verified on."""


class CountedPatch:
    """``owner.name`` (of a class or a module) replaced by ``replace(original)`` from the first
    install to the last uninstall; ``verified_on``: (distribution, version) it was checked with."""

    def __init__(
        self,
        owner: object,
        name: str,
        replace: Callable[[Callable[..., Any]], Callable[..., Any]],
        *,
        verified_on: tuple[str, str],
    ) -> None:
        self.owner = owner
        self.name = name
        self.verified_on = verified_on
        self._replace = replace
        self._original: Callable[..., Any] | None = None
        self._installs = 0

    @property
    def original(self) -> Callable[..., Any]:
        """The library's own attribute (installed or not)."""
        return self._original or inspect.getattr_static(self.owner, self.name)

    def check_version(self) -> None:
        """:class:`UnverifiedLibrary` unless the library is at the version the patch was verified on."""
        distribution, verified = self.verified_on
        installed = version(distribution)
        if installed != verified:
            owner = getattr(self.owner, "__qualname__", getattr(self.owner, "__name__", repr(self.owner)))
            raise UnverifiedLibrary(
                f"the local_stack patch of {owner}.{self.name} was verified on {distribution} {verified}, "
                f"but {installed} is installed: check the patch against it and update verified_on"
            )

    def install(self) -> None:
        """Replace the attribute (once, however many installs)."""
        self.check_version()
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
