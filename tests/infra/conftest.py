"""Infrastructure suite: the CDK app synthesized at most once per session, shared by every test.

Scope: what ``cdk deploy`` would create, checked at synth time (no AWS account here). One app
holds two stacks: ``dev`` with the defaults a newcomer deploys on a fresh account (a created
Cognito user pool, no CORS, no alarm e-mail, the admission limits of exports.core.config, no
WebSocket access logs, no reserved concurrency) and ``prod`` with every context setting given
(an external OIDC issuer, CORS origins, an alarm e-mail, its own admission limits, the account's
API Gateway logs role, reserved concurrency, mail, the worker's and the delivering function's VPCs).
Bundling is skipped here; ``test_infra_bundling.py`` runs it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Before aws_cdk is imported: Node 20 otherwise prints an end-of-life banner on every import.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

import pytest
from aws_cdk import App, CfnElement, Stack
from aws_cdk.assertions import Template
from constructs import IConstruct

from infra.settings import StageSettings
from infra.stack import ExportsStack

REPO_ROOT = Path(__file__).resolve().parents[2]
CDK_CONTEXT: dict[str, Any] = json.loads((REPO_ROOT / "cdk.json").read_text())["context"]
SKIP_BUNDLING: dict[str, list[str]] = {"aws:cdk:bundling-stacks": []}
PROD_CONTEXT = {
    "stage": "prod",
    "jwt_issuer": "https://login.example.com/tenant/",
    "jwt_audience": "exports-api,exports-cli",
    "cors_allowed_origins": "https://app.example.com",
    "alarm_email": "oncall@example.com",
    "max_active_tasks_per_user": "3",
    "max_backlog": "500",
    "hot_key_rate_per_minute": "7.5",
    "hot_key_burst": "2",
    # Declared sources on AWS: a secret given by the context, IAM auth, the user's own table.
    "exports_config": str(REPO_ROOT / "tests" / "declarations" / "aws_sources.toml"),
    "sources": json.dumps(
        {"billing": {"secret_arn": "arn:aws-cn:secretsmanager:cn-north-1:123456789012:secret:billing"}}
    ),
    # The push channel's WebSocket stage logs: the stack sets the account's CloudWatch Logs role.
    "apigateway_cloudwatch_role": "true",
    # The lifecycle, callback and schedule functions reserve their concurrency (the quota allows).
    "reserved_concurrency": "true",
    "worker_vpc": json.dumps(
        {"subnet_ids": ["subnet-0aaa1111", "subnet-0bbb2222"], "security_group_ids": ["sg-0ccc3333"]}
    ),
    # The function that delivers files in private subnets (a fixed egress address), in a security
    # group the stack creates for SFTP on 22 and 2222.
    "delivery_vpc": json.dumps(
        {"vpc_id": "vpc-0ddd4444", "subnet_ids": ["subnet-0eee5555", "subnet-0fff6666"], "egress_ports": [22, 2222]}
    ),
    # Scheduled exports: their limits, and mail from a verified sender to two domains only.
    "max_schedules_per_user": "7",
    "min_schedule_interval_min": "60",
    "mail_sender": "reports@acme.example",
    "mail_attachment_max_bytes": 2_000_000,
    "mail_allowed_domains": "acme.example,finance.acme.example",
}


@dataclass(frozen=True)
class Synthesized:
    """One stack and its template."""

    stack: ExportsStack
    template: Template

    @property
    def settings(self) -> StageSettings:
        """The stage settings the stack was built with."""
        return self.stack.settings

    def logical_id(self, construct: IConstruct) -> str:
        """The logical id of ``construct`` (an L2 construct's resource, or a CfnElement)."""
        element = construct if isinstance(construct, CfnElement) else construct.node.default_child
        assert isinstance(element, CfnElement), f"{construct.node.path} has no resource of its own"
        return self.stack.resolve(Stack.of(construct).get_logical_id(element))

    def resource(self, construct: IConstruct) -> dict[str, Any]:
        """The template entry (Type, Properties, ...) of ``construct``."""
        return self.template.to_json()["Resources"][self.logical_id(construct)]

    def props(self, construct: IConstruct) -> dict[str, Any]:
        """The Properties of ``construct``'s resource."""
        return self.resource(construct)["Properties"]

    def arn(self, construct: IConstruct) -> dict[str, Any]:
        """``Fn::GetAtt <construct>.Arn`` as it appears in the template."""
        return {"Fn::GetAtt": [self.logical_id(construct), "Arn"]}

    def ref(self, construct: IConstruct) -> dict[str, str]:
        """``Ref <construct>`` as it appears in the template."""
        return {"Ref": self.logical_id(construct)}

    def rendered(self, value: Any) -> str:
        """A template value as the string CloudFormation would make of it, with each reference
        written as a stand-in: ``<logical id>`` for a ``Ref``, ``<logical id>.<attribute>`` for
        an ``Fn::GetAtt``."""
        if isinstance(value, str):
            return value
        if "Ref" in value:
            return f"<{value['Ref']}>"
        if "Fn::GetAtt" in value:
            return "<{}.{}>".format(*value["Fn::GetAtt"])
        separator, parts = value["Fn::Join"]
        return separator.join(self.rendered(part) for part in parts)

    def stand_in(self, construct: IConstruct) -> str:
        """How :meth:`rendered` writes ``Ref <construct>``."""
        return self.rendered(self.ref(construct))


@dataclass(frozen=True)
class Assembly:
    """The synthesized app: both stacks."""

    app: App
    dev: Synthesized
    prod: Synthesized


@pytest.fixture(scope="session")
def assembly(tmp_path_factory: pytest.TempPathFactory) -> Assembly:
    """Both stacks in one app, synthesized once."""
    app = App(context={**CDK_CONTEXT, **SKIP_BUNDLING}, outdir=str(tmp_path_factory.mktemp("cdk.out")))
    stacks = {
        name: ExportsStack(app, name, settings=StageSettings.from_context({**CDK_CONTEXT, **context}.get))
        for name, context in (("Dev", {}), ("Prod", PROD_CONTEXT))
    }
    app.synth()
    dev, prod = (Synthesized(stack, Template.from_stack(stack)) for stack in stacks.values())
    return Assembly(app=app, dev=dev, prod=prod)


@pytest.fixture(scope="session")
def dev(assembly: Assembly) -> Synthesized:
    """The dev stack (defaults: Cognito user pool, no CORS, no alarm e-mail)."""
    return assembly.dev


@pytest.fixture(scope="session")
def prod(assembly: Assembly) -> Synthesized:
    """The prod stack (external OIDC issuer, CORS origins, alarm e-mail)."""
    return assembly.prod
