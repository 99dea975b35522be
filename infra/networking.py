"""Functions in a VPC: the worker (a database in a VPC, ``worker_vpc``) and the function that
delivers files (a fixed egress address for customers' allowlists, ``delivery_vpc``).

The VPC is the operator's, named by id: the stack creates no VPC, subnet or NAT gateway
(docs/destinations.md#egress-where-our-connections-come-from). It is taken with
``Vpc.from_vpc_attributes``, which makes no call at synth, and not ``Vpc.from_lookup``, which needs
the stack's account and region and either credentials at synth or a ``cdk.context.json`` cache:
our stack is environment-agnostic and its tests synthesize without an account.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, cast

from aws_cdk import Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra.function_factory import ServiceFunction
from infra.nag import acknowledge
from infra.settings import DeliveryVpc

# What Lambda needs to attach a function to its subnets: AWSLambdaVPCAccessExecutionRole's EC2 actions.
VPC_ACCESS_ACTIONS: Final = (
    "ec2:CreateNetworkInterface",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeSubnets",
    "ec2:DeleteNetworkInterface",
    "ec2:AssignPrivateIpAddresses",
    "ec2:UnassignPrivateIpAddresses",
)
# HTTPS: AWS's APIs (through the NAT gateway or endpoints) and the webhooks' receivers.
HTTPS_PORT: Final = 443


def place_in_vpc(
    scope: Construct,
    construct_id: str,
    function: ServiceFunction,
    subnet_ids: Sequence[str],
    security_group_ids: Sequence[str],
) -> iam.Policy:
    """Put ``function`` in the given subnets and security groups, with the network interfaces
    Lambda creates for it; the policy that allows them (``construct_id``)."""
    resource = cast(lambda_.CfnFunction, function.function.node.default_child)
    resource.vpc_config = lambda_.CfnFunction.VpcConfigProperty(
        subnet_ids=list(subnet_ids), security_group_ids=list(security_group_ids)
    )
    # A policy of its own (not the AWS managed policy, which cdk-nag flags and which would stay
    # on the role whatever the context says), so that its findings carry their own reasons. The
    # actions of AWSLambdaVPCAccessExecutionRole, on "*" as there: Lambda checks them when the
    # function is created or its VPC configuration changes (before any interface exists, so no
    # ARN of one can be named), and the Describe actions support no resource-level scoping.
    networking = iam.Policy(
        scope,
        construct_id,
        roles=[function.role],
        statements=[iam.PolicyStatement(actions=list(VPC_ACCESS_ACTIONS), resources=["*"])],
    )
    # The function is created only once its role may make its network interfaces, or Lambda
    # refuses it ("execution role does not have permissions to call CreateNetworkInterface").
    function.function.node.add_dependency(networking)
    acknowledge(
        networking,
        "AwsSolutions-IAM5[Resource::*]",
        "Lambda needs these EC2 actions to attach the function to its subnets; it validates them on all "
        "resources when the function is created or its VPC configuration changes (the managed policy "
        "AWSLambdaVPCAccessExecutionRole grants exactly these on *); the Describe actions support no "
        "resource-level scoping.",
    )
    return networking


class DeliveryNetwork(Construct):
    """The function that delivers files in the operator's private subnets, whose route to the
    internet is a NAT gateway with an Elastic IP: the fixed address customers allowlist. Its
    security group is the operator's, or one created here that lets out TCP to 443 and the SFTP
    ports given, nothing else, and lets nothing in."""

    def __init__(self, scope: Construct, construct_id: str, *, function: ServiceFunction, vpc: DeliveryVpc) -> None:
        super().__init__(scope, construct_id)
        self.security_group: ec2.SecurityGroup | None = None
        groups = list(vpc.security_group_ids)
        if not groups:
            network = ec2.Vpc.from_vpc_attributes(
                self, "Vpc", vpc_id=vpc.vpc_id, availability_zones=Stack.of(self).availability_zones
            )
            self.security_group = ec2.SecurityGroup(
                self,
                "SecurityGroup",
                vpc=network,
                description="exports file delivery: HTTPS and the SFTP ports of customers out, nothing in",
                allow_all_outbound=False,
            )
            for port in sorted({HTTPS_PORT, *vpc.egress_ports}):
                self.security_group.add_egress_rule(
                    ec2.Peer.any_ipv4(), ec2.Port.tcp(port), f"exports deliveries and callbacks to TCP {port}"
                )
            groups = [self.security_group.security_group_id]
        self.networking = place_in_vpc(self, "Networking", function, vpc.subnet_ids, groups)
