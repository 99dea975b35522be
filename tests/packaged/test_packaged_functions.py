"""What ships, run as Lambda runs it: each function's package built as the CDK app builds it (for
x86_64 here, the same dependency set), each handler invoked in a fresh isolated interpreter that
sees only its package (tests/packaged/runtime.py), against the local stack's embedded AWS.

The worker reads the demo declaration's ``shop`` source through a Secrets Manager secret, as a
deployment does, from a PostgreSQL that accepts TLS only, with a certificate of a CA made here.
The source's default TLS is ``verify-full`` against ``sslrootcert=system``, and the runtime trusts
that CA the way Lambda's runtime trusts the Amazon roots: in the operating system's bundle.

Scope: packaging, imports, environment and the runtime's file system and trust store. What the
functions do is the other suites' business; here each does one real thing.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest

from exports.core.config.env import Env
from exports.core.config.metrics import metrics_namespace
from exports.core.config.names import SERVICE_NAME, Names
from exports.core.config.results import Results
from local_stack.demo_database import load_demo_data
from local_stack.embedded_aws import client as embedded_aws_client
from local_stack.embedded_postgres import TlsPostgres
from tests.builders import http_event
from tests.packaged.build import build_apart
from tests.packaged.runtime import REGION, Invocation, PackagedFunction, Runtime
from tests.stack_process import free_port
from tests.tls import TestAuthority

ROOT = Path(__file__).resolve().parents[2]
DEMO_ORDERS = 300
SOURCE = "shop"


@pytest.fixture(scope="module")
def packages() -> dict[str, PackagedFunction]:
    """Every function's package, built once (and kept by fingerprint in the wheel cache)."""
    manifest = build_apart()
    return {name: PackagedFunction.from_manifest(name, entry) for name, entry in manifest.items()}


@pytest.fixture(scope="module")
def aws() -> Iterator[dict[str, Any]]:
    """The local stack's embedded AWS, in a process of its own; its resources' names."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.packaged.aws_process"],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={key: value for key, value in os.environ.items() if key != "AWS_ENDPOINT_URL"},
    )
    assert process.stdout is not None and process.stdin is not None
    resources = json.loads(process.stdout.readline())
    yield resources
    process.stdin.close()
    process.wait(timeout=30)


def aws_client(aws: dict[str, Any], service: str) -> Any:
    """A client of the embedded AWS, made for this test (never the session's default)."""
    return embedded_aws_client(service, aws["endpoint_url"])


@pytest.fixture(scope="module")
def authority(tmp_path_factory: pytest.TempPathFactory) -> TestAuthority:
    """The CA the database's certificate chains to."""
    return TestAuthority.create(tmp_path_factory.mktemp("ca"))


@pytest.fixture(scope="module")
def database(authority: TestAuthority, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsPostgres]:
    """PostgreSQL with TLS required, the demo shop loaded."""
    certificate = authority.issue(tmp_path_factory.mktemp("server"), host="127.0.0.1")
    server = TlsPostgres(certificate.cert_file, certificate.key_file, free_port(), secrets.token_hex(12))
    server.start()
    server.create_database(SOURCE)
    load_demo_data(server.socket_uri(SOURCE), DEMO_ORDERS, datetime.now(UTC).date())
    yield server
    server.stop()


@pytest.fixture(scope="module")
def environment(aws: dict[str, Any], database: TlsPostgres) -> dict[str, str]:
    """Every variable the CDK app has a value for (infra/functions.py), on the local stack: the
    shop source's connection comes from a secret, as ``-c sources`` gives it on AWS."""
    manager = aws_client(aws, "secretsmanager")
    shop = manager.create_secret(
        Name="exports/shop",
        SecretString=json.dumps(
            {
                "host": "127.0.0.1",
                "port": database.port,
                "username": TlsPostgres.USER,
                "password": database.password,
                "dbname": SOURCE,
            }
        ),
    )["ARN"]
    webhook = manager.create_secret(Name="exports/webhook", SecretString="MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")["ARN"]
    return {
        Env.TASKS_TABLE: aws["tasks_table"],
        # The demo table the shipped declaration's orders_dynamodb names (its table_env).
        Env.ORDERS_TABLE: aws["orders_table"],
        Env.TASK_QUEUE_URLS: json.dumps(aws["queue_urls"]),
        Env.RESULTS_BUCKET: aws["bucket"],
        Env.DOWNLOAD_URL_TTL_SEC: str(Results.DOWNLOAD_URL_TTL_SEC),
        Env.RETENTION_HOURS: str(Results.RETENTION_HOURS_DEFAULT),
        Env.LIFECYCLE_STATE_MACHINE_ARN: aws["state_machine_arn"],
        Env.FAN_OUT_STATE_MACHINE_ARN: aws["fan_out_state_machine_arn"],
        Env.EVENT_BUS: aws["event_bus"],
        Env.MAX_PARTITIONS: str(aws["max_partitions"]),
        Env.WEBHOOK_SECRET_ARN: webhook,
        Env.SOURCE_OVERRIDES: json.dumps({SOURCE: {"secret_arn": shop}}),
    }


def runtime_trust_store(interpreter: str) -> Path:
    """The file the runtime interpreter's OpenSSL trusts by default (``/etc/pki/tls/cert.pem`` on
    Lambda's Amazon Linux 2023), as that interpreter reports it with nothing overriding it."""
    probe = "import ssl; print(ssl.get_default_verify_paths().openssl_cafile)"
    reported = subprocess.run(
        ["env", "-i", interpreter, "-I", "-S", "-c", probe], capture_output=True, text=True, check=True
    ).stdout.strip()
    return Path(reported).resolve()


@pytest.fixture(scope="module")
def runtime(
    packages: dict[str, PackagedFunction], aws: dict[str, Any], authority: TestAuthority, tmp_path_factory: Any
) -> Iterator[Runtime]:
    """Lambda's runtime whose operating system trusts the test CA besides its usual roots."""
    store = runtime_trust_store(packages["worker"].interpreter)
    bundle = tmp_path_factory.mktemp("trust") / "ca-bundle.crt"
    bundle.write_text(store.read_text() + authority.ca_file.read_text())
    running = Runtime(trust_bundle=bundle, trust_store=store, endpoint_url=aws["endpoint_url"], read_only=(ROOT,))
    yield running
    running.close()


def invoke(
    runtime: Runtime, function: PackagedFunction, event: dict[str, Any], environment: dict[str, str]
) -> Invocation:
    """Invoke ``function`` with the variables the CDK app gives it (infra/function_factory.py
    adds Powertools' to its own); it must import only from its package and the standard library."""
    powertools = {
        "POWERTOOLS_SERVICE_NAME": SERVICE_NAME,
        "POWERTOOLS_METRICS_NAMESPACE": metrics_namespace("dev"),
        "POWERTOOLS_LOG_LEVEL": "INFO",
    }
    invocation = runtime.invoke(function, event, {**powertools, **function.own_environment(environment)})
    stdlib = Path(function.interpreter).resolve().parent.parent / "lib"
    outside = [
        path
        for path in invocation.outcome["module_files"]
        if not Path(path).is_relative_to(function.path)
        and not Path(path).is_relative_to(runtime.runtime_dir)
        and not (Path(path).is_relative_to(stdlib) and "site-packages" not in Path(path).parts)
    ]
    assert outside == [], f"{function.name} imported from outside its package: {outside[:5]}"
    return invocation


def submit(
    runtime: Runtime, packages: dict[str, PackagedFunction], environment: dict[str, str], export_format: str = "csv"
) -> dict[str, Any]:
    """Submit a small export of the demo orders (CSV unless told) through the packaged API function."""
    today = datetime.now(UTC).date()
    body = {
        "export_type": "orders",
        "format": export_format,
        "filters": {"date_from": (today - timedelta(days=30)).isoformat(), "date_to": today.isoformat()},
    }
    # The demo types bind the caller's tenant (exports.toml): the token carries one.
    event = http_event("POST", "/v1/exports", body, claims={"custom:tenant_id": "acme"})
    response = invoke(runtime, packages["submit"], event, environment).result
    assert response["statusCode"] == 202, response
    return json.loads(response["body"])


def sqs_event(aws: dict[str, Any], lane: str) -> dict[str, Any]:
    """The next message of ``lane`` as Lambda's SQS event source hands it to the worker."""
    sqs = aws_client(aws, "sqs")
    url = aws["queue_urls"][lane]
    (message,) = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1, AttributeNames=["All"], WaitTimeSeconds=5)[
        "Messages"
    ]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    record = {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": message["Attributes"],
        "messageAttributes": {},
        "md5OfBody": message["MD5OfBody"],
        "eventSource": "aws:sqs",
        "eventSourceARN": arn,
        "awsRegion": REGION,
    }
    return {"Records": [record]}


def task_item(aws: dict[str, Any], task_id: str) -> dict[str, Any]:
    """The task as stored."""
    table = boto3.resource(
        "dynamodb",
        endpoint_url=aws["endpoint_url"],
        region_name=REGION,
        aws_access_key_id="local",
        aws_secret_access_key="local",
    ).Table(Names.TASKS_TABLE)
    return table.get_item(Key={"task_id": task_id})["Item"]


def test_the_runtime_is_isolated_as_lambdas(runtime, packages):
    probe = (
        "import json, os, sys, tempfile; from pathlib import Path\n"
        "def writable(folder):\n"
        "    try:\n"
        "        tempfile.TemporaryFile(dir=folder).close(); return True\n"
        "    except OSError:\n"
        "        return False\n"
        "print(json.dumps({'isolated': sys.flags.isolated, 'no_site': sys.flags.no_site, 'path': sys.path,"
        " 'home': os.environ.get('HOME'), 'cert_file': os.environ.get('SSL_CERT_FILE'),"
        " 'cwd': writable('.'), 'tmp': writable('/tmp'), 'project': writable(sys.argv[1]),"
        " 'sees_project': Path(sys.argv[1], 'pyproject.toml').exists()}))"
    )
    worker = packages["worker"]

    ran = runtime.run_isolated(worker, runtime.lambda_variables(worker), "-c", probe, str(ROOT))

    seen = json.loads(ran.stdout)
    assert seen["isolated"] == 1 and seen["no_site"] == 1 and seen["home"] is None and seen["cert_file"] is None
    assert not [entry for entry in seen["path"] if "site-packages" in entry or entry.startswith(str(ROOT))]
    assert seen["tmp"] and not seen["cwd"] and not seen["project"]
    # Readable (it is the machine's file system) but never importable: no entry of sys.path.
    assert seen["sees_project"]


def test_the_api_function_serves_the_declared_types(runtime, packages, environment):
    response = invoke(runtime, packages["submit"], http_event("GET", "/v1/export-types"), environment).result

    assert response["statusCode"] == 200
    assert "orders" in {item["name"] for item in json.loads(response["body"])["items"]}


def test_the_worker_exports_from_postgresql_over_verified_tls(runtime, packages, environment, aws):
    submitted = submit(runtime, packages, environment)

    invocation = invoke(runtime, packages["worker"], sqs_event(aws, "normal"), environment)

    assert invocation.result == {"batchItemFailures": []}
    task = task_item(aws, submitted["task_id"])
    assert task["status"] == "COMPLETED", task.get("error")
    assert int(task["rows_written"]) > 0
    # The file is there, and the API function links to it.
    assert aws_client(aws, "s3").list_objects_v2(Bucket=aws["bucket"], Prefix=f"{Results.KEY_PREFIX}/")["KeyCount"]
    status = invoke(
        runtime, packages["submit"], http_event("GET", f"/v1/exports/{submitted['task_id']}"), environment
    ).result
    assert json.loads(status["body"])["download_url"]


def test_the_pdf_font_ships_with_the_worker_only_and_the_packaged_worker_draws_a_pdf(
    runtime, packages, environment, aws
):
    font = Path("exports", "running", "writers", "pdf", "fonts", "NotoSansSC-Exports.ttf")
    assert {name for name, package in packages.items() if (package.path / font).is_file()} == {"worker"}
    submitted = submit(runtime, packages, environment, "pdf")

    invocation = invoke(runtime, packages["worker"], sqs_event(aws, "normal"), environment)

    assert invocation.result == {"batchItemFailures": []}
    task = task_item(aws, submitted["task_id"])
    assert task["status"] == "COMPLETED", task.get("error")
    body = aws_client(aws, "s3").get_object(Bucket=aws["bucket"], Key=task["result"]["key"])["Body"].read()
    assert body.startswith(b"%PDF-") and b"/FontFile2" in body


def test_the_lifecycle_and_callback_functions_handle_an_ended_task(runtime, packages, environment, aws):
    submitted = submit(runtime, packages, environment)
    invoke(runtime, packages["worker"], sqs_event(aws, "normal"), environment)

    expired = invoke(
        runtime, packages["lifecycle"], {"action": "expire", "task_id": submitted["task_id"]}, environment
    ).result
    delivered = invoke(
        runtime, packages["callback"], {"action": "deliver", "task_id": submitted["task_id"]}, environment
    ).result

    assert expired == {"status": "COMPLETED", "has_callback": False, "has_deliveries": False}
    assert "outcome" in delivered


def test_a_database_certificate_the_runtime_does_not_trust_fails_the_export_for_good(
    runtime, packages, environment, aws
):
    # Given a runtime whose trust store is the machine's own, without the database's CA
    untrusting = Runtime(
        trust_bundle=runtime.trust_store,
        trust_store=runtime.trust_store,
        endpoint_url=runtime.endpoint_url,
        read_only=runtime.read_only,
    )
    submitted = submit(runtime, packages, environment)

    try:
        invocation = invoke(untrusting, packages["worker"], sqs_event(aws, "normal"), environment)
    finally:
        untrusting.close()

    assert invocation.result == {"batchItemFailures": []}
    task = task_item(aws, submitted["task_id"])
    assert task["status"] == "FAILED" and int(task.get("retry_count", 0)) == 0  # not retried
    assert task["error"]["code"] == "SOURCE_TLS_UNVERIFIED"
    assert submitted["task_id"] in task["error"]["message"]  # a reference; the driver's words are logged
