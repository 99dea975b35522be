"""The function that delivers files in a VPC (``delivery_vpc``, docs/destinations.md "Egress"):
outside any VPC by default; with the context, in the given private subnets, in a security group
that lets out HTTPS and the SFTP ports only (or the operator's own), with the network-interface
actions Lambda needs granted then and only then. cdk-nag and cfn-lint run over the prod stack,
which has it, in test_infra_checks.py."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk.assertions import Template

from infra.function_factory import ServiceFunction
from infra.functions import LIFECYCLE
from infra.networking import VPC_ACCESS_ACTIONS, DeliveryNetwork
from infra.settings import Context, DeliveryVpc, StageSettings
from tests.infra.conftest import CDK_CONTEXT, SKIP_BUNDLING

pytestmark = pytest.mark.infra


def role_statements(synthesized: Any, role: Any) -> list[dict[str, Any]]:
    role_ref = {"Ref": synthesized.logical_id(role)}
    return [
        statement
        for policy in synthesized.template.find_resources("AWS::IAM::Policy").values()
        if role_ref in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


def granted(statements: list[dict[str, Any]]) -> set[str]:
    return {
        action
        for statement in statements
        for action in (statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]])
    }


def test_by_default_the_function_that_delivers_is_in_no_vpc_and_may_make_no_network_interface(dev):
    callback = dev.stack.functions.callback

    assert "VpcConfig" not in dev.props(callback.function)
    assert dev.stack.functions.delivery_network is None
    assert not granted(role_statements(dev, callback.role)) & set(VPC_ACCESS_ACTIONS)
    assert dev.template.find_resources("AWS::EC2::SecurityGroup") == {}


def test_with_the_context_it_runs_in_the_private_subnets_and_the_stacks_security_group(prod):
    network = prod.stack.functions.delivery_network
    assert network is not None and network.security_group is not None

    config = prod.props(prod.stack.functions.callback.function)["VpcConfig"]

    assert config == {
        "SubnetIds": ["subnet-0eee5555", "subnet-0fff6666"],
        "SecurityGroupIds": [{"Fn::GetAtt": [prod.logical_id(network.security_group), "GroupId"]}],
    }


def test_its_security_group_lets_out_https_and_the_sftp_ports_only_and_nothing_in(prod):
    network = prod.stack.functions.delivery_network
    assert network is not None and network.security_group is not None

    group = prod.props(network.security_group)

    assert group["VpcId"] == "vpc-0ddd4444"
    assert "SecurityGroupIngress" not in group
    assert prod.template.find_resources("AWS::EC2::SecurityGroupIngress") == {}
    assert sorted(
        (rule["IpProtocol"], rule["FromPort"], rule["ToPort"], rule["CidrIp"]) for rule in group["SecurityGroupEgress"]
    ) == [
        ("tcp", 22, 22, "0.0.0.0/0"),
        ("tcp", 443, 443, "0.0.0.0/0"),
        ("tcp", 2222, 2222, "0.0.0.0/0"),
    ]


def test_then_and_only_then_its_role_may_make_network_interfaces_before_the_function_exists(prod):
    network = prod.stack.functions.delivery_network
    assert network is not None
    callback = prod.stack.functions.callback

    statements = role_statements(prod, callback.role)

    assert [s["Resource"] for s in statements if set(VPC_ACCESS_ACTIONS) <= granted([s])] == ["*"]
    assert prod.logical_id(network.networking) in prod.resource(callback.function)["DependsOn"]
    # The other functions without a VPC of their own get none of it.
    for function in (prod.stack.functions.api, prod.stack.functions.lifecycle, prod.stack.functions.push):
        assert not granted(role_statements(prod, function.role)) & set(VPC_ACCESS_ACTIONS)


def test_the_operators_own_security_groups_are_used_as_they_are():
    # One function in a stack of its own: the full app is synthesized once, in conftest.
    app = App(context={**CDK_CONTEXT, **SKIP_BUNDLING})
    stack = Stack(app, "DeliveryNetwork")
    settings = StageSettings.from_context(
        {
            Context.DELIVERY_VPC: json.dumps(
                {"vpc_id": "vpc-0a", "subnet_ids": ["subnet-0b"], "security_group_ids": ["sg-0c", "sg-0d"]}
            )
        }.get
    )
    assert settings.delivery_vpc is not None
    function = ServiceFunction(
        stack,
        "Delivering",
        spec=LIFECYCLE,
        settings=settings,
        environment={variable: "x" for variable in LIFECYCLE.runtime_settings.variables()},
    )

    network = DeliveryNetwork(stack, "Network", function=function, vpc=settings.delivery_vpc)
    template = Template.from_stack(stack)

    assert network.security_group is None
    assert template.find_resources("AWS::EC2::SecurityGroup") == {}
    (props,) = (resource["Properties"] for resource in template.find_resources("AWS::Lambda::Function").values())
    assert props["VpcConfig"] == {"SubnetIds": ["subnet-0b"], "SecurityGroupIds": ["sg-0c", "sg-0d"]}


@pytest.mark.parametrize(
    ("value", "complaint"),
    [
        ({"subnet_ids": ["subnet-0b"]}, "expected"),
        ({"vpc_id": "vpc-0a"}, "subnet_ids"),
        ({"vpc_id": "vpc-0a", "subnet_ids": ["sg-0b"]}, "subnet_ids"),
        ({"vpc_id": "vpc-0a", "subnet_ids": ["subnet-0b"], "security_group_ids": []}, "security_group_ids"),
        ({"vpc_id": "vpc-0a", "subnet_ids": ["subnet-0b"], "egress_ports": [0]}, "egress_ports"),
        ({"vpc_id": "vpc-0a", "subnet_ids": ["subnet-0b"], "egress_ports": ["22"]}, "egress_ports"),
        (
            {"vpc_id": "vpc-0a", "subnet_ids": ["subnet-0b"], "egress_ports": [22], "security_group_ids": ["sg-0c"]},
            "not both",
        ),
        ({"vpc_id": "vpc-0a", "subnet_ids": ["subnet-0b"], "nat": True}, "expected"),
    ],
)
def test_a_wrong_delivery_vpc_is_refused_naming_the_key_and_what_is_wrong(value, complaint):
    with pytest.raises(ValueError, match=complaint) as refused:
        StageSettings.from_context({Context.DELIVERY_VPC: json.dumps(value)}.get)

    assert Context.DELIVERY_VPC in str(refused.value)


def test_without_ports_the_stacks_group_lets_out_ssh_port_22_besides_https():
    settings = StageSettings.from_context({Context.DELIVERY_VPC: {"vpc_id": "vpc-0a", "subnet_ids": ["subnet-0b"]}}.get)

    assert settings.delivery_vpc == DeliveryVpc("vpc-0a", ("subnet-0b",), (), (22,))
