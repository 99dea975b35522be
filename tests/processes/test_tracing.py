"""The functions' Tracer imports X-Ray on the first traced call (exports.core.tracing): what it does
then is what ``Tracer()`` did at import. Checks that patch libraries run in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def _fresh(code: str, **environment: str) -> list[object]:
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        env={"PATH": "", **environment},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: list[object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_a_traced_call_loads_the_recorder_and_returns_the_methods_answer():
    # Given the functions' tracer where tracing is off (outside Lambda), in a fresh interpreter
    # (X-Ray's recorder opens its UDP socket when it is imported)
    code = (
        "import json, sys; from exports.core.tracing import LazyXRayRecorder, lazy_tracer; tracer = lazy_tracer(); "
        "double = tracer.capture_method(capture_response=False)(lambda value: value * 2); "
        "before = [isinstance(tracer.provider, LazyXRayRecorder), tracer.provider.loaded, "
        "'aws_xray_sdk.core' in sys.modules]; "
        # When a traced method runs
        "answer = double(21); "
        "print(json.dumps(before + [answer, tracer.provider.loaded]))"
    )

    # Then it ran inside a (dummy) subsegment of the recorder imported just then
    assert _fresh(code, POWERTOOLS_TRACE_DISABLED="true") == [True, False, False, 42, True]


def test_the_first_traced_call_patches_botocore_and_streams_subsegments_where_tracing_is_on():
    # Given a fresh interpreter with the recorder where tracing is on
    code = (
        "import json; import botocore.client; from exports.core.tracing import LazyXRayRecorder; "
        "before = type(botocore.client.BaseClient._make_api_call).__name__; "
        "recorder = LazyXRayRecorder(tracing_disabled=False).recorder(); "
        "after = type(botocore.client.BaseClient._make_api_call).__name__; "
        "print(json.dumps([before, after, recorder.streaming_threshold]))"
    )

    # When it is first used, Then botocore is wrapped by X-Ray and subsegments are sent one by one
    assert _fresh(code) == ["function", "BoundFunctionWrapper", 0]


def test_where_tracing_is_off_nothing_is_patched():
    code = (
        "import json; import botocore.client; from exports.core.tracing import LazyXRayRecorder; "
        "LazyXRayRecorder(tracing_disabled=True).recorder(); "
        "print(json.dumps([type(botocore.client.BaseClient._make_api_call).__name__]))"
    )

    assert _fresh(code) == ["function"]


def test_a_library_is_patched_when_it_is_imported_not_imported_to_be_patched():
    # Given a fresh interpreter where tracing is on and psycopg is not imported
    code = (
        "import json, sys; import botocore.client; from exports.core.tracing import LazyXRayRecorder; "
        "LazyXRayRecorder(tracing_disabled=False).recorder(); "
        "loaded = [name for name in ('psycopg', 'sqlite3') if name in sys.modules]; "
        # When the PostgreSQL path imports psycopg after the first traced call
        "import psycopg; "
        "print(json.dumps([loaded, type(psycopg.connect).__name__]))"
    )

    # Then the first traced call imported neither library, and psycopg's connect is traced
    assert _fresh(code) == [[], "FunctionWrapper"]
