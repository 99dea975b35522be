"""Declared sources on AWS, checked in the synthesized template: the declaration is validated at
synth, the deployment's connections reach every function, and the worker gets exactly what it
needs to reach the sources (the named secret, the RDS IAM user, the user's own table, the VPC)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from exports.config.env import Env
from exports.declared.loader import DeclarationError
from infra.functions import WORKER_VPC_ACTIONS
from infra.settings import StageSettings
from infra.sources import DeclaredSources

ROOT = Path(__file__).resolve().parents[2]
SECRET = "arn:aws-cn:secretsmanager:cn-north-1:123456789012:secret:billing"


def worker_statements(synthesized: Any) -> list[dict[str, Any]]:
    role = synthesized.stack.functions.worker.role
    policies = synthesized.template.find_resources("AWS::IAM::Policy")
    role_id = synthesized.logical_id(role)
    return [
        statement
        for policy in policies.values()
        if {"Ref": role_id} in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


def actions_on(statements: list[dict[str, Any]], action: str) -> list[Any]:
    found = []
    for statement in statements:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        if action in actions:
            found.append(statement["Resource"])
    return found


def test_the_dev_stack_packages_the_demo_declaration_without_overrides(dev):
    for function in dev.stack.functions.all:
        variables = dev.props(function.function)["Environment"]["Variables"]
        assert Env.SOURCE_OVERRIDES not in variables
    assert "VpcConfig" not in dev.props(dev.stack.functions.worker.function)
    assert actions_on(worker_statements(dev), "secretsmanager:GetSecretValue") == []


def test_only_the_functions_that_build_the_registry_carry_the_declaration(prod):
    functions = prod.stack.functions
    packaged = {function: {target for _, target in function.package.extra_files} for function in functions.all}
    assert "exports.toml" in packaged[functions.api] and "exports.toml" in packaged[functions.worker]
    assert packaged[functions.callback] == packaged[functions.lifecycle] == set()


def test_the_functions_that_build_the_registry_get_the_deployments_source_connections(prod):
    functions = prod.stack.functions
    for function in (functions.api, functions.worker):
        variables = prod.props(function.function)["Environment"]["Variables"]
        assert json.loads(variables[Env.SOURCE_OVERRIDES]) == {"billing": {"secret_arn": SECRET}}
    for function in (functions.lifecycle, functions.callback):
        assert Env.SOURCE_OVERRIDES not in prod.props(function.function)["Environment"]["Variables"]


def test_the_worker_reads_only_the_named_secret_and_connects_only_as_the_iam_user(prod):
    statements = worker_statements(prod)

    # The context gave the secret's partial ARN: IAM matches the full one, suffix and all.
    assert actions_on(statements, "secretsmanager:GetSecretValue") == [f"{SECRET}-??????"]
    (users,) = actions_on(statements, "rds-db:connect")
    # In the source's own region (the stack's is another), where its proxy is.
    assert prod.rendered(users) == (
        "arn:<AWS::Partition>:rds-db:eu-west-1:<AWS::AccountId>:dbuser:prx-0123456789abcdef/exporter"
    )
    # CDK merges the worker's Query statements: the demo indexes and the declared table are in one.
    queried = {prod.rendered(arn) for found in actions_on(statements, "dynamodb:Query") for arn in found}
    assert {arn for arn in queried if "tenant-events" in arn} == {
        "arn:<AWS::Partition>:dynamodb:<AWS::Region>:<AWS::AccountId>:table/tenant-events",
        "arn:<AWS::Partition>:dynamodb:<AWS::Region>:<AWS::AccountId>:table/tenant-events/index/*",
    }


def test_only_the_worker_runs_in_the_vpc_so_callbacks_still_reach_the_internet(prod):
    worker = prod.props(prod.stack.functions.worker.function)
    assert worker["VpcConfig"] == {
        "SubnetIds": ["subnet-0aaa1111", "subnet-0bbb2222"],
        "SecurityGroupIds": ["sg-0ccc3333"],
    }
    for function in (prod.stack.functions.api, prod.stack.functions.callback, prod.stack.functions.lifecycle):
        assert "VpcConfig" not in prod.props(function.function)
    statements = worker_statements(prod)
    # AWSLambdaVPCAccessExecutionRole's EC2 actions, on "*" as there: Lambda validates them on all
    # resources when it creates the function.
    for action in WORKER_VPC_ACTIONS:
        assert actions_on(statements, action) == ["*"], action
    assert set(WORKER_VPC_ACTIONS) == {
        "ec2:CreateNetworkInterface",
        "ec2:DescribeNetworkInterfaces",
        "ec2:DescribeSubnets",
        "ec2:DeleteNetworkInterface",
        "ec2:AssignPrivateIpAddresses",
        "ec2:UnassignPrivateIpAddresses",
    }


def test_the_worker_in_a_vpc_is_created_only_after_its_networking_policy(prod):
    networking = prod.stack.functions.node.find_child("WorkerVpcNetworking")

    assert prod.logical_id(networking) in prod.resource(prod.stack.functions.worker.function)["DependsOn"]


def test_the_vpc_grants_are_acknowledged_with_reasons_of_their_own_not_the_x_ray_one(prod):
    networking = prod.stack.functions.node.find_child("WorkerVpcNetworking")
    acknowledged = {
        rule: reason
        for entry in networking.node.metadata
        if entry.type == "aws:cdk:acknowledged-rules"
        for rule, reason in entry.data.items()
    }

    assert set(acknowledged) == {
        "Annotation::AwsSolutions-IAM5[Resource::*]",
    }
    assert all("X-Ray" not in reason and "Lambda" in reason for reason in acknowledged.values())


def test_the_declaration_and_its_ca_bundle_are_packaged_at_the_paths_the_functions_read():
    settings = StageSettings.from_context(
        {"exports_config": str(ROOT / "tests" / "declarations" / "aws_sources.toml")}.get
    )

    packaged = DeclaredSources.load(settings).packaged_files()

    assert [(source.relative_to(ROOT).as_posix(), target) for source, target in packaged] == [
        ("tests/declarations/aws_sources.toml", "exports.toml"),
        ("tests/declarations/certs/test-ca.pem", "certs/test-ca.pem"),
    ]


def write(folder: Path, text: str) -> str:
    path = folder / "mine.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_a_broken_declaration_fails_the_synth_naming_file_type_and_key(tmp_path: Path):
    path = write(
        tmp_path,
        '[sources.db]\nkind = "postgresql"\n[types.t]\ndescription = "x"\nsource = "nope"\nquery = "SELECT 1"\n',
    )
    settings = StageSettings.from_context({"exports_config": path}.get)

    with pytest.raises(DeclarationError, match=r"mine\.toml: types\.t: source: no source 'nope'"):
        DeclaredSources.load(settings)


@pytest.mark.parametrize(
    ("given", "granted"),
    [
        (f"{SECRET}-Ab12Cd", f"{SECRET}-Ab12Cd"),
        (SECRET, f"{SECRET}-??????"),
        (
            "arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/db",
            "arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/db-??????",
        ),
    ],
)
def test_a_secret_is_granted_by_its_full_arn_even_when_given_without_its_suffix(tmp_path: Path, given, granted):
    text = f'[sources.db]\nkind = "postgresql"\nsecret_arn = "{given}"\n'
    sources = DeclaredSources.load(StageSettings.from_context({"exports_config": write(tmp_path, text)}.get))

    assert sources.secret_arns() == [granted]


def test_an_iam_user_without_a_region_is_granted_in_the_stacks(tmp_path: Path):
    auth = '{ host = "h", user = "u", database = "d", resource_id = "db-ABC" }'
    text = f'[sources.db]\nkind = "postgresql"\niam_auth = {auth}\n'
    sources = DeclaredSources.load(StageSettings.from_context({"exports_config": write(tmp_path, text)}.get))

    assert sources.iam_users() == [("db-ABC", "u", None)]


def test_iam_auth_on_aws_needs_the_resource_id_for_its_grant(tmp_path: Path):
    text = '[sources.db]\nkind = "postgresql"\niam_auth = { host = "h", user = "u", database = "d" }\n'
    sources = DeclaredSources.load(StageSettings.from_context({"exports_config": write(tmp_path, text)}.get))

    with pytest.raises(DeclarationError, match=r"sources\.db: iam_auth\.resource_id: is needed on AWS"):
        sources.iam_users()


def test_a_ca_bundle_outside_the_declarations_folder_is_refused(tmp_path: Path):
    (tmp_path / "sub").mkdir()
    text = '[sources.db]\nkind = "postgresql"\nurl_env = "X"\nsslrootcert = "../outside.pem"\n'
    path = tmp_path / "sub" / "mine.toml"
    path.write_text(text, encoding="utf-8")
    sources = DeclaredSources.load(StageSettings.from_context({"exports_config": str(path)}.get))

    with pytest.raises(DeclarationError, match="must name a file in the declaration's folder"):
        sources.packaged_files()


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("sources", "{not json", "context sources: not JSON"),
        ("sources", "[1]", "context sources: expected a JSON object"),
        ("worker_vpc", '{"subnet_ids": ["x"], "security_group_ids": ["sg-1"]}', "context worker_vpc: expected"),
    ],
)
def test_bad_context_is_refused_with_the_key(key: str, value: str, message: str):
    with pytest.raises(ValueError, match=message):
        StageSettings.from_context({key: value}.get)
