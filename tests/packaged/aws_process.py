"""The local stack's embedded AWS on its own, for the packaged functions to call: moto on a free
port with the tables, queues, bucket and workflows of the CDK app (local_stack.embedded_aws).

``python -m tests.packaged.aws_process`` prints one JSON line (the endpoint and the resources'
names), then serves until its standard input closes. A process of its own: starting the embedded
AWS points this process's environment at it, which must not leak into other tests.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from functools import partial

from local_stack.embedded_aws import EmbeddedAws, client, create_resources


def main() -> None:
    """Serve until stdin closes."""
    aws = EmbeddedAws()
    endpoint = aws.start()
    resources = create_resources(partial(client, endpoint_url=endpoint), endpoint)
    # The lifecycle executions submit starts run moto's in-process handlers: give them the stack.
    os.environ.update(resources.function_environment())
    os.environ.update({"POWERTOOLS_TRACE_DISABLED": "true", "POWERTOOLS_METRICS_DISABLED": "true"})
    print(json.dumps(dataclasses.asdict(resources)), flush=True)
    sys.stdin.read()
    aws.stop()


if __name__ == "__main__":
    main()
