"""Running our Lambda handlers inside moto, without Docker.

moto's Docker-free Lambda backend only echoes payloads. Its ``invoke`` is replaced by one that
calls our handler for the function name, in this process, and reports a raised exception the way
Lambda does (function error header plus ``errorType`` / ``errorMessage``), so Step Functions'
Retry and Catch match on our error names. Local mode and tests only: nothing here ships.
"""

from __future__ import annotations

import importlib
import json
import logging
import traceback
from collections.abc import Callable
from typing import Any

from moto.awslambda_simple.models import LambdaSimpleBackend

from exports.core.config.names import Names
from local_stack.lambda_context import LocalLambdaContext
from local_stack.moto_patch import MOTO, CountedPatch

logger = logging.getLogger("local_stack.lambda")
Handler = Callable[[dict[str, Any], Any], Any]

# Function name -> module whose ``lambda_handler`` runs it (as the CDK app wires them).
HANDLER_MODULES = {
    Names.API_FUNCTION: "functions.submit.handler",
    Names.WORKER_FUNCTION: "functions.worker.handler",
    Names.LIFECYCLE_FUNCTION: "functions.lifecycle.handler",
    Names.CALLBACK_FUNCTION: "functions.callback.handler",
    Names.SCHEDULE_FUNCTION: "functions.schedule.handler",
}


def handler_for(function_name: str) -> Handler | None:
    """Our handler for a function name or ARN, imported on first use."""
    name = function_name.rsplit(":function:", maxsplit=1)[-1].split(":", maxsplit=1)[0]
    module = HANDLER_MODULES.get(name)
    return importlib.import_module(module).lambda_handler if module else None


def _invoke(
    self: LambdaSimpleBackend,
    function_name: str,
    qualifier: str | None,
    body: Any,
    headers: Any,
    response_headers: Any,
) -> str | bytes | None:
    handler = handler_for(function_name)
    if handler is None:
        answer: str | bytes | None = INVOKE.original(self, function_name, qualifier, body, headers, response_headers)
        return answer
    event = json.loads(body) if body else {}
    try:
        result = handler(event, LocalLambdaContext(function_name.rsplit(":", maxsplit=1)[-1]))
    except Exception as error:  # Lambda's own edge: a raised error becomes the invocation's error
        logger.debug("function %s raised %s", function_name, type(error).__name__)
        response_headers["x-amz-function-error"] = "Unhandled"
        return json.dumps(
            {
                "errorType": type(error).__name__,
                "errorMessage": str(error),
                "stackTrace": traceback.format_tb(error.__traceback__),
            }
        ).encode()
    return json.dumps(result).encode()


# moto's Docker-free Lambda backend, running our handlers.
INVOKE = CountedPatch(LambdaSimpleBackend, "invoke", lambda original: _invoke, verified_on=MOTO)


def install() -> None:
    """Make moto's Docker-free Lambda backend run our handlers."""
    INVOKE.install()


def uninstall() -> None:
    """Restore moto's own behaviour (after as many uninstalls as installs)."""
    INVOKE.uninstall()
