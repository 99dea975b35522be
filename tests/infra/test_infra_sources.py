"""Declared sources on AWS, checked in the synthesized template: the declaration is validated at
synth, the deployment's connections reach every function, and the worker gets exactly what it
needs to reach the sources (the named secret, the RDS IAM user, the user's own table, the VPC)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from exports.core.config.env import Env
from exports.export_types.loader import DeclarationError
from infra.networking import VPC_ACCESS_ACTIONS
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
    assert packaged[functions.lifecycle] == set()
    # The callback function reads the declaration's [tenants] only (the tenant and retention of
    # the audit records it appends): the file, without its sources' CA bundles.
    assert packaged[functions.callback] == {"exports.toml"}
    assert packaged[functions.api] - {"exports.toml"}, "the stage's declaration ships a CA bundle"


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


def test_the_worker_runs_in_its_vpc_and_the_api_and_lifecycle_stay_out(prod):
    worker = prod.props(prod.stack.functions.worker.function)
    assert worker["VpcConfig"] == {
        "SubnetIds": ["subnet-0aaa1111", "subnet-0bbb2222"],
        "SecurityGroupIds": ["sg-0ccc3333"],
    }
    # The callback function is in the delivery VPC (delivery_vpc, tests/infra/test_infra_delivery_network.py).
    for function in (prod.stack.functions.api, prod.stack.functions.lifecycle):
        assert "VpcConfig" not in prod.props(function.function)
    statements = worker_statements(prod)
    # AWSLambdaVPCAccessExecutionRole's EC2 actions, on "*" as there: Lambda validates them on all
    # resources when it creates the function.
    for action in VPC_ACCESS_ACTIONS:
        assert actions_on(statements, action) == ["*"], action
    assert set(VPC_ACCESS_ACTIONS) == {
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


def all_statements(synthesized: Any) -> list[tuple[list[Any], dict[str, Any]]]:
    """Every policy statement of the stack, with the roles its policy is attached to."""
    found = []
    for policy in synthesized.template.find_resources("AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            found.append((policy["Properties"].get("Roles", []), statement))
    return found


INVOKE_ACTIONS = {"execute-api:Invoke", "lambda:InvokeFunctionUrl", "lambda:InvokeFunction"}


def test_the_worker_invokes_the_sigv4_api_only_on_its_stage_method_and_types_paths(prod):
    (statement,) = [s for s in worker_statements(prod) if "execute-api:Invoke" in str(s["Action"])]

    assert statement["Action"] == "execute-api:Invoke"
    assert "Condition" not in statement
    # The base URL's path after the stage (/v2), then the type's path, its {tenant} any value.
    assert prod.rendered(statement["Resource"]) == (
        "arn:<AWS::Partition>:execute-api:eu-west-1:<AWS::AccountId>:a1b2c3d4e5/prod/GET/v2/tenants/*/contacts"
    )


def test_the_worker_invokes_the_sigv4_function_only_through_its_url_with_iam_auth(prod):
    by_action = {s["Action"]: s for s in worker_statements(prod) if str(s["Action"]).startswith("lambda:Invoke")}

    function = "arn:<AWS::Partition>:lambda:eu-central-1:210987654321:function:tenant-reports:live"
    assert set(by_action) == {"lambda:InvokeFunctionUrl", "lambda:InvokeFunction"}
    url = by_action["lambda:InvokeFunctionUrl"]
    assert prod.rendered(url["Resource"]) == function
    assert url["Condition"] == {"StringEquals": {"lambda:FunctionUrlAuthType": "AWS_IAM"}}
    # Function URLs made since October 2025 also check InvokeFunction: only as called through the URL.
    direct = by_action["lambda:InvokeFunction"]
    assert prod.rendered(direct["Resource"]) == function
    assert direct["Condition"] == {"Bool": {"lambda:InvokedViaFunctionUrl": "true"}}


def test_no_other_role_and_no_wider_action_may_invoke_the_declared_services(prod, dev):
    worker = prod.ref(prod.stack.functions.worker.role)
    for roles, statement in all_statements(prod):
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        assert not any(action.startswith(("execute-api:", "lambda:")) and "*" in action for action in actions)
        if any("a1b2c3d4e5" in prod.rendered(arn) or "tenant-reports" in prod.rendered(arn) for arn in resources):
            assert roles == [worker] and len(actions) == len(resources) == 1, statement
            assert set(actions) <= INVOKE_ACTIONS
    # The dev stack's declaration has no SigV4 source: nothing is granted for one.
    granted = {str(statement["Action"]) for _, statement in all_statements(dev)}
    assert not granted & {"execute-api:Invoke", "lambda:InvokeFunctionUrl"}


def sigv4_source(tmp_path: Path, base_url: str, auth: str, path: str = "/people/{id}") -> DeclaredSources:
    text = (
        f'[sources.api]\nkind = "http"\n{base_url}\nauth = {{ type = "sigv4", {auth} }}\n'
        f'[types.people]\ndescription = "x"\nsource = "api"\ncolumns = [{{ name = "id" }}]\n'
        f'[types.people.http]\npath = "{path}"\n[types.people.parameters.id]\ntype = "string"\nrequired = true\n'
    )
    return DeclaredSources.load(StageSettings.from_context({"exports_config": write(tmp_path, text)}.get))


@pytest.mark.parametrize(
    ("base_url", "stage", "granted"),
    [
        # An HTTP API's default stage is not in the URL: the whole path is the resource's.
        (
            'base_url = "https://a1b2c3d4e5.execute-api.us-east-1.amazonaws.com/api"',
            "$default",
            "$default/GET/api/people/*",
        ),
        ('base_url = "https://a1b2c3d4e5.execute-api.us-east-1.amazonaws.com/live"', "live", "live/GET/people/*"),
        # A custom domain's base path mapping is not declared: any prefix before the type's path.
        ('base_url = "https://crm.example.com/v1"', "live", "live/GET*/people/*"),
        ('base_url_env = "CRM_URL"\nhosts = ["crm.example.com"]', "live", "live/GET*/people/*"),
    ],
)
def test_an_api_grant_is_as_narrow_as_the_base_url_says(tmp_path: Path, base_url, stage, granted):
    sources = sigv4_source(tmp_path, base_url, f'service = "execute-api", api_id = "a1b2c3d4e5", stage = "{stage}"')

    (grant,) = sources.invoke_grants()

    assert (grant.actions, grant.resource, grant.resource_name, grant.region) == (
        ("execute-api:Invoke",),
        "a1b2c3d4e5",
        granted,
        None,
    )


API_URL = 'base_url = "https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com/prod"'
FUNCTION_URL = 'base_url = "https://abcdef0123.lambda-url.eu-west-1.on.aws"'


@pytest.mark.parametrize(
    ("base_url", "auth", "message"),
    [
        (API_URL, 'service = "execute-api", stage = "prod"', r"auth\.api_id: is needed to sign for execute-api"),
        (API_URL, 'service = "execute-api", api_id = "a1b2c3d4e5"', r"auth\.stage: is needed to sign for execute-api"),
        (FUNCTION_URL, 'service = "lambda"', r"auth\.function_name: is needed to sign for lambda"),
        (API_URL, 'service = "execute-api", api_id = "zzzzzzzzzz", stage = "prod"', r"auth\.api_id: is zzzzzzzzzz"),
        (API_URL, 'service = "execute-api", api_id = "a1b2c3d4e5", stage = "beta"', r"auth\.stage: is beta but"),
        (
            API_URL,
            'service = "execute-api", api_id = "a1b2c3d4e5", stage = "prod", region = "us-east-1"',
            r"auth\.region: is us-east-1 but base_url's host is in eu-west-1",
        ),
        (API_URL, 'service = "lambda", function_name = "f"', r"auth\.service: is lambda but base_url is the other"),
        (FUNCTION_URL, 'service = "lambda", function_name = "f", stage = "prod"', r"auth\.stage: is for execute-api"),
        (
            API_URL,
            'service = "execute-api", api_id = "a1b2c3d4e5", stage = "prod", qualifier = "x"',
            r"auth\.qualifier",
        ),
    ],
)
def test_a_sigv4_source_without_what_its_grant_needs_is_refused_at_load(tmp_path: Path, base_url, auth, message):
    with pytest.raises(DeclarationError, match=rf"sources\.api: {message}"):
        sigv4_source(tmp_path, base_url, auth)


def test_pdf_logos_are_packaged_beside_the_declaration_once_each(tmp_path: Path):
    from tests.pdf_images import png

    (tmp_path / "logos").mkdir()
    (tmp_path / "logos" / "shop.png").write_bytes(png(20, 10))
    (tmp_path / "logos" / "acme.png").write_bytes(png(30, 10))
    text = (
        '[sources.db]\nkind = "postgresql"\nurl_env = "X"\n'
        '[types.t]\ndescription = "t"\nsource = "db"\nquery = "SELECT 1 AS n"\npdf_logo = "logos/shop.png"\n'
        '[tenants.branding.acme]\npdf_logo = "logos/acme.png"\n'
        '[tenants.branding.initech]\npdf_logo = "logos/shop.png"\n'
    )
    sources = DeclaredSources.load(StageSettings.from_context({"exports_config": write(tmp_path, text)}.get))

    packaged = {target: source for source, target in sources.packaged_files()}

    assert packaged == {
        "exports.toml": tmp_path / "mine.toml",
        "logos/shop.png": (tmp_path / "logos" / "shop.png").resolve(),
        "logos/acme.png": (tmp_path / "logos" / "acme.png").resolve(),
    }
