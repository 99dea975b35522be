"""Cold starts (issue 16): one boto3 Session per process, and no import a request path does not
need. Each import check runs in a fresh interpreter, as a Lambda cold start does."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path

import boto3
import pytest

from bench import cold_start
from bench.cold_start import STACK_FLOORS, report, report_packaged
from bench.goals import CORES
from exports.adapters.clients import ClientFactory

REPO_ROOT = Path(__file__).resolve().parents[2]
# The bench measures the first four; the push, stream and schedule functions share their import rules.
ALL_FUNCTIONS = ["submit", "lifecycle", "callback", "worker", "push", "stream", "schedule"]


@functools.cache
def cold_import(function: str, *first_use: str) -> tuple[frozenset[str], list[str]]:
    """The modules loaded and the AWS clients built by importing ``function``'s handler in a fresh
    interpreter (once per function: each check below reads the same import), then the modules
    ``first_use`` that its first invocation imports (the handlers import them where they use them,
    tests/unit/test_handler_imports.py)."""
    also = "".join(f"import {module}; " for module in first_use)
    code = (
        f"import json, sys; import functions.{function}.handler; {also}loaded = sorted(sys.modules); "
        "from exports.adapters.clients import aws_client; print(json.dumps([loaded, aws_client.services()]))"
    )
    environment = {"AWS_DEFAULT_REGION": "us-east-1", "POWERTOOLS_TRACE_DISABLED": "true", "PATH": ""}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, env=environment, capture_output=True, text=True, check=True
    )
    loaded, clients = json.loads(done.stdout.strip().splitlines()[-1])
    return frozenset(loaded), clients


def test_every_client_of_a_process_comes_from_one_session(monkeypatch):
    # Given a factory, and a count of the Sessions boto3 builds
    made = []
    real_session = boto3.session.Session

    def counting_session(*args, **kwargs):
        made.append(1)
        return real_session(*args, **kwargs)

    monkeypatch.setattr(boto3.session, "Session", counting_session)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    factory = ClientFactory()

    # When the four services' clients are asked for, twice
    clients = [factory(service) for service in ("dynamodb", "sqs", "s3", "stepfunctions") * 2]

    # Then one Session built them, and each service has one client
    assert len(made) == 1
    assert len({id(client) for client in clients}) == 4
    assert clients[0] is clients[4]


def test_clearing_the_factory_makes_a_new_session_and_new_clients(monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    factory = ClientFactory()
    first_session, first_client = factory.session(), factory("sqs")

    factory.cache_clear()

    assert factory("sqs") is not first_client
    assert factory.session() is not first_session


def test_s3_clients_sign_download_links_with_version_4(monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")  # where botocore presigns with SigV2 by default
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")

    link = ClientFactory()("s3").generate_presigned_url("get_object", Params={"Bucket": "results", "Key": "a.csv"})

    assert "X-Amz-Algorithm=AWS4-HMAC-SHA256" in link


def test_the_api_function_imports_no_openapi_document_models():
    loaded, _ = cold_import("submit")

    assert "aws_lambda_powertools.event_handler" in loaded
    assert "aws_lambda_powertools.event_handler.openapi.models" not in loaded


@pytest.mark.parametrize("function", ["lifecycle", "callback"])
def test_the_workflow_functions_import_no_powertools_parser(function):
    loaded, _ = cold_import(function)

    assert f"functions.{function}.handler" in loaded
    assert "aws_lambda_powertools.utilities.parser" not in loaded


@pytest.mark.parametrize("function", ALL_FUNCTIONS)
def test_no_handler_imports_a_format_library_or_builds_a_client_at_import(function):
    loaded, clients = cold_import(function)

    # Each format's library is imported by its writer, for that format only, and so is our XLSX
    # engine (a split CSV needs none of it).
    assert not loaded & {"openpyxl", "pyarrow", "fontTools", "psycopg"}
    assert not {name for name in loaded if name.startswith("exports.writers.xlsx_engine")}
    assert clients == []


def test_the_lifecycle_function_imports_neither_the_schedules_nor_the_type_registry():
    loaded, _ = cold_import("lifecycle", "exports.services.lifecycle", "exports.workflows", "exports.composition")

    # The dependency bags name them in annotations only (exports.services.dependencies).
    assert "exports.services.dependencies" in loaded
    assert not {name for name in loaded if name.startswith("exports.schedules")}
    assert "exports.export_types.registry" not in loaded


@pytest.mark.parametrize("function", ["lifecycle", "callback"])
def test_the_workflow_functions_import_no_adapter_they_do_not_build(function):
    loaded, _ = cold_import(function, "exports.composition")

    # The composition root imports a function's adapters where it builds them (exports.composition).
    assert "exports.composition" in loaded
    assert not loaded & {
        "exports.declared.build",
        "exports.adapters.postgres_connections",
        "exports.adapters.postgres_source",
        "exports.adapters.postgres_session",
        "exports.adapters.dynamodb_source",
        "exports.adapters.dynamodb_admission",
        "exports.adapters.sqs_queue",
    }


def test_the_worker_imports_the_fan_out_steps_on_first_use():
    loaded, _ = cold_import("worker", "exports.services.deliveries", "exports.composition")

    # The steps of a split export load with the first step; every SQS batch plans (fan_out.plan).
    assert "exports.fan_out.plan" in loaded
    assert not loaded & {"exports.fan_out.workflow", "exports.fan_out.partition", "exports.fan_out.assemble"}


@pytest.mark.parametrize("function", ["submit", "schedule", "callback"])
def test_cron_evaluation_is_imported_on_first_use(function):
    loaded, _ = cold_import(function)

    assert "cronsim" not in loaded


def test_the_api_function_imports_the_declared_types_builder_on_first_use():
    loaded, _ = cold_import("submit", "exports.api.routes.exports", "exports.composition")

    assert "exports.composition" in loaded
    assert "exports.declared.build" not in loaded


@pytest.mark.parametrize("function", ALL_FUNCTIONS)
def test_no_handler_imports_the_xray_recorder_or_builds_the_task_models_at_import(function):
    loaded, _ = cold_import(function)

    # The Tracer is made (Powertools itself is loaded); X-Ray waits for the first traced call.
    assert "aws_lambda_powertools.tracing.tracer" in loaded
    assert "aws_xray_sdk.core" not in loaded


def test_the_task_and_declaration_models_are_built_on_first_use():
    # Given a fresh interpreter that imports the models, then validates one task
    code = (
        "import json; from exports.domain.task import Task; from exports.declared.model import DeclarationFile; "
        "before = [Task.__pydantic_complete__, DeclarationFile.__pydantic_complete__]; "
        "Task.model_validate({'task_id': 't', 'user_id': 'u', 'export_type': 'x', 'format': 'csv', "
        "'filters': {}, 'created_at': '2026-01-01T00:00:00Z', 'expires_at': '2026-01-02T00:00:00Z'}); "
        "print(json.dumps(before + [Task.__pydantic_complete__, DeclarationFile.__pydantic_complete__]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, env={"PATH": ""}, capture_output=True, text=True, check=False
    )

    # Then neither was built at import, and validating a task built the task model only
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [False, False, True, False], done.stderr


def _medians(worker_packaged: float, load: float) -> dict[str, float]:
    medians = {"boto3": 0.2, "clients.shared": 0.1, "clients.per_client": 0.4, "load": load}
    for function, (imported, first) in {
        "submit": (0.3, 0.1),
        "worker": (0.4, 0.2),
        "lifecycle": (0.2, 0.1),
        "callback": (0.2, 0.05),
    }.items():
        medians[f"{function}.import"], medians[f"{function}.first"] = imported, first
        medians[f"packaged.{function}.boto3"], medians[f"packaged.{function}.import"] = 0.2, 0.25
    medians["packaged.worker.import"] = worker_packaged
    for number, floor in enumerate(STACK_FLOORS, 1):
        medians[f"floor.{floor}"] = 0.2 + 0.05 * number
    return medians


def test_the_cold_start_report_divides_by_the_stack_floor(capsys):
    # Given medians where the floor (the third of STACK_FLOORS) took 0.35 s and the worker 0.49 s
    met = report(_medians(worker_packaged=0.49, load=0.5), rounds=3)

    out = capsys.readouterr().out
    assert "| worker | 0.490 | 1.40x | <= 1.25x | 0.200 | 2.45x |" in out
    assert "| submit | 0.300 | 1.50x | 0.100 | 0.50x | 2.00x |" in out
    assert "| one Session per client | 0.400 | 2.00x |" in out
    assert f"worst: 1.40x the stack's floor (goal <= 1.25x, load up to 0.50 on {CORES} cores): MISSED" in out
    assert f"| {next(iter(STACK_FLOORS))} | 0.250 | 1.25x |" in out
    assert not met


@pytest.mark.parametrize("load", [0.5, CORES + 1.0])
def test_the_cold_start_goal_is_the_worst_ratio_to_the_floor_of_the_same_run_at_any_load(capsys, load):
    met = report(_medians(worker_packaged=0.42, load=load), rounds=3)

    assert f"worst: 1.20x the stack's floor (goal <= 1.25x, load up to {load:.2f} on {CORES} cores): MET" in (
        capsys.readouterr().out
    )
    assert met


def test_counted_samples_run_at_once_less_an_empty_statement_of_the_same_package(monkeypatch, capsys):
    packages = {
        "submit": {"path": "/p/submit", "handler": "handler.lambda_handler"},
        "worker": {"path": "/p/worker", "handler": "handler.lambda_handler"},
    }
    costs = {"pass": 100.0, "import boto3": 800.0, "import handler": 1600.0}

    def sample(package, statement, environment, counted=False):
        assert counted
        extra = 10.0 if package["path"] == "/p/worker" else 0.0  # each package's own empty count
        return costs.get(statement, 1500.0) + extra

    monkeypatch.setattr(cold_start, "_packaged_sample", sample)
    counts: dict[str, float] = {}
    cold_start._packaged_round(packages, {}, counts.__setitem__, counted=True)

    assert counts["packaged.worker.boto3"] == 700.0 and counts["packaged.worker.import"] == 1500.0
    assert {key for key in counts if key.startswith("floor.")} == {f"floor.{floor}" for floor in STACK_FLOORS}
    assert not any(key.startswith("empty.") for key in counts)
    worst = report_packaged({key: value * 1e6 for key, value in counts.items()}, "counted", "M instructions")
    assert worst == 1500.0 / 1400.0  # the floors cost 1500 less the empty statement's 100
    assert "| worker | 1500 | 1.07x | <= 1.25x | 700 | 2.14x |" in capsys.readouterr().out
