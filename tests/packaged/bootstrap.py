"""Lambda's Python runtime as a handler sees it, for one invocation (what /var/runtime does).

Runs in the isolated interpreter of :mod:`tests.packaged.runtime` with the standard library
only: ``python -I -S bootstrap.py <task root> <event file> <result file>``. It puts the task
root first on ``sys.path``, imports ``_HANDLER``, calls it with the event and a context, and
writes the result (or Lambda's error shape) and where every module came from to the result file.
"""

import importlib
import json
import os
import sys
import time
import traceback
import uuid


class Context:
    """The attributes of Lambda's context object."""

    def __init__(self) -> None:
        self.function_name = os.environ["AWS_LAMBDA_FUNCTION_NAME"]
        self.function_version = os.environ["AWS_LAMBDA_FUNCTION_VERSION"]
        self.memory_limit_in_mb = int(os.environ["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"])
        self.invoked_function_arn = (
            f"arn:aws:lambda:{os.environ['AWS_REGION']}:123456789012:function:{self.function_name}"
        )
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = os.environ["AWS_LAMBDA_LOG_GROUP_NAME"]
        self.log_stream_name = os.environ["AWS_LAMBDA_LOG_STREAM_NAME"]
        self._deadline = time.monotonic() + int(os.environ["EXPORTS_HARNESS_TIMEOUT_SEC"])

    def get_remaining_time_in_millis(self) -> int:
        """Milliseconds before the function's timeout."""
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def main() -> None:
    """Invoke the handler once."""
    task_root, event_file, result_file = sys.argv[1:4]
    sys.path.insert(0, task_root)
    with open(event_file, encoding="utf-8") as source:
        event = json.load(source)
    module_name, function_name = os.environ["_HANDLER"].rsplit(".", 1)
    outcome: dict[str, object]
    try:
        handler = getattr(importlib.import_module(module_name), function_name)
        outcome = {"result": handler(event, Context())}
    except Exception as error:  # the runtime reports any error this way
        outcome = {"errorType": type(error).__name__, "errorMessage": str(error), "stackTrace": traceback.format_exc()}
    outcome["module_files"] = sorted(
        {
            str(getattr(module, "__file__", None))
            for module in list(sys.modules.values())
            if getattr(module, "__file__", None)
        }
    )
    outcome["sys_path"] = sys.path
    with open(result_file, "w", encoding="utf-8") as sink:
        json.dump(outcome, sink, default=str)


if __name__ == "__main__":
    main()
