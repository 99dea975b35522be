"""Deployment settings: what differs between stages, and what ``cdk synth -c key=value`` may set.

Plain Python on purpose (no CDK import): the cost script and fast tests read it too. Names,
limits and timeouts shared with the function code come from :mod:`exports.core.config`, the
functions' sizes from :mod:`infra.sizing`; this module holds what differs by stage (alarm
thresholds, log retention) and the admission limits a deployment may tune, whose defaults are
:class:`exports.core.config.limits.Admission` and :class:`exports.core.config.limits.HotKey` (the
functions get them through their ``Env`` variables).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Final, TypeGuard

from exports.core.config.destinations import Destinations
from exports.core.config.fan_out import FanOut
from exports.core.config.limits import Admission, HotKey
from exports.core.config.queues import Queue
from exports.core.config.results import Results
from exports.core.config.retry import PUSH_BATCH_RETRY
from exports.core.config.schedules import Schedules
from exports.core.config.worker import Worker

DEFAULT_STAGE: Final = "dev"
LOG_LEVELS: Final = ("DEBUG", "INFO", "WARNING", "ERROR")
# Log retention periods (days) the app offers; CloudWatch Logs accepts only fixed values.
LOG_RETENTION_DAYS_ALLOWED: Final = (7, 14, 30, 90, 180, 365)
SECONDS_PER_DAY: Final = 24 * 3600


class Context:
    """Context keys the app reads (``cdk.json`` or ``-c key=value`` on the command line)."""

    STAGE: Final = "stage"
    JWT_ISSUER: Final = "jwt_issuer"
    JWT_AUDIENCE: Final = "jwt_audience"
    CORS_ALLOWED_ORIGINS: Final = "cors_allowed_origins"
    ALARM_EMAIL: Final = "alarm_email"
    # An existing SNS topic (same account and region) the alarms notify as well, e.g. a chat or
    # paging integration's.
    ALARM_TOPIC_ARN: Final = "alarm_topic_arn"
    RESULTS_RETENTION_HOURS: Final = "results_retention_hours"
    LOG_LEVEL: Final = "log_level"
    LOG_RETENTION_DAYS: Final = "log_retention_days"
    MAX_ACTIVE_TASKS_PER_USER: Final = "max_active_tasks_per_user"
    MAX_BACKLOG: Final = "max_backlog"
    HOT_KEY_RATE_PER_MINUTE: Final = "hot_key_rate_per_minute"
    HOT_KEY_BURST: Final = "hot_key_burst"
    # Scheduled exports (docs/schedules.md): schedules per user, and their shortest interval.
    MAX_SCHEDULES_PER_USER: Final = "max_schedules_per_user"
    MIN_SCHEDULE_INTERVAL_MIN: Final = "min_schedule_interval_min"
    # E-mail of scheduled runs through SES: the verified sender address (unset: no mail, a schedule
    # with recipients is refused), and the domains recipients may belong to (unset: none, only
    # the schedule owner's own verified address: never an open relay).
    MAIL_SENDER: Final = "mail_sender"
    MAIL_ALLOWED_DOMAINS: Final = "mail_allowed_domains"
    # The largest file a run's mail carries as an attachment, in bytes (0: never; at most
    # Schedules.MAIL_ATTACHMENT_MAX_BYTES, under SES's message size).
    MAIL_ATTACHMENT_MAX_BYTES: Final = "mail_attachment_max_bytes"
    # The declaration of sources and export types to deploy (a path; default: exports.toml).
    EXPORTS_CONFIG: Final = "exports_config"
    # JSON object, per declared source the keys that replace the file's (its connection on AWS):
    # '{"shop": {"secret_arn": "arn:..."}}'.
    SOURCES: Final = "sources"
    # JSON object: the worker's VPC subnets and security groups, to reach a database in a VPC:
    # '{"subnet_ids": ["subnet-..."], "security_group_ids": ["sg-..."]}'.
    WORKER_VPC: Final = "worker_vpc"
    # JSON object: the function that delivers files (the callback function) in a VPC's private
    # subnets, so that its connections leave from the NAT gateway's fixed address that customers
    # allowlist: '{"vpc_id": "vpc-...", "subnet_ids": ["subnet-..."]}', with either
    # "security_group_ids": ["sg-..."] (yours, as they are) or "egress_ports": [22, 2222] (the
    # ports the security group the stack creates lets out besides 443; default [22]).
    DELIVERY_VPC: Final = "delivery_vpc"
    # The most partitions one export is split into (the fan-out Map's MaxConcurrency).
    MAX_PARTITIONS: Final = "max_partitions"
    # Rows per partition: a larger export is split (exports.core.config.env.Env.PARTITION_ROWS).
    PARTITION_ROWS: Final = "partition_rows"
    # true: the stack sets API Gateway's account-level CloudWatch Logs role (AWS::ApiGateway::Account),
    # which the push channel's WebSocket stage needs for its access logs. Off by default: it is one
    # setting per account and region, which another stack or an administrator may own.
    APIGATEWAY_CLOUDWATCH_ROLE: Final = "apigateway_cloudwatch_role"
    # true: the push channel's WebSocket stage writes access logs, which needs that role in the
    # account (set by another stack or an administrator, or by this one with the key above, which
    # turns the logs on by itself). Off by default: a fresh account has no role, and a stage that
    # logs without one fails its create and rolls the whole first deploy back.
    WEBSOCKET_ACCESS_LOGS: Final = "websocket_access_logs"
    # true: the lifecycle, callback and schedule functions get their reserved concurrency
    # (infra.sizing.Sizing), which needs an account quota of AccountQuota.lambda_concurrency_needed()
    # executions. Off by default: a new account's quota is often 10, and Lambda refuses any
    # reservation there, rolling the first deploy back.
    RESERVED_CONCURRENCY: Final = "reserved_concurrency"
    # Where ticket alarms (docs/alarms.md: customer-caused or single failures, the push channel,
    # the demo tables) go besides the stack's tickets topic; without either, alarm_email gets them too.
    TICKET_EMAIL: Final = "ticket_email"
    TICKET_TOPIC_ARN: Final = "ticket_topic_arn"


@dataclass(frozen=True)
class AlarmThresholds:
    """Stage-dependent alarm thresholds. A function error or throttle, a dead letter, a failed or
    throttled execution, a DynamoDB throttle, a failed export, callback or enqueue always alarms
    (threshold 1; the lifecycle workflow's functions on sustained throttling only)."""

    oldest_message_age_sec: int
    api_5xx_per_5_min: int
    # The push channel's WebSocket API: integration runs that failed (ExecutionError) per 5 minutes.
    websocket_errors_per_5_min: int
    # Exports that reached their deadline per 5 minutes (one is a task's own short timeout).
    timed_out_tasks_per_5_min: int
    # The push function's IteratorAge: well before records reach PUSH_BATCH_RETRY.max_age_sec and are given up.
    push_iterator_age_ms: int = PUSH_BATCH_RETRY.max_age_sec * 1000 // 5
    # The account's Lambda concurrent executions, in percent of its quota (all functions of the
    # account and region): over it, any function may be throttled next.
    account_concurrency_percent: int = 80
    # A worker run's longest duration in percent of its timeout: a run that long is close to being
    # killed (long exports hand over to a new run well before, docs/performance.md).
    worker_duration_percent_of_timeout: int = 90
    # The oldest dead letter's age: a lane's dead letters are deleted at Queue.DLQ_RETENTION_SEC,
    # so this leaves two days to redrive them.
    oldest_dead_letter_age_sec: int = Queue.DLQ_RETENTION_SEC - 2 * SECONDS_PER_DAY
    # Submits refused with 429 (quota, backlog) in percent of all submits, per 5 minutes, when at
    # least rejected_min_submits were made (a handful of refusals of one busy user is no signal).
    rejected_percent: int = 20
    rejected_min_submits: int = 20
    # Submits refused for capacity (WOULD_TIME_OUT, docs/capacity.md) per 5 minutes, in each of
    # capacity_refused_periods periods in a row: a burst is refused on purpose, a demand that
    # stays above the lanes' capacity for that long means the lanes are too small for it.
    capacity_refused_per_period: int = 100
    capacity_refused_periods: int = 3
    # SES's account reputation (docs/alarms.md#mail-reputation): AWS reviews an account at a 5 %
    # bounce or 0.1 % complaint rate and may pause its sending at 10 % or 0.5 %.
    mail_bounce_rate: float = 0.05
    mail_complaint_rate: float = 0.001


@dataclass(frozen=True)
class AdmissionLimits:
    """Admission limits of the stage: the API refuses submits over the per-user quota or the
    backlog (``429``), the worker defers tasks whose hot key is over its rate."""

    max_active_tasks_per_user: int = Admission.MAX_ACTIVE_TASKS_PER_USER
    # Approximate visible messages over all lanes.
    max_backlog: int = Admission.MAX_BACKLOG
    hot_key_rate_per_minute: float = HotKey.RATE_PER_MINUTE
    hot_key_burst: int = HotKey.BURST


@dataclass(frozen=True)
class ScheduleLimits:
    """Per-user limits of scheduled exports: over the cap the API answers ``429``
    (``SCHEDULE_LIMIT_REACHED``), a shorter interval ``422`` (``INTERVAL_TOO_SHORT``)."""

    max_per_user: int = Schedules.MAX_PER_USER_DEFAULT
    min_interval_min: int = Schedules.MIN_INTERVAL_MIN_DEFAULT


@dataclass(frozen=True)
class Mail:
    """E-mail of scheduled runs through SES (docs/deploy.md, "Scheduled exports and mail"): the verified sender (None:
    no mail) and the domains recipients may belong to (empty: none but the owner's own verified address)."""

    sender: str | None = None
    allowed_domains: tuple[str, ...] = ()
    # The largest file a run's mail carries itself (bytes; 0: the link only).
    attachment_max_bytes: int = Schedules.MAIL_ATTACHMENT_DEFAULT_BYTES

    @property
    def sender_domain(self) -> str | None:
        """The domain of the sender's address (an SES identity may be the domain or the address)."""
        return self.sender.rsplit("@", 1)[1] if self.sender else None


@dataclass(frozen=True)
class JwtIssuer:
    """An external OIDC provider whose tokens the API accepts instead of a created user pool."""

    issuer: str
    audience: tuple[str, ...]


@dataclass(frozen=True)
class StageSettings:
    """Everything the stack needs to know about the stage it deploys."""

    stage: str
    log_level: str
    log_retention_days: int
    # Deletion protection on tables and the user pool, and RETAIN on stack deletion (except when
    # the resource's own creation rolls back: RetainExceptOnCreate). Unprotected
    # stages also empty their buckets when the stack is deleted (auto-delete objects).
    protect_data: bool
    alarms: AlarmThresholds
    # Whether the stack refuses to synthesize without an alarm destination (alarm_email or
    # alarm_topic_arn); a stage that does not require one warns instead.
    requires_alarm_destination: bool = False
    results_retention_hours: int = Results.RETENTION_HOURS_DEFAULT
    jwt: JwtIssuer | None = None
    cors_allowed_origins: tuple[str, ...] = ()
    alarm_email: str | None = None
    alarm_topic_arn: str | None = None
    admission: AdmissionLimits = AdmissionLimits()
    schedule_limits: ScheduleLimits = ScheduleLimits()
    mail: Mail = Mail()
    # The declaration file to package (None: the repository's exports.toml).
    exports_config: str | None = None
    # Per declared source, keys that replace the file's (exports.core.config.env.Env.SOURCE_OVERRIDES).
    source_overrides: dict[str, dict[str, Any]] = field(default_factory=dict)
    worker_vpc: WorkerVpc | None = None
    # The callback function's VPC (Context.DELIVERY_VPC; None: outside any VPC, no fixed address).
    delivery_vpc: DeliveryVpc | None = None
    # Parallel partitions per export (exports.core.config.env.Env.MAX_PARTITIONS, the Map's MaxConcurrency).
    max_partitions: int = FanOut.MAX_PARTITIONS_DEFAULT
    # Rows per partition of a split export (exports.core.config.env.Env.PARTITION_ROWS).
    partition_rows: int = FanOut.PARTITION_ROWS
    # Whether the stack sets API Gateway's account-level CloudWatch Logs role (Context.APIGATEWAY_CLOUDWATCH_ROLE).
    apigateway_cloudwatch_role: bool = False
    # Whether the WebSocket stage logs (Context.WEBSOCKET_ACCESS_LOGS); None: when the stack sets the role.
    websocket_access_logs_setting: bool | None = None
    # Whether the functions of the lifecycle workflow and the schedules reserve their concurrency
    # (Context.RESERVED_CONCURRENCY).
    reserved_concurrency: bool = False
    ticket_email: str | None = None
    ticket_topic_arn: str | None = None

    @property
    def websocket_access_logs(self) -> bool:
        """Whether the push channel's WebSocket stage writes access logs: asked for, or the stack
        sets the account's logs role itself; never by default (a fresh account has no role)."""
        if self.websocket_access_logs_setting is not None:
            return self.websocket_access_logs_setting
        return self.apigateway_cloudwatch_role

    @property
    def has_alarm_destination(self) -> bool:
        """Whether an alarm reaches someone: an e-mail subscription or an existing topic."""
        return bool(self.alarm_email or self.alarm_topic_arn)

    @property
    def results_expiry_days(self) -> int:
        """Whole days after which S3 deletes a result file.

        S3 counts from the object's creation (the start of a multipart upload), the service from
        the task's end: the worker may still be uploading for up to its timeout, so that is added
        before rounding up to whole days.
        """
        seconds = self.results_retention_hours * 3600 + Worker.FUNCTION_TIMEOUT_SEC
        return math.ceil(seconds / SECONDS_PER_DAY)

    @classmethod
    def preset(cls, stage: str) -> StageSettings:
        """The defaults of ``stage`` (``dev`` or ``prod``)."""
        try:
            return PRESETS[stage]
        except KeyError:
            raise ValueError(f"context {Context.STAGE}={stage!r}: expected one of {sorted(PRESETS)}") from None

    @classmethod
    def from_context(cls, lookup: Callable[[str], Any]) -> StageSettings:
        """The stage preset with the overrides found by ``lookup`` (``app.node.try_get_context``)."""
        settings = cls.preset(str(lookup(Context.STAGE) or DEFAULT_STAGE))
        overrides: dict[str, Any] = {}
        if (level := lookup(Context.LOG_LEVEL)) is not None:
            overrides["log_level"] = _log_level(level)
        if (days := lookup(Context.LOG_RETENTION_DAYS)) is not None:
            overrides["log_retention_days"] = _log_retention_days(days)
        if (hours := lookup(Context.RESULTS_RETENTION_HOURS)) is not None:
            overrides["results_retention_hours"] = _retention_hours(hours)
        if (issuer := lookup(Context.JWT_ISSUER)) is not None:
            overrides["jwt"] = _jwt_issuer(str(issuer), lookup(Context.JWT_AUDIENCE))
        elif lookup(Context.JWT_AUDIENCE) is not None:
            raise ValueError(f"context {Context.JWT_AUDIENCE} needs {Context.JWT_ISSUER} too")
        if (origins := lookup(Context.CORS_ALLOWED_ORIGINS)) is not None:
            overrides["cors_allowed_origins"] = _origins(origins)
        if email := lookup(Context.ALARM_EMAIL):
            overrides["alarm_email"] = _email(Context.ALARM_EMAIL, str(email))
        if topic := lookup(Context.ALARM_TOPIC_ARN):
            overrides["alarm_topic_arn"] = _topic_arn(Context.ALARM_TOPIC_ARN, str(topic))
        if email := lookup(Context.TICKET_EMAIL):
            overrides["ticket_email"] = _email(Context.TICKET_EMAIL, str(email))
        if topic := lookup(Context.TICKET_TOPIC_ARN):
            overrides["ticket_topic_arn"] = _topic_arn(Context.TICKET_TOPIC_ARN, str(topic))
        overrides["admission"] = _admission(settings.admission, lookup)
        overrides["schedule_limits"] = _schedule_limits(lookup)
        overrides["mail"] = _mail(lookup)
        overrides.update(_workload(lookup))
        resolved = replace(settings, **overrides)
        if resolved.requires_alarm_destination and not resolved.has_alarm_destination:
            raise ValueError(MISSING_ALARM_DESTINATION.format(stage=resolved.stage))
        return resolved


@dataclass(frozen=True)
class WorkerVpc:
    """The subnets and security groups the worker runs in (a database in a VPC)."""

    subnet_ids: tuple[str, ...]
    security_group_ids: tuple[str, ...]


@dataclass(frozen=True)
class DeliveryVpc:
    """Where the function that delivers files runs: an existing VPC's private subnets (routed to a
    NAT gateway with an Elastic IP), in the given security groups, or else in one the stack creates
    that lets out TCP to 443 and ``egress_ports`` only."""

    vpc_id: str
    subnet_ids: tuple[str, ...]
    security_group_ids: tuple[str, ...] = ()
    egress_ports: tuple[int, ...] = (Destinations.SFTP_PORT_DEFAULT,)


def _json_object(key: str, value: Any) -> dict[str, Any]:
    """A context value that is a JSON object (given as JSON text on the command line)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as error:
            raise ValueError(f"context {key}: not JSON ({error})") from None
    if not isinstance(value, dict):
        raise ValueError(f"context {key}: expected a JSON object")
    return value


def _ids(value: Any, prefix: str) -> TypeGuard[list[str]]:
    """Whether ``value`` is a non-empty list of AWS ids that start with ``prefix``."""
    return isinstance(value, list) and bool(value) and all(isinstance(i, str) and i.startswith(prefix) for i in value)


def _worker_vpc(value: dict[str, Any]) -> WorkerVpc:
    subnets, groups = value.get("subnet_ids"), value.get("security_group_ids")
    if not (_ids(subnets, "subnet-") and _ids(groups, "sg-")) or set(value) != {"subnet_ids", "security_group_ids"}:
        expected = '{"subnet_ids": ["subnet-..."], "security_group_ids": ["sg-..."]}'
        raise ValueError(f"context {Context.WORKER_VPC}: expected {expected}")
    return WorkerVpc(tuple(subnets), tuple(groups))


_DELIVERY_VPC_SHAPE: Final = (
    '{"vpc_id": "vpc-...", "subnet_ids": ["subnet-..."]} with "security_group_ids": ["sg-..."] or "egress_ports": [22]'
)
_DELIVERY_VPC_KEYS: Final = frozenset({"vpc_id", "subnet_ids", "security_group_ids", "egress_ports"})


def _delivery_vpc(value: dict[str, Any]) -> DeliveryVpc:
    """The callback function's VPC: the VPC and its subnets, and either the operator's security
    groups or the ports the stack's own group lets out (not both: a given group is used as it is)."""
    key = Context.DELIVERY_VPC
    vpc_id, subnets = value.get("vpc_id"), value.get("subnet_ids")
    groups, ports = value.get("security_group_ids"), value.get("egress_ports")
    if not set(value) <= _DELIVERY_VPC_KEYS or not (isinstance(vpc_id, str) and vpc_id.startswith("vpc-")):
        raise ValueError(f"context {key}: expected {_DELIVERY_VPC_SHAPE}")
    if not _ids(subnets, "subnet-"):
        raise ValueError(f"context {key}: subnet_ids must list the private subnets (subnet-...)")
    if groups is not None and ports is not None:
        raise ValueError(f"context {key}: give security_group_ids or egress_ports, not both")
    if groups is not None:
        if not _ids(groups, "sg-"):
            raise ValueError(f"context {key}: security_group_ids must list security groups (sg-...)")
        return DeliveryVpc(vpc_id, tuple(subnets), security_group_ids=tuple(groups))
    if ports is None:
        return DeliveryVpc(vpc_id, tuple(subnets))
    valid = isinstance(ports, list) and ports and all(type(p) is int and 0 < p < 65536 for p in ports)
    if not valid:
        raise ValueError(f"context {key}: egress_ports must list TCP ports (1 to 65535), e.g. [22, 2222]")
    return DeliveryVpc(vpc_id, tuple(subnets), egress_ports=tuple(dict.fromkeys(ports)))


MISSING_ALARM_DESTINATION: Final = (
    "stage {stage} needs an alarm destination, or its alarms reach no one: add "
    f"-c {Context.ALARM_EMAIL}=oncall@example.com (confirm the e-mail AWS sends) or "
    f"-c {Context.ALARM_TOPIC_ARN}=arn:<partition>:sns:<region>:<account>:<topic> (an existing topic whose policy "
    "lets cloudwatch.amazonaws.com publish)"
)


PRESETS: Final = {
    "dev": StageSettings(
        stage="dev",
        log_level="DEBUG",
        log_retention_days=14,
        protect_data=False,
        alarms=AlarmThresholds(
            oldest_message_age_sec=4 * Worker.FUNCTION_TIMEOUT_SEC,
            api_5xx_per_5_min=10,
            websocket_errors_per_5_min=10,
            timed_out_tasks_per_5_min=10,
        ),
    ),
    "prod": StageSettings(
        stage="prod",
        log_level="INFO",
        log_retention_days=90,
        protect_data=True,
        requires_alarm_destination=True,
        alarms=AlarmThresholds(
            oldest_message_age_sec=2 * Worker.FUNCTION_TIMEOUT_SEC,
            api_5xx_per_5_min=5,
            websocket_errors_per_5_min=5,
            timed_out_tasks_per_5_min=5,
        ),
    ),
}


def _as_tuple(value: Any) -> tuple[str, ...]:
    """A list from cdk.json, or a comma-separated string from ``-c key=a,b``."""
    items = value if isinstance(value, list | tuple) else str(value).split(",")
    return tuple(str(item).strip() for item in items if str(item).strip())


def _as_int(key: str, value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError(f"context {key}={value!r}: expected a whole number") from None


def _log_level(value: Any) -> str:
    level = str(value).upper()
    if level not in LOG_LEVELS:
        raise ValueError(f"context {Context.LOG_LEVEL}={value!r}: expected one of {LOG_LEVELS}")
    return level


def _log_retention_days(value: Any) -> int:
    days = _as_int(Context.LOG_RETENTION_DAYS, value)
    if days not in LOG_RETENTION_DAYS_ALLOWED:
        raise ValueError(f"context {Context.LOG_RETENTION_DAYS}={days}: expected one of {LOG_RETENTION_DAYS_ALLOWED}")
    return days


def _retention_hours(value: Any) -> int:
    hours = _as_int(Context.RESULTS_RETENTION_HOURS, value)
    if not Results.RETENTION_HOURS_MIN <= hours <= Results.RETENTION_HOURS_MAX:
        raise ValueError(
            f"context {Context.RESULTS_RETENTION_HOURS}={hours}: expected "
            f"{Results.RETENTION_HOURS_MIN}..{Results.RETENTION_HOURS_MAX}"
        )
    return hours


def _jwt_issuer(issuer: str, audience: Any) -> JwtIssuer:
    if not issuer.startswith("https://"):
        raise ValueError(f"context {Context.JWT_ISSUER}={issuer!r}: expected an https:// URL")
    audiences = _as_tuple(audience) if audience is not None else ()
    if not audiences:
        raise ValueError(f"context {Context.JWT_ISSUER} needs {Context.JWT_AUDIENCE} (the client id or API audience)")
    return JwtIssuer(issuer=issuer, audience=audiences)


def _origins(value: Any) -> tuple[str, ...]:
    origins = _as_tuple(value)
    for origin in origins:
        if origin != "*" and not origin.startswith(("https://", "http://")):
            raise ValueError(f"context {Context.CORS_ALLOWED_ORIGINS}: {origin!r} is not an origin (https://host)")
    return origins


def _admission(defaults: AdmissionLimits, lookup: Callable[[str], Any]) -> AdmissionLimits:
    whole_numbers = {
        "max_active_tasks_per_user": Context.MAX_ACTIVE_TASKS_PER_USER,
        "max_backlog": Context.MAX_BACKLOG,
        "hot_key_burst": Context.HOT_KEY_BURST,
    }
    overrides: dict[str, Any] = {
        field: _at_least_one(key, value) for field, key in whole_numbers.items() if (value := lookup(key)) is not None
    }
    if (rate := lookup(Context.HOT_KEY_RATE_PER_MINUTE)) is not None:
        overrides["hot_key_rate_per_minute"] = _positive_number(Context.HOT_KEY_RATE_PER_MINUTE, rate)
    return replace(defaults, **overrides)


def _schedule_limits(lookup: Callable[[str], Any]) -> ScheduleLimits:
    limits = ScheduleLimits()
    if (most := lookup(Context.MAX_SCHEDULES_PER_USER)) is not None:
        limits = replace(limits, max_per_user=_at_least_one(Context.MAX_SCHEDULES_PER_USER, most))
    if (minutes := lookup(Context.MIN_SCHEDULE_INTERVAL_MIN)) is not None:
        # EventBridge Scheduler's finest rate is one minute.
        limits = replace(limits, min_interval_min=_at_least_one(Context.MIN_SCHEDULE_INTERVAL_MIN, minutes))
    return limits


# A DNS name of two labels or more (letters, digits, inner hyphens), as SES verifies domains.
_DOMAIN: Final = re.compile(r"(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")


def _mail(lookup: Callable[[str], Any]) -> Mail:
    sender, domains = lookup(Context.MAIL_SENDER), lookup(Context.MAIL_ALLOWED_DOMAINS)
    attachment = _attachment_max_bytes(lookup(Context.MAIL_ATTACHMENT_MAX_BYTES))
    if not sender:
        if domains:
            raise ValueError(f"context {Context.MAIL_ALLOWED_DOMAINS} needs {Context.MAIL_SENDER} too")
        return Mail()
    local, _, domain = str(sender).strip().rpartition("@")
    if not local or any(char in local for char in ' <>,;"') or not _DOMAIN.fullmatch(domain.lower()):
        raise ValueError(
            f"context {Context.MAIL_SENDER}={sender!r}: expected the address of a verified SES identity "
            "(reports@example.com)"
        )
    allowed = tuple(dict.fromkeys(item.lower().removeprefix("@") for item in _as_tuple(domains or ())))
    for item in allowed:
        if not _DOMAIN.fullmatch(item):
            raise ValueError(f"context {Context.MAIL_ALLOWED_DOMAINS}: {item!r} is not a domain (example.com)")
    return Mail(sender=f"{local}@{domain.lower()}", allowed_domains=allowed, attachment_max_bytes=attachment)


def _attachment_max_bytes(value: Any) -> int:
    """The deployment's attachment limit: 0 up to the most SES's message size leaves room for."""
    if value is None:
        return Schedules.MAIL_ATTACHMENT_DEFAULT_BYTES
    number = _as_int(Context.MAIL_ATTACHMENT_MAX_BYTES, value)
    if not 0 <= number <= Schedules.MAIL_ATTACHMENT_MAX_BYTES:
        raise ValueError(
            f"context {Context.MAIL_ATTACHMENT_MAX_BYTES}={number}: expected 0 to "
            f"{Schedules.MAIL_ATTACHMENT_MAX_BYTES} (SES takes messages up to 40 MB, base64 adds a third)"
        )
    return number


def _workload(lookup: Callable[[str], Any]) -> dict[str, Any]:
    """What the stage exports, from where, and how it splits one export (partition size, how many at once)."""
    overrides: dict[str, Any] = {}
    if (path := lookup(Context.EXPORTS_CONFIG)) is not None:
        overrides["exports_config"] = str(path)
    if (sources := lookup(Context.SOURCES)) is not None:
        overrides["source_overrides"] = _json_object(Context.SOURCES, sources)
    if (most := lookup(Context.MAX_PARTITIONS)) is not None:
        overrides["max_partitions"] = _max_partitions(most)
    if (rows := lookup(Context.PARTITION_ROWS)) is not None:
        overrides["partition_rows"] = _at_least_one(Context.PARTITION_ROWS, rows)
    if (vpc := lookup(Context.WORKER_VPC)) is not None:
        overrides["worker_vpc"] = _worker_vpc(_json_object(Context.WORKER_VPC, vpc))
    if (vpc := lookup(Context.DELIVERY_VPC)) is not None:
        overrides["delivery_vpc"] = _delivery_vpc(_json_object(Context.DELIVERY_VPC, vpc))
    if (role := lookup(Context.APIGATEWAY_CLOUDWATCH_ROLE)) is not None:
        overrides["apigateway_cloudwatch_role"] = _flag(Context.APIGATEWAY_CLOUDWATCH_ROLE, role)
    if (logs := lookup(Context.WEBSOCKET_ACCESS_LOGS)) is not None:
        overrides["websocket_access_logs_setting"] = _flag(Context.WEBSOCKET_ACCESS_LOGS, logs)
    if (reserved := lookup(Context.RESERVED_CONCURRENCY)) is not None:
        overrides["reserved_concurrency"] = _flag(Context.RESERVED_CONCURRENCY, reserved)
    return overrides


def _flag(key: str, value: Any) -> bool:
    """A yes/no context value: a JSON boolean from cdk.json, or ``true``/``false`` from ``-c``."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text not in ("true", "false"):
        raise ValueError(f"context {key}={value!r}: expected true or false")
    return text == "true"


def _max_partitions(value: Any) -> int:
    number = _at_least_one(Context.MAX_PARTITIONS, value)
    if number > FanOut.MAX_PARTITIONS_LIMIT:
        raise ValueError(f"context {Context.MAX_PARTITIONS}={number}: expected at most {FanOut.MAX_PARTITIONS_LIMIT}")
    return number


def _at_least_one(key: str, value: Any) -> int:
    number = _as_int(key, value)
    if number < 1:
        raise ValueError(f"context {key}={number}: expected at least 1")
    return number


def _positive_number(key: str, value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"context {key}={value!r}: expected a number") from None
    if not 0 < number < math.inf:
        raise ValueError(f"context {key}={value!r}: expected a number above 0")
    return number


def _topic_arn(key: str, value: str) -> str:
    parts = value.split(":")
    if len(parts) != 6 or parts[0] != "arn" or parts[2] != "sns" or not all(parts[3:]):
        raise ValueError(f"context {key}={value!r}: expected arn:<partition>:sns:<region>:<account>:<name>")
    return value


def _email(key: str, value: str) -> str:
    if "@" not in value:
        raise ValueError(f"context {key}={value!r}: expected an e-mail address")
    return value
