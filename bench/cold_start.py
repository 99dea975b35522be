"""Cold starts: each handler's import time and first invocation against a bare ``import boto3``.

Everything is measured in one run, each sample in a fresh interpreter (with ``.pyc`` present, as
the Lambda packages ship them), the median of ``--rounds`` samples kept:

- what ships, the goal's measure (issue 35): every function's Lambda package, built as the CDK
  app builds it (:func:`tests.packaged.build.build_apart`, kept by fingerprint), each handler
  imported by the runtime's Python in isolated mode without ``site`` (``-I -S``, the package
  first on ``sys.path``, as Lambda's runtime puts ``/var/task``), against ``import boto3`` from
  the same package and interpreter; and the stack's floors (:data:`STACK_FLOORS`: boto3 and
  Powertools, then pydantic, then the API function's router, with no code of ours);
- from the source tree (``.venv``): ``import boto3`` alone, the baseline the rows below are
  divided by, and each handler module's import (``functions.<name>.handler``);
- each handler's first invocation, after its import, on a realistic event against a moto server
  that this process runs on loopback (submit a task, run it as the worker, ask the lifecycle
  function to expire it, ask the callback function to deliver it): the clients, Sessions, service
  models and request paths a cold start pays for, with Lambda's variables and an active trace, so
  that X-Ray loads, samples and patches as it does in Lambda;
- building the four clients the functions use from one shared Session against one Session per
  client (what :mod:`exports.adapters.clients` avoids).

``python -m bench.cold_start [--rounds 5] [--json out.json]``; ``make bench`` runs it after the
writer cases. ``--instructions`` counts the packaged imports' instructions with callgrind
instead (one round, any load; needs valgrind). A sample process prints one JSON line; ``--child`` runs one (internal).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Final

from bench.child import ROOT, run_child
from bench.goals import CORES, IMPORT_GOAL

FUNCTIONS: Final = ("submit", "worker", "lifecycle", "callback")
CLIENTS: Final = ("dynamodb", "sqs", "s3", "stepfunctions")
REGION: Final = "us-east-1"
# Counts a process's instructions (its own cost, whatever else runs on the machine).
CALLGRIND: Final = ("valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null")
# A sampled request's trace header, as Lambda sets it for an invocation with active tracing.
TRACE_HEADER: Final = "Root=1-67a1b2c3-0123456789abcdef01234567;Parent=0123456789abcdef;Sampled=1"
# One packaged sample: the package first on the path, as Lambda's runtime puts /var/task, then
# the statement given (an import) timed.
PACKAGED_SAMPLE: Final = (
    "import json, sys, time; sys.path.insert(0, sys.argv[1]); started = time.perf_counter(); "
    "exec(sys.argv[2]); print(json.dumps({'import_sec': time.perf_counter() - started}))"
)
# What the chosen stack costs before any of our code, from the submit package (it holds every
# library): the floor under each handler's ratio. Every handler imports boto3 and Powertools'
# Logger and Metrics, and our task model is a pydantic model (importing BaseModel alone loads
# pydantic's schema machinery); the API function also builds Powertools' validating resolver.
STACK_FLOORS: Final = {
    "boto3 + Powertools Logger, Metrics": "import boto3; from aws_lambda_powertools import Logger, Metrics",
    "+ pydantic BaseModel": (
        "import boto3; from aws_lambda_powertools import Logger, Metrics; from pydantic import BaseModel"
    ),
    "+ one pydantic model (defer_build)": (
        "import boto3; from aws_lambda_powertools import Logger, Metrics; from pydantic import BaseModel\n"
        "class Model(BaseModel, defer_build=True):\n    value: int"
    ),
    "+ validating HTTP resolver (submit)": (
        "import boto3; from aws_lambda_powertools import Logger, Metrics; from pydantic import BaseModel\n"
        "class Model(BaseModel, defer_build=True):\n    value: int\n"
        "from aws_lambda_powertools.event_handler import APIGatewayHttpResolver; "
        "from aws_lambda_powertools.event_handler.openapi.params import Body; "
        "APIGatewayHttpResolver(enable_validation=True)"
    ),
}
FLOOR_PACKAGE: Final = "submit"
# The floor the goal divides by (issue 50): what every handler that reads a task pays before any
# code of ours, measured in the same round from the same interpreter as the handlers.
FLOOR: Final = "+ one pydantic model (defer_build)"


# --- One sample (a fresh interpreter) ---------------------------------------------------------


def _child_import(module: str) -> dict[str, float]:
    started = time.perf_counter()
    __import__(module)
    return {"import_sec": time.perf_counter() - started}


def _child_invoke(function: str, event_file: str) -> dict[str, Any]:
    event = json.loads(Path(event_file).read_text())
    started = time.perf_counter()
    module = __import__(f"functions.{function}.handler", fromlist=["lambda_handler"])
    imported = time.perf_counter()
    from tests.builders import FakeContext

    answer = module.lambda_handler(event, FakeContext())
    done = time.perf_counter()
    return {"import_sec": imported - started, "first_sec": done - imported, "answer": answer}


def _child_sessions(mode: str) -> dict[str, float]:
    import boto3

    started = time.perf_counter()
    if mode == "shared":
        session = boto3.session.Session()
        for service in CLIENTS:
            session.client(service)
    else:
        for service in CLIENTS:
            boto3.session.Session().client(service)  # type: ignore[call-overload]  # loop variable: not a literal name
    return {"clients_sec": time.perf_counter() - started}


def _child(arguments: list[str]) -> None:
    kind, *rest = arguments
    if kind == "import":
        result: dict[str, Any] = _child_import(rest[0])
    elif kind == "invoke":
        result = _child_invoke(rest[0], rest[1])
    else:
        result = _child_sessions(rest[0])
    # Powertools prints EMF lines on stdout too: ours is the last line.
    print(json.dumps(result, default=str), flush=True)


# --- The driver -------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _sample(arguments: list[str], environment: dict[str, str]) -> dict[str, Any]:
    return run_child("bench.cold_start", ["--child", *arguments], environment, f"cold start sample {arguments}")


class Stack:
    """A moto server with the service's resources, and the environment the functions get."""

    def __init__(self) -> None:
        from moto.server import ThreadedMotoServer

        self.port = _free_port()
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port, verbose=False)

    def __enter__(self) -> Stack:
        import logging

        from local_stack.embedded_aws import client, create_resources

        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        self._server.start()
        self.url = f"http://127.0.0.1:{self.port}"
        self.resources = create_resources(lambda service: client(service, self.url), self.url)
        self.sqs = client("sqs", self.url)
        self.environment = {
            **{key: value for key, value in os.environ.items() if not key.startswith(("AWS_", "POWERTOOLS_"))},
            "AWS_ENDPOINT_URL": self.url,
            "AWS_ACCESS_KEY_ID": "local",
            "AWS_SECRET_ACCESS_KEY": "local",
            "AWS_DEFAULT_REGION": REGION,
            "AWS_REGION": REGION,
            "POWERTOOLS_SERVICE_NAME": "exports",
            "POWERTOOLS_METRICS_NAMESPACE": "Exports",
            "POWERTOOLS_LOG_LEVEL": "WARNING",
            # Lambda's own variables, so that X-Ray does what it does there: the Lambda context
            # and its local sampler (outside Lambda it builds two X-Ray clients for centralized
            # sampling instead, ~0.06 s Lambda never pays), active tracing of a sampled request,
            # and every library patched. The segments go to the daemon's UDP port, which nobody
            # reads here.
            "LAMBDA_TASK_ROOT": str(ROOT),
            "_X_AMZN_TRACE_ID": TRACE_HEADER,
            "EXPORTS_WEBHOOK_SECRET": "whsec_" + "A" * 32,
            **self.resources.function_environment(),
        }
        return self

    def __exit__(self, *_: object) -> None:
        self._server.stop()

    def task_message(self) -> dict[str, Any]:
        """The SQS event of the one message waiting in any lane (the submitted task's)."""
        from local_stack.worker_loop import to_sqs_event

        for url in self.resources.queue_urls.values():
            received = self.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1, AttributeNames=["All"])
            if messages := received.get("Messages", []):
                arn = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]
                return to_sqs_event(messages, arn["QueueArn"], REGION)
        raise SystemExit("the submitted task's message is in no lane")


def _events(round_number: int, folder: Path, stack: Stack) -> dict[str, Any]:
    """Run the four first invocations of one round, one task from submit to callback."""
    from tests.builders import http_event

    def invoke(function: str, event: dict[str, Any]) -> dict[str, Any]:
        path = folder / f"{function}-{round_number}.json"
        path.write_text(json.dumps(event))
        return _sample(["invoke", function, str(path)], stack.environment)

    body = {
        # The declared type on the demo DynamoDB table (the PostgreSQL one needs a database).
        "export_type": "orders_dynamodb",
        "format": "csv",
        "filters": {"date_from": "2026-11-01", "date_to": "2026-11-02"},
    }
    # Every demo type binds the caller's tenant from this claim (exports.toml).
    event = http_event("POST", "/v1/exports", body, user=f"bench-{round_number}", claims={"custom:tenant_id": "acme"})
    results = {"submit": invoke("submit", event)}
    answer = results["submit"]["answer"]
    if answer["statusCode"] != 202:
        raise SystemExit(f"submit answered {answer['statusCode']}: {answer.get('body')}")
    task_id = json.loads(answer["body"])["task_id"]
    results["worker"] = invoke("worker", stack.task_message())
    results["lifecycle"] = invoke("lifecycle", {"action": "expire", "task_id": task_id})
    results["callback"] = invoke("callback", {"action": "deliver", "task_id": task_id})
    return results


def _packaged_sample(
    function: dict[str, Any], statement: str, environment: dict[str, str], counted: bool = False
) -> float:
    """Seconds of one ``statement`` (an import) from a package, by the runtime's interpreter
    (``-I -S``); ``counted``: the instructions of the whole process instead, counted by
    callgrind (whatever the machine's load)."""
    package = str(function["path"])
    command = [str(function["interpreter"]), "-I", "-S", "-c", PACKAGED_SAMPLE, package, statement]
    done = subprocess.run(
        [*CALLGRIND, *command] if counted else command,
        cwd=package,
        env={**environment, "LAMBDA_TASK_ROOT": package},
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"packaged {statement!r} from {package} failed:\n{done.stderr}")
    if counted:
        collected = re.search(r"Collected : (\d+)", done.stderr)
        if collected is None:
            raise SystemExit(f"callgrind printed no count:\n{done.stderr}")
        return float(collected.group(1))
    return float(json.loads(done.stdout.strip().splitlines()[-1])["import_sec"])


def _packaged_round(
    packages: dict[str, dict[str, Any]], environment: dict[str, str], add: Callable[[str, float], None], counted: bool
) -> None:
    """One sample of each packaged handler's import, of ``import boto3`` from its package and of
    each of the stack's floors. Timed ones run one at a time; counted ones at once (a count is
    the process's own), less the count of an empty statement from the same package."""
    jobs = [(f"packaged.{name}.boto3", name, "import boto3") for name in packages]
    jobs += [
        (f"packaged.{name}.import", name, f"import {str(package['handler']).rpartition('.')[0]}")
        for name, package in packages.items()
    ]
    jobs += [(f"floor.{floor}", FLOOR_PACKAGE, statement) for floor, statement in STACK_FLOORS.items()]
    if not counted:
        for key, name, statement in jobs:
            add(key, _packaged_sample(packages[name], statement, environment))
        return
    jobs += [(f"empty.{name}", name, "pass") for name in packages]
    with ThreadPoolExecutor(max_workers=os.cpu_count()) as pool:
        counts = list(pool.map(lambda job: _packaged_sample(packages[job[1]], job[2], environment, True), jobs))
    taken = {key: count for (key, _, _), count in zip(jobs, counts, strict=True)}
    for key, name, _ in jobs:
        if not key.startswith("empty."):
            add(key, taken[key] - taken[f"empty.{name}"])


def _built() -> dict[str, dict[str, Any]]:
    from tests.packaged.build import build_apart

    started = time.perf_counter()
    packages = build_apart()
    print(f"  cold start  {len(packages)} packages built in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return packages


def count_instructions() -> dict[str, float]:
    """The instructions (callgrind) of every packaged sample of :func:`measure`, one round: a
    count does not change with the load, so it is a result on a busy machine too."""
    if shutil.which(CALLGRIND[0]) is None:
        raise SystemExit("--instructions needs valgrind (apt-get install valgrind)")
    counts: dict[str, float] = {}
    _packaged_round(_built(), dict(os.environ), counts.__setitem__, counted=True)
    return counts


def measure(rounds: int) -> dict[str, float]:
    """Median seconds of every measurement, keyed ``packaged.<function>.import`` and
    ``packaged.<function>.boto3`` (every function of the manifest), ``floor.<floor>`` (each of
    :data:`STACK_FLOORS`), ``boto3``,
    ``<function>.import``, ``<function>.first``, ``clients.shared`` and ``clients.per_client``;
    and ``load``, the highest 1-minute load average read before and after each round."""
    packages = _built()
    samples: dict[str, list[float]] = {}
    loads = [os.getloadavg()[0]]

    def add(key: str, value: float) -> None:
        samples.setdefault(key, []).append(value)

    with Stack() as stack, tempfile.TemporaryDirectory(prefix="exports-cold-") as folder:
        for round_number in range(1, rounds + 1):
            _packaged_round(packages, stack.environment, add, counted=False)
            add("boto3", _sample(["import", "boto3"], stack.environment)["import_sec"])
            for function in FUNCTIONS:
                module = f"functions.{function}.handler"
                add(f"{function}.import", _sample(["import", module], stack.environment)["import_sec"])
            for function, result in _events(round_number, Path(folder), stack).items():
                add(f"{function}.first", result["first_sec"])
            for mode in ("shared", "per_client"):
                add(f"clients.{mode}", _sample(["sessions", mode], stack.environment)["clients_sec"])
            loads.append(os.getloadavg()[0])
            print(f"  cold start round {round_number}/{rounds} done, load {loads[-1]:.2f}", file=sys.stderr, flush=True)
    return {**{key: statistics.median(values) for key, values in samples.items()}, "load": max(loads)}


def report_packaged(medians: dict[str, float], how: str, unit: str) -> float:
    """Print each packaged handler's import against the stack's floor (:data:`FLOOR`, the goal's
    measure) and against ``import boto3``, and the stack's floors (``medians`` in ``unit``:
    seconds or instructions); the worst handler's ratio to the floor."""
    packaged = sorted({key.split(".")[1] for key in medians if key.startswith("packaged.")})
    scale, digits = (1e6, 0) if unit == "M instructions" else (1.0, 3)
    floor = medians[f"floor.{FLOOR}"]
    print()
    print(f"Cold start, as packaged ({how}, `python -I -S`); the floor: {FLOOR} = {floor / scale:.{digits}f} {unit}")
    print()
    print(f"| function | handler import {unit} | / floor | goal | import boto3 {unit} (same package) | / boto3 |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    worst = 0.0
    for function in packaged:
        imported, boto3 = medians[f"packaged.{function}.import"], medians[f"packaged.{function}.boto3"]
        worst = max(worst, imported / floor)
        print(
            f"| {function} | {imported / scale:.{digits}f} | {imported / floor:.2f}x | <= {IMPORT_GOAL:.2f}x"
            f" | {boto3 / scale:.{digits}f} | {imported / boto3:.2f}x |"
        )
    floor_boto3 = medians[f"packaged.{FLOOR_PACKAGE}.boto3"]
    print()
    print(f"The stack's floors (from the {FLOOR_PACKAGE} package, before any of our code):")
    print()
    print(f"| what is imported | {unit} | / import boto3 |")
    print("| --- | ---: | ---: |")
    for name in STACK_FLOORS:
        taken = medians[f"floor.{name}"]
        print(f"| {name} | {taken / scale:.{digits}f} | {taken / floor_boto3:.2f}x |")
    return worst


def report(medians: dict[str, float], rounds: int) -> bool:
    """Print the tables of ratios; whether the goal is met (every packaged handler's import within
    :data:`IMPORT_GOAL` of the floor measured in the same rounds: a ratio of two figures taken
    under the same load, so it is a result at any load, which is printed beside it)."""
    worst = report_packaged(medians, f"median of {rounds} fresh runtime interpreters", "s")
    base = medians["boto3"]
    print()
    print(f"From the source tree (median of {rounds}; `import boto3` = {base:.3f} s = 1.00x)")
    print()
    print("| function | import s | import / boto3 | first invocation s | first / boto3 | import + first / boto3 |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for function in FUNCTIONS:
        imported, first = medians[f"{function}.import"], medians[f"{function}.first"]
        print(
            f"| {function} | {imported:.3f} | {imported / base:.2f}x | {first:.3f} | {first / base:.2f}x |"
            f" {(imported + first) / base:.2f}x |"
        )
    shared, per_client = medians["clients.shared"], medians["clients.per_client"]
    print()
    print(f"| {len(CLIENTS)} clients ({', '.join(CLIENTS)}) | seconds | / boto3 |")
    print("| --- | ---: | ---: |")
    print(f"| one shared Session (ours) | {shared:.3f} | {shared / base:.2f}x |")
    print(f"| one Session per client | {per_client:.3f} | {per_client / base:.2f}x |")
    return print_verdict(worst, medians["load"])


def print_verdict(worst: float, load: float | None = None) -> bool:
    """Print the goal's verdict on the worst packaged handler, with the highest 1-minute load
    average of the run (``None``: instructions counted, which no load changes); whether it is met."""
    verdict = "MET" if worst <= IMPORT_GOAL else "MISSED"
    at = f", load up to {load:.2f} on {CORES} cores" if load is not None else ""
    print()
    print(f"packaged handler import, worst: {worst:.2f}x the stack's floor (goal <= {IMPORT_GOAL:.2f}x{at}): {verdict}")
    return verdict == "MET"


def main(argv: list[str] | None = None) -> None:
    """Measure and print (``--child``: one sample, internal)."""
    arguments = sys.argv[1:] if argv is None else argv
    if arguments[:1] == ["--child"]:
        _child(arguments[1:])
        return
    parser = argparse.ArgumentParser(prog="python -m bench.cold_start", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="fresh interpreters per measurement; the median counts")
    parser.add_argument("--json", type=Path, help="also write the medians here")
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="count the packaged imports' instructions with callgrind instead of timing them (any load)",
    )
    options = parser.parse_args(arguments)
    if options.instructions:
        medians = count_instructions()
        how = "instructions counted by callgrind, less an empty statement's"
        print_verdict(report_packaged(medians, how, "M instructions"))
    else:
        medians = measure(options.rounds)
        report(medians, options.rounds)
    if options.json:
        options.json.write_text(json.dumps(medians, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
