"""Stage settings from context: presets, overrides and the errors a wrong value gets (no synth)."""

from __future__ import annotations

from pathlib import Path

import pytest

from exports.core.config.limits import Admission, HotKey
from exports.core.config.results import Results
from exports.core.config.worker import Worker
from infra.settings import AdmissionLimits, Context, JwtIssuer, StageSettings
from infra.sizing import AccountQuota, Sizing

pytestmark = pytest.mark.infra


def settings_from(**context):
    return StageSettings.from_context(context.get)


def test_stage_defaults_to_dev_and_dev_does_not_protect_data():
    # Given no context, When settings are read, Then the dev preset applies
    settings = settings_from()

    assert settings.stage == "dev"
    assert settings.protect_data is False
    assert settings.jwt is None
    assert settings.cors_allowed_origins == ()
    assert settings.alarm_email is None
    assert settings.results_retention_hours == Results.RETENTION_HOURS_DEFAULT


ONCALL = {"alarm_email": "oncall@example.com"}


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_admission_limits_default_to_the_config_in_every_stage(stage):
    limits = settings_from(stage=stage, **ONCALL).admission

    assert limits == AdmissionLimits(
        max_active_tasks_per_user=Admission.MAX_ACTIVE_TASKS_PER_USER,
        max_backlog=Admission.MAX_BACKLOG,
        hot_key_rate_per_minute=HotKey.RATE_PER_MINUTE,
        hot_key_burst=HotKey.BURST,
    )


def test_admission_limits_come_from_context():
    from_cli = settings_from(
        max_active_tasks_per_user="3", max_backlog="500", hot_key_rate_per_minute="0.5", hot_key_burst="1"
    )
    from_json = settings_from(
        max_active_tasks_per_user=3, max_backlog=500, hot_key_rate_per_minute=0.5, hot_key_burst=1
    )

    assert from_cli == from_json
    assert from_cli.admission == AdmissionLimits(
        max_active_tasks_per_user=3, max_backlog=500, hot_key_rate_per_minute=0.5, hot_key_burst=1
    )
    # One key alone leaves the others at the config's defaults.
    assert settings_from(max_backlog="50").admission == AdmissionLimits(max_backlog=50)


def test_prod_protects_data_keeps_logs_longer_and_alarms_sooner():
    dev, prod = settings_from(stage="dev"), settings_from(stage="prod", **ONCALL)

    assert prod.protect_data is True
    assert prod.log_retention_days > dev.log_retention_days
    assert prod.log_level == "INFO"
    assert prod.alarms.oldest_message_age_sec < dev.alarms.oldest_message_age_sec
    assert prod.alarms.api_5xx_per_5_min <= dev.alarms.api_5xx_per_5_min
    # A task may legitimately sit in flight for a whole worker run: never alarm before that.
    assert prod.alarms.oldest_message_age_sec > Worker.FUNCTION_TIMEOUT_SEC


def test_command_line_strings_and_cdk_json_lists_both_work():
    from_cli = settings_from(
        stage="prod",
        jwt_issuer="https://issuer.example.com/",
        jwt_audience="a, b",
        cors_allowed_origins="https://x.example.com,https://y.example.com",
        results_retention_hours="48",
        log_level="debug",
        log_retention_days="30",
        alarm_email="ops@example.com",
    )
    from_json = settings_from(
        stage="prod",
        jwt_issuer="https://issuer.example.com/",
        jwt_audience=["a", "b"],
        cors_allowed_origins=["https://x.example.com", "https://y.example.com"],
        results_retention_hours=48,
        log_level="DEBUG",
        log_retention_days=30,
        alarm_email="ops@example.com",
    )

    assert from_cli == from_json
    assert from_cli.jwt == JwtIssuer(issuer="https://issuer.example.com/", audience=("a", "b"))
    assert from_cli.cors_allowed_origins == ("https://x.example.com", "https://y.example.com")
    assert from_cli.results_retention_hours == 48
    assert from_cli.log_level == "DEBUG"
    assert from_cli.log_retention_days == 30


@pytest.mark.parametrize(
    ("context", "complaint"),
    [
        ({"stage": "staging"}, Context.STAGE),
        ({"log_level": "LOUD"}, Context.LOG_LEVEL),
        ({"log_retention_days": "10"}, Context.LOG_RETENTION_DAYS),
        ({"results_retention_hours": str(Results.RETENTION_HOURS_MAX + 1)}, Context.RESULTS_RETENTION_HOURS),
        ({"results_retention_hours": "a day"}, Context.RESULTS_RETENTION_HOURS),
        ({"jwt_issuer": "http://insecure.example.com", "jwt_audience": "a"}, Context.JWT_ISSUER),
        ({"jwt_issuer": "https://issuer.example.com"}, Context.JWT_AUDIENCE),
        ({"jwt_audience": "a"}, Context.JWT_ISSUER),
        ({"cors_allowed_origins": "app.example.com"}, Context.CORS_ALLOWED_ORIGINS),
        ({"alarm_email": "nobody"}, Context.ALARM_EMAIL),
        ({"alarm_topic_arn": "alerts"}, Context.ALARM_TOPIC_ARN),
        ({"alarm_topic_arn": "arn:aws:sqs:eu-west-1:123456789012:alerts"}, Context.ALARM_TOPIC_ARN),
        ({"max_active_tasks_per_user": "0"}, Context.MAX_ACTIVE_TASKS_PER_USER),
        ({"max_active_tasks_per_user": "many"}, Context.MAX_ACTIVE_TASKS_PER_USER),
        ({"max_backlog": "-1"}, Context.MAX_BACKLOG),
        ({"hot_key_rate_per_minute": "0"}, Context.HOT_KEY_RATE_PER_MINUTE),
        ({"hot_key_rate_per_minute": "nan"}, Context.HOT_KEY_RATE_PER_MINUTE),
        ({"hot_key_rate_per_minute": "fast"}, Context.HOT_KEY_RATE_PER_MINUTE),
        ({"hot_key_burst": "0"}, Context.HOT_KEY_BURST),
        ({"apigateway_cloudwatch_role": "yes"}, Context.APIGATEWAY_CLOUDWATCH_ROLE),
        ({"worker_vpc": '{"subnet_ids": ["subnet-0a"]}'}, Context.WORKER_VPC),
        ({"worker_vpc": '{"subnet_ids": ["subnet-0a"], "security_group_ids": ["subnet-0b"]}'}, Context.WORKER_VPC),
        ({"delivery_vpc": '{"vpc_id": "vpc-0a", "subnet_ids": []}'}, Context.DELIVERY_VPC),
    ],
)
def test_a_wrong_context_value_is_refused_with_its_key(context, complaint):
    with pytest.raises(ValueError, match=complaint):
        settings_from(**context)


@pytest.mark.parametrize(("value", "expected"), [(None, False), ("true", True), ("False", False), (True, True)])
def test_the_account_logs_role_is_off_unless_the_context_turns_it_on(value, expected):
    context = {} if value is None else {"apigateway_cloudwatch_role": value}

    assert settings_from(**context).apigateway_cloudwatch_role is expected


@pytest.mark.parametrize(("hours", "days"), [(1, 1), (23, 1), (24, 2), (47, 2), (72, 4)])
def test_results_expire_after_retention_plus_the_longest_upload_in_whole_days(hours, days):
    # S3 counts from the start of the upload, which may begin up to a worker timeout before the task ends.
    settings = settings_from(results_retention_hours=hours)

    assert settings.results_expiry_days == days
    assert settings.results_expiry_days * 24 * 3600 >= hours * 3600 + Worker.FUNCTION_TIMEOUT_SEC


def test_the_deploy_guide_lists_every_context_key_and_the_admission_defaults():
    guide = (Path(__file__).resolve().parents[2] / "docs" / "deploy.md").read_text()
    keys = [value for name, value in vars(Context).items() if name.isupper()]

    assert [key for key in keys if f"`{key}`" not in guide] == []
    rows = {line.split("|")[1].strip(): line for line in guide.splitlines() if line.startswith("| `")}
    assert (
        f"| {Admission.MAX_ACTIVE_TASKS_PER_USER} (`Admission.MAX_ACTIVE_TASKS_PER_USER`) |"
        in (rows["`max_active_tasks_per_user`"])
    )
    assert f"| {Admission.MAX_BACKLOG} (`Admission.MAX_BACKLOG`) |" in rows["`max_backlog`"]
    assert f"| {HotKey.RATE_PER_MINUTE} and {HotKey.BURST} (" in rows["`hot_key_rate_per_minute`, `hot_key_burst`"]


# --- Alarm destinations -----------------------------------------------------------------------


def test_prod_refuses_to_synthesize_without_an_alarm_destination():
    with pytest.raises(ValueError, match="stage prod needs an alarm destination") as refusal:
        settings_from(stage="prod")

    # The message names both ways out.
    assert f"-c {Context.ALARM_EMAIL}=" in str(refusal.value)
    assert f"-c {Context.ALARM_TOPIC_ARN}=" in str(refusal.value)


@pytest.mark.parametrize(
    "destination",
    [{"alarm_email": "oncall@example.com"}, {"alarm_topic_arn": "arn:aws-cn:sns:cn-north-1:123456789012:pager"}],
)
def test_prod_accepts_an_email_or_an_existing_topic(destination):
    settings = settings_from(stage="prod", **destination)

    assert settings.has_alarm_destination
    assert settings.alarm_topic_arn == destination.get("alarm_topic_arn")
    assert settings.alarm_email == destination.get("alarm_email")


def test_dev_synthesizes_without_an_alarm_destination():
    settings = settings_from(stage="dev")

    assert not settings.requires_alarm_destination
    assert not settings.has_alarm_destination


# --- Account quota ----------------------------------------------------------------------------


def test_the_account_quota_needed_counts_the_reservations_and_lambdas_unreserved_minimum():
    reserved = (
        Sizing.LIFECYCLE_RESERVED_CONCURRENCY
        + Sizing.CALLBACK_RESERVED_CONCURRENCY
        + Sizing.SCHEDULE_RESERVED_CONCURRENCY
    )

    assert AccountQuota.lambda_concurrency_needed() == reserved + AccountQuota.LAMBDA_MIN_UNRESERVED_CONCURRENCY
    # The deploy guide states the same number.
    guide = (Path(__file__).resolve().parents[2] / "docs" / "deploy.md").read_text()
    assert f"at least **{AccountQuota.lambda_concurrency_needed()}**" in guide
