"""The functions' Powertools Tracer, with the X-Ray SDK imported on first use instead of at import.

``Tracer()`` imports ``aws_xray_sdk.core`` (and, where tracing is on, patches every library the
SDK knows) while the handler module is imported: about a tenth of a handler's cold import.
Powertools lets a Tracer take its ``provider`` and skip ``auto_patch``, so the Tracer here gets a
stand-in provider that imports the recorder, and patches what Powertools would have patched, the
first time a traced call runs: at the start of the first invocation, before any AWS call (each
library other than botocore as it is imported, see :func:`patch_supported_libraries`). With
tracing disabled (outside Lambda, ``POWERTOOLS_TRACE_DISABLED``) the SDK is switched off at
import, as Powertools does, and its recorder only hands out dummy segments.
"""

from __future__ import annotations

import functools
import numbers
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractAsyncContextManager, contextmanager
from typing import Any

from aws_lambda_powertools import Tracer
from aws_lambda_powertools.tracing.base import BaseProvider, BaseSegment


class LazyXRayRecorder(BaseProvider):
    """Powertools' provider interface over X-Ray's recorder, which is imported (and the
    libraries patched, unless tracing is disabled) when a handler first traces."""

    def __init__(self, tracing_disabled: bool) -> None:
        self._tracing_disabled = tracing_disabled
        self._lock = threading.Lock()
        self._recorder: Any = None

    @property
    def loaded(self) -> bool:
        """Whether the X-Ray SDK has been imported for this recorder."""
        return self._recorder is not None

    def recorder(self) -> Any:
        """X-Ray's recorder, imported and set up the first time."""
        if self._recorder is None:
            with self._lock:
                if self._recorder is None:
                    self._recorder = self._load()
        return self._recorder

    def _load(self) -> Any:
        from aws_xray_sdk.core import xray_recorder

        if not self._tracing_disabled:
            # What Tracer() does at import: patch every supported library, and send subsegments
            # one by one (Powertools issue 283).
            patch_supported_libraries()
            xray_recorder.configure(streaming_threshold=0)
        return xray_recorder

    @contextmanager
    def in_subsegment(self, name: str | None = None, **kwargs: Any) -> Iterator[BaseSegment]:
        """A subsegment of the current segment (what Powertools' decorators open)."""
        with self.recorder().in_subsegment(name=name, **kwargs) as subsegment:
            yield subsegment

    def in_subsegment_async(self, name: str | None = None, **kwargs: Any) -> AbstractAsyncContextManager[BaseSegment]:
        """The same for coroutines."""
        context: AbstractAsyncContextManager[BaseSegment] = self.recorder().in_subsegment_async(name=name, **kwargs)
        return context

    def put_annotation(self, key: str, value: str | numbers.Number | bool) -> None:
        """An annotation on the current segment."""
        self.recorder().put_annotation(key=key, value=value)

    def put_metadata(self, key: str, value: Any, namespace: str = "default") -> None:
        """Metadata on the current segment."""
        self.recorder().put_metadata(key=key, value=value, namespace=namespace)

    def patch(self, modules: Sequence[str]) -> None:
        """Patch ``modules`` for tracing."""
        from aws_xray_sdk.core import patch

        patch(modules)

    def patch_all(self) -> None:
        """Patch every library X-Ray supports."""
        from aws_xray_sdk.core import patch_all

        patch_all()


def patch_supported_libraries() -> None:
    """What X-Ray's ``patch_all()`` patches, each library as it is imported rather than all now.

    ``patch_all()`` imports every supported library that is installed in order to patch it:
    psycopg and sqlite3 in a function that never queries PostgreSQL, requests and httpx where
    they are installed, about 0.1 s of a traced first invocation. botocore is patched at once
    (every function calls AWS); each other library gets a post-import hook (wrapt's, the
    library X-Ray patches with), which patches it when it is imported, or at once if it already
    is, so every call X-Ray traced before is traced still.
    """
    import wrapt
    from aws_xray_sdk.core import patch
    from aws_xray_sdk.core.patcher import NO_DOUBLE_PATCH

    patch(["botocore"], raise_errors=False)
    for library in NO_DOUBLE_PATCH:
        if library != "botocore":
            hook = functools.partial(_patch_imported, library)
            wrapt.register_post_import_hook(hook, _IMPORT_NAMES.get(library, library))


# X-Ray's names for the libraries it patches that are not the name they are imported by.
_IMPORT_NAMES = {"sqlalchemy_core": "sqlalchemy"}


def _patch_imported(library: str, _module: object) -> None:
    from aws_xray_sdk.core import patch

    # As patch_all() does: a library X-Ray cannot patch (another version) is left unpatched.
    patch([library], raise_errors=False)


def lazy_tracer() -> Tracer:
    """A Powertools Tracer for a handler module, configured from the environment like
    ``Tracer()``, that imports X-Ray on the first traced call."""
    disabled = bool(Tracer._is_tracer_disabled())
    return Tracer(disabled=disabled, auto_patch=False, provider=LazyXRayRecorder(tracing_disabled=disabled))
