"""Each function's composition root: its own settings, and only the adapters it uses."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from exports.accepting import dynamodb_admission, sqs_queue
from exports.api import composition as api_composition
from exports.core.config.env import Env
from exports.core.config.settings import (
    ApiSettings,
    CallbackSettings,
    FunctionSettings,
    LifecycleSettings,
    MissingVariable,
    WorkerSettings,
)
from exports.core.metrics import PowertoolsMetrics
from exports.export_types import composition as types_composition
from exports.finishing import composition as finishing_composition
from exports.running import composition as worker_composition
from tests.unit.export_fakes import FakeMetrics, NumbersExport

ARN = "arn:aws:states:us-east-1:123456789012:stateMachine:"
# A value for every variable any function reads; each function's settings take their own.
EVERY_VARIABLE = {
    Env.TASKS_TABLE: "tasks",
    Env.RETENTION_HOURS: "48",
    Env.TASK_QUEUE_URLS: '{"normal": "https://queue"}',
    Env.RESULTS_BUCKET: "results",
    Env.LIFECYCLE_STATE_MACHINE_ARN: ARN + "lifecycle",
    Env.DOWNLOAD_URL_TTL_SEC: "600",
    Env.MAX_ACTIVE_TASKS_PER_USER: "3",
    Env.MAX_BACKLOG: "100",
    Env.HOT_KEY_RATE_PER_MINUTE: "30",
    Env.HOT_KEY_BURST: "5",
    Env.FAN_OUT_STATE_MACHINE_ARN: ARN + "fan-out",
    Env.EVENT_BUS: "exports-events",
    Env.MAX_PARTITIONS: "20",
    Env.PARTITION_ROWS: "1000",
    Env.WEBHOOK_SECRET: "whsec_c2VjcmV0",
}
SETTINGS = (ApiSettings, WorkerSettings, CallbackSettings, LifecycleSettings)


class ReadEnviron(Mapping[str, str]):
    """An environment that remembers which variables were looked at."""

    def __init__(self, values: Mapping[str, str]) -> None:
        self._values = dict(values)
        self.read: set[str] = set()

    def __getitem__(self, name: str) -> str:
        self.read.add(name)
        return self._values[name]

    def __contains__(self, name: object) -> bool:
        self.read.add(str(name))
        return name in self._values

    def __iter__(self) -> Iterator[str]:
        raise AssertionError("settings look up their own variables; they never list the environment")

    def __len__(self) -> int:
        return len(self._values)


def own(settings: type[FunctionSettings]) -> dict[str, str]:
    """The variables of :data:`EVERY_VARIABLE` that ``settings`` read."""
    return {name: value for name, value in EVERY_VARIABLE.items() if name in settings.variables()}


def refuse(*_: object, **__: object) -> None:
    raise AssertionError("built by a function that does not use it")


@pytest.mark.parametrize("settings", SETTINGS, ids=lambda settings: settings.__name__)
def test_each_settings_class_reads_only_its_own_variables(settings):
    environ = ReadEnviron(EVERY_VARIABLE)

    settings.from_env(environ)

    assert environ.read <= settings.variables()
    assert set(settings.REQUIRED.values()) <= environ.read


@pytest.mark.parametrize(
    ("settings", "variable"),
    [(settings, variable) for settings in SETTINGS for variable in settings.REQUIRED.values()],
    ids=lambda value: value if isinstance(value, str) else value.__name__,
)
def test_each_settings_class_names_a_missing_required_variable(settings, variable):
    environ = {name: value for name, value in own(settings).items() if name != variable}

    with pytest.raises(MissingVariable, match=f"{settings.__name__} needs the environment variable.* {variable}"):
        settings.from_env(environ)


def test_a_missing_variable_is_named_with_every_other_missing_one():
    with pytest.raises(MissingVariable) as raised:
        LifecycleSettings.from_env({})

    assert raised.value.variables == [Env.TASKS_TABLE, Env.LIFECYCLE_STATE_MACHINE_ARN]


def test_another_functions_variables_are_never_read():
    # An admission limit the callback function never applies cannot break it.
    environ = {**own(CallbackSettings), Env.MAX_BACKLOG: "not a number"}

    assert CallbackSettings.from_env(environ).results_bucket == "results"
    assert Env.MAX_BACKLOG not in CallbackSettings.variables()


def test_the_workflow_functions_need_no_registry_no_queue_and_no_limits():
    # (The callback function reads the declaration's [tenants] for its audit records, not its types.)
    assert Env.EXPORTS_CONFIG not in LifecycleSettings.variables()
    for settings in (CallbackSettings, LifecycleSettings):
        assert not settings.variables() & {
            Env.SOURCE_OVERRIDES,
            Env.TASK_QUEUE_URLS,
            Env.HOT_KEY_RATE_PER_MINUTE,
            Env.MAX_BACKLOG,
        }


def test_no_function_requires_the_demo_tables_variables():
    # The demo tables reach a declared type through its table_env, never through settings.
    for settings in (ApiSettings, WorkerSettings, CallbackSettings, LifecycleSettings):
        assert not settings.variables() & {Env.ORDERS_TABLE, Env.CUSTOMERS_TABLE}


def test_the_callback_function_builds_no_registry_and_no_limiter(monkeypatch):
    monkeypatch.setattr(types_composition, "declared_export_types", refuse)
    monkeypatch.setattr(types_composition, "build_registry", refuse)
    monkeypatch.setattr(dynamodb_admission, "DynamoHotKeyLimiter", refuse)
    monkeypatch.setattr(sqs_queue, "SqsTaskQueue", refuse)
    environ = ReadEnviron(own(CallbackSettings))

    deps = finishing_composition.compose_callback(FakeMetrics(), environ)

    assert environ.read <= CallbackSettings.variables()
    assert {field.name for field in dataclasses.fields(deps)} == {
        "settings",
        "tasks",
        "results",
        "metrics",
        "webhooks",
        "webhook_secret",
        "run_end",
        "resolve",
        "clock",
        # lifecycle events: delivered, schedule paused (docs/events.md)
        "events",
    }
    assert deps.webhook_secret() == "whsec_c2VjcmV0"
    # A scheduled run's end is recorded; no sender configured, no mailer built.
    assert deps.run_end is not None and deps.run_end.mailer is None


def test_the_lifecycle_function_builds_its_adapters_from_its_variables_only(monkeypatch):
    monkeypatch.setattr(types_composition, "declared_export_types", refuse)
    monkeypatch.setattr(types_composition, "build_registry", refuse)
    monkeypatch.setattr(dynamodb_admission, "DynamoHotKeyLimiter", refuse)
    environ = ReadEnviron(own(LifecycleSettings))

    deps = finishing_composition.compose_lifecycle(FakeMetrics(), environ)

    assert environ.read <= LifecycleSettings.variables()
    assert deps.settings.state_machine_arn == ARN + "lifecycle"


def test_the_api_builds_the_registry_on_the_first_request_that_needs_an_export_type(monkeypatch):
    built = []

    def declared_export_types(settings, environ):
        built.append(settings)
        return [NumbersExport()]

    monkeypatch.setattr(api_composition, "declared_export_types", declared_export_types)
    monkeypatch.setattr(dynamodb_admission, "DynamoHotKeyLimiter", refuse)

    deps = api_composition.compose_api(FakeMetrics(), own(ApiSettings))

    assert built == []
    assert deps.registry.get("numbers").name == "numbers"
    assert [export_type.name for export_type in deps.registry] == ["numbers"]
    assert built == [deps.settings]


def test_the_worker_builds_its_registry_and_limiter_at_once(monkeypatch):
    built: list[int] = []

    def declared_export_types(settings: Any, environ: Any) -> list[Any]:
        built.append(1)
        return []

    monkeypatch.setattr(types_composition, "declared_export_types", declared_export_types)

    deps = worker_composition.compose_worker(FakeMetrics(), own(WorkerSettings))

    assert built == [1]
    assert deps.settings.hot_key_burst == 5
    assert deps.fan_out is not None


def test_a_metric_with_dimensions_is_a_series_of_its_own(capsys, monkeypatch):
    from aws_lambda_powertools import Metrics

    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "Exports/test-stack")
    metrics = PowertoolsMetrics(Metrics())

    metrics.add("ExportFailed", dimensions={"error_code": "SOURCE_QUERY_FAILED", "source": "shop"})

    (emitted,) = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    (directive,) = emitted["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == "Exports/test-stack"
    assert sorted(directive["Dimensions"][0]) == ["error_code", "service", "source"]
    assert (emitted["error_code"], emitted["source"], emitted["ExportFailed"]) == ("SOURCE_QUERY_FAILED", "shop", [1.0])
