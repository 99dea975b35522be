"""What each handler module may import at import time (issue 50: every handler's import within
1.25x the stack's floor, bench/goals.py). A handler imports Powertools, pydantic and its own few
modules; its services, composition, adapters and libraries load in the invocation that uses them.

Each case imports one handler in a fresh interpreter, as a cold start does, and compares
``sys.modules``: a module of ours outside the allow-list, or any third-party package outside the
stack's floor, fails with its name, so a new import at module level is seen when it is added.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
# Third-party packages a handler's import may load: the stack's floor (Powertools, pydantic and
# what they import; X-Ray's package, not its recorder) and nothing more.
FLOOR_PACKAGES: Final = frozenset(
    {
        "aws_lambda_powertools",
        "aws_xray_sdk",
        "botocore",
        "boto3",
        "jmespath",
        "pydantic",
        "pydantic_core",
        "annotated_types",
        "typing_extensions",
        "typing_inspection",
    }
)
# Every handler: its own package and module, and the lazy tracer.
_EVERY: Final = frozenset({"exports", "exports.tracing", "functions"})
# Our modules each handler may import at import time, beyond its own package.
ALLOWED: Final = {
    # The resolver and the one error shape every route answers with (the error statuses of the
    # features' errors load at the first error); the routes load per group (ROUTE_MODULES).
    "submit": _EVERY
    | {
        "exports.config",
        "exports.config.api",
        "exports.config.limits",
        "exports.domain",
        "exports.domain.caller",
        "exports.domain.errors",
        "exports.http",
        "exports.http.envelope",
        "exports.http.errors",
        "exports.snapstart",
        "exports.api",
        "exports.api.app",
    },
    "worker": _EVERY,
    "lifecycle": _EVERY,
    "callback": _EVERY,
    "push": _EVERY,
    # The subprotocol it answers with; SnapStart's hooks (the API function's too).
    "stream": _EVERY | {"exports.config", "exports.config.push", "exports.snapstart"},
    "audit": _EVERY,
    "schedule": _EVERY,
}
# Named so that a failure reads as what went wrong: none of these belongs in any cold import.
HEAVY: Final = frozenset(
    {
        "pyarrow",
        "openpyxl",
        "lxml",
        "psycopg",
        "pymysql",
        "adbc_driver_postgresql",
        "fontTools",
        "orjson",
        "isal",
        "zlib_ng",
        "re2",
        "jwt",
        "cronsim",
        "tenacity",
        "ulid",
        "aws_cdk",
        "constructs",
        "jinja2",
        "moto",
    }
)


@functools.cache
def loaded_by(function: str) -> frozenset[str]:
    """The modules loaded by importing ``function``'s handler in a fresh interpreter."""
    code = f"import json, sys; import functions.{function}.handler; print(json.dumps(sorted(sys.modules)))"
    environment = {"AWS_DEFAULT_REGION": "us-east-1", "POWERTOOLS_TRACE_DISABLED": "true", "PATH": ""}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, env=environment, capture_output=True, text=True, check=True
    )
    return frozenset(json.loads(done.stdout.strip().splitlines()[-1]))


def _third_party(modules: frozenset[str]) -> set[str]:
    tops = {name.split(".")[0] for name in modules}
    return {name for name in tops if name not in sys.stdlib_module_names and not name.startswith("_")}


@pytest.mark.parametrize("function", sorted(ALLOWED))
def test_a_handler_imports_only_its_allowed_modules_of_ours(function):
    loaded = loaded_by(function)

    ours = {name for name in loaded if name.split(".")[0] in ("exports", "functions")}
    own = {"functions", f"functions.{function}", f"functions.{function}.handler"}

    assert ours - own - ALLOWED[function] == set()
    assert f"functions.{function}.handler" in loaded


@pytest.mark.parametrize("function", sorted(ALLOWED))
def test_a_handler_imports_no_third_party_package_beyond_the_floor(function):
    loaded = loaded_by(function)

    assert not _third_party(loaded) & HEAVY
    assert _third_party(loaded) - FLOOR_PACKAGES - {"exports", "functions"} == set()


@pytest.mark.parametrize(
    ("path", "module"),
    [
        ("/v1/exports", "exports.api.routes.exports"),
        ("/v1/exports/01J/download", "exports.api.routes.exports"),
        ("/v1/schedules/s1/run", "exports.api.routes.schedules"),
        ("/v1/permalinks/s1", "exports.api.routes.schedules"),
        ("/v1/audit/usage", "exports.api.routes.audit"),
        ("/v1/me", "exports.api.routes.caller"),
        ("/v1/export-types/orders", "exports.api.routes.caller"),
        ("/v1/stream-tickets", "exports.api.routes.caller"),
        ("/openapi.json", "exports.api.routes.docs"),
        ("/docs", "exports.api.routes.docs"),
        ("/v1/nothing", None),
        ("/v2/exports", None),
        ("/", None),
    ],
)
def test_the_api_function_knows_which_routes_serve_a_path(path, module):
    from functions.submit.handler import route_module

    assert route_module(path) == module


def test_a_request_imports_its_own_group_of_routes_only():
    # Given a fresh API function, When a path no route serves, then a CORS preflight of the
    # schedules (answered without AWS) are resolved
    code = (
        "import json, sys; from functions.submit.handler import lambda_handler; "
        "from tests.builders import FakeContext, http_event; "
        "groups = ('exports.api.routes.', 'exports.api.answers'); "
        "routes = lambda: sorted(m for m in sys.modules if m.startswith(groups)); "
        "missing = lambda_handler(http_event('GET', '/v1/nothing'), FakeContext()); after_missing = routes(); "
        "preflight = lambda_handler(http_event('OPTIONS', '/v1/schedules'), FakeContext()); "
        "print(json.dumps([missing['statusCode'], after_missing, preflight['statusCode'], routes()]))"
    )
    environment = {"AWS_DEFAULT_REGION": "us-east-1", "POWERTOOLS_TRACE_DISABLED": "true", "PATH": ""}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, env=environment, capture_output=True, text=True, check=False
    )

    # Then the first imported no routes (404), the second the schedules' and what they answer with
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [
        404,
        [],
        204,
        ["exports.api.answers", "exports.api.routes.schedules"],
    ], done.stderr
