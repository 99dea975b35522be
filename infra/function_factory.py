"""One definition of how our Lambda functions are built: runtime, architecture, packaging,
tracing, logging and Powertools settings. Each function gets its own role with no policy but
writing to its own log group; callers add exactly the actions it uses."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from aws_cdk import Duration, RemovalPolicy, Size, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from exports.config.metrics import metrics_namespace
from exports.config.names import SERVICE_NAME
from exports.config.settings import FunctionSettings
from infra.nag import acknowledge
from infra.packaging import FUNCTIONS_DIR, PackageSpec, lambda_code, requirements_for
from infra.settings import StageSettings

RUNTIME: Final = lambda_.Runtime.PYTHON_3_12
# The alias a SnapStart function is invoked through: SnapStart runs published versions only, and
# every deploy publishes one and points the alias at it (docs/performance.md, "SnapStart").
LIVE_ALIAS: Final = "live"
ARCHITECTURE: Final = lambda_.Architecture.ARM_64
HANDLER: Final = "handler.lambda_handler"
# CloudWatch Logs retention by days (the values StageSettings accepts).
RETENTION: Final = {
    7: logs.RetentionDays.ONE_WEEK,
    14: logs.RetentionDays.TWO_WEEKS,
    30: logs.RetentionDays.ONE_MONTH,
    90: logs.RetentionDays.THREE_MONTHS,
    180: logs.RetentionDays.SIX_MONTHS,
    365: logs.RetentionDays.ONE_YEAR,
}


def runtime_python_version() -> str:
    """``"3.12"`` for the ``python3.12`` runtime: pip and the bytecode compiler target it."""
    return RUNTIME.name.removeprefix("python")


def removal_policy(settings: StageSettings) -> RemovalPolicy:
    """Keep data and logs when a protected stage's stack is deleted or a resource is replaced,
    but not when the resource's own creation rolls back (CloudFormation's
    ``RetainExceptOnCreate``): a failed first deploy then leaves nothing behind that would be
    orphaned or block the next one. Unprotected stages clean up."""
    return RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE if settings.protect_data else RemovalPolicy.DESTROY


def log_group(
    scope: Construct, construct_id: str, settings: StageSettings, log_group_name: str | None = None
) -> logs.LogGroup:
    """A log group with the stage's retention and removal policy (named ``log_group_name``, or
    by CloudFormation)."""
    return logs.LogGroup(
        scope,
        construct_id,
        log_group_name=log_group_name,
        retention=RETENTION[settings.log_retention_days],
        removal_policy=removal_policy(settings),
    )


@dataclass(frozen=True)
class FunctionSpec:
    """What differs between our functions."""

    name: str  # its folder under functions/
    description: str
    memory_mb: int
    timeout_sec: int
    # Runtime dependencies it imports, by name; the versions come from pyproject.toml.
    distributions: tuple[str, ...]
    # What its handler parses from the environment (exports/config/settings.py): the function gets
    # exactly the variables these settings read (:meth:`own_environment`).
    runtime_settings: type[FunctionSettings]
    # /tmp (Lambda ephemeral storage); None keeps Lambda's default of 512 MiB.
    ephemeral_storage_mib: int | None = None
    # Reserved concurrency (a cap taken from the account's pool) when the stage reserves
    # (StageSettings.reserved_concurrency); None leaves it unreserved.
    reserved_concurrency: int | None = None
    # Data files of the shared package only it loads (infra.packaging.OPTIONAL_SHARED_DATA).
    shared_data: tuple[str, ...] = ()
    # Runs from a SnapStart snapshot of its published version, invoked through :data:`LIVE_ALIAS`
    # (its handler registers exports/snapstart.py's hooks).
    snap_start: bool = False

    def own_environment(self, available: Mapping[str, str]) -> dict[str, str]:
        """Of the ``available`` variables, the ones its settings read; ``ValueError`` naming
        any they require that is not there."""
        missing = self.runtime_settings.missing_variables(available)
        if missing:
            raise ValueError(f"the {self.name} function needs {', '.join(missing)}")
        reads = self.runtime_settings.variables()
        return {name: value for name, value in available.items() if name in reads}

    def package(self, extra_files: tuple[tuple[Path, str], ...] = ()) -> PackageSpec:
        """What goes into its Lambda package (``extra_files``: see :class:`PackageSpec`)."""
        return PackageSpec(
            handler_dir=FUNCTIONS_DIR / self.name,
            requirements=requirements_for(self.distributions),
            python_version=runtime_python_version(),
            extra_files=extra_files,
            shared_data=self.shared_data,
        )


class ServiceFunction(Construct):
    """A Python function of this service with its own role and log group."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        spec: FunctionSpec,
        settings: StageSettings,
        environment: Mapping[str, str],
        extra_files: tuple[tuple[Path, str], ...] = (),
        function_name: str | None = None,
    ) -> None:
        """``function_name`` fixes its physical name (CloudFormation names it otherwise): for a
        function whose ARN must be known without a reference to it."""
        super().__init__(scope, construct_id)
        self.spec = spec
        # What it reserves of the account's concurrency: nothing unless the stage asks for reservations.
        self.reserved_concurrency = spec.reserved_concurrency if settings.reserved_concurrency else None
        self.package = spec.package(extra_files)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"{SERVICE_NAME} {spec.name} function: only the actions it uses",
        )
        self.log_group = log_group(self, "Logs", settings)
        self.function = lambda_.Function(
            self,
            "Function",
            description=spec.description,
            function_name=function_name,
            runtime=RUNTIME,
            architecture=ARCHITECTURE,
            handler=HANDLER,
            code=lambda_code(self.package, RUNTIME),
            role=self.role,
            memory_size=spec.memory_mb,
            timeout=Duration.seconds(spec.timeout_sec),
            # A SnapStart function's published versions: only the live alias's is kept, so only its
            # snapshot is cached (and billed); CloudFormation deletes the previous one once the
            # alias has moved (docs/cost.md, "SnapStart").
            current_version_options=(
                lambda_.VersionOptions(removal_policy=RemovalPolicy.DESTROY) if spec.snap_start else None
            ),
            ephemeral_storage_size=(
                Size.mebibytes(spec.ephemeral_storage_mib) if spec.ephemeral_storage_mib is not None else None
            ),
            reserved_concurrent_executions=self.reserved_concurrency,
            snap_start=lambda_.SnapStartConf.ON_PUBLISHED_VERSIONS if spec.snap_start else None,
            tracing=lambda_.Tracing.ACTIVE,
            log_group=self.log_group,
            environment={
                "POWERTOOLS_SERVICE_NAME": SERVICE_NAME,
                "POWERTOOLS_METRICS_NAMESPACE": metrics_namespace(Stack.of(self).stack_name),
                "POWERTOOLS_LOG_LEVEL": settings.log_level,
                **environment,
            },
        )
        self.log_group.grant_write(self.role)
        # What invokes it: the alias of its newest published version where it snap-starts (the
        # unpublished $LATEST never does), the function otherwise.
        self.invocable: lambda_.IFunction = (
            lambda_.Alias(self, "Live", alias_name=LIVE_ALIAS, version=self.function.current_version)
            if spec.snap_start
            else self.function
        )
        acknowledge(
            self.function,
            "AwsSolutions-L1",
            f"Pinned to {RUNTIME.name}: the wheels and the compiled bytecode are built for exactly this version, "
            "so moving to a newer runtime is a deliberate upgrade, not an automatic one.",
        )
        acknowledge(
            self.role,
            "AwsSolutions-IAM5[Resource::*]",
            "X-Ray tracing: xray:PutTraceSegments and xray:PutTelemetryRecords support no resource-level scoping.",
        )

    def allow(self, actions: list[str], resources: list[str], conditions: Mapping[str, Any] | None = None) -> None:
        """Let the function's role perform ``actions`` on ``resources`` (under ``conditions``)."""
        self.role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=actions, resources=resources, conditions=dict(conditions) if conditions else None
            )
        )
