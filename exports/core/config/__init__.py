"""The service's configuration, one module per concern.

Every module but ``settings`` is dependency-free on purpose: the CDK app (``infra/``) imports
them, and tests compare the synthesized template with their values, so nothing is typed twice.
A constant only the code uses lives beside the code that uses it, not here. This package
imports nothing itself, so a function loads only the modules it names.

- ``names``: the service's name and the default physical names of its resources.
- ``env``: the environment variables the functions read.
- ``settings``: each function's typed settings, parsed from those variables at the edge.
- ``api``: the HTTP API's paths and CORS rules.
- ``tables``: key schemas of the DynamoDB tables.
- ``queues``: SQS settings and the priority lanes.
- ``worker``: the worker's timing, uploads and temporary disk.
- ``fan_out``: splitting an export into partitions.
- ``limits``: request, admission, hot-key and capacity limits.
- ``results``: result files and download links.
- ``callbacks``: callback delivery.
- ``retry``: retry policies.
- ``push``: the push channel.
- ``schedules``: scheduled exports.
- ``metrics``: business metric names, namespace and dimensions.
- ``declarations``: the declaration file of sources and export types.
"""
