"""What the declaration reads from callers' tokens, as the stack deploys it: a created user pool
defines the custom attributes and groups, its app client cannot write them, and synth warns
about types that export the same rows to every caller."""

from __future__ import annotations

from typing import Any

from aws_cdk.assertions import Annotations, Match


def _only(template: Any, resource_type: str) -> dict[str, Any]:
    (props,) = [
        resource["Properties"]
        for resource in template.to_json()["Resources"].values()
        if resource["Type"] == resource_type
    ]
    return props


def test_the_created_user_pool_defines_the_custom_attribute_the_demo_types_bind(dev) -> None:
    schema = _only(dev.template, "AWS::Cognito::UserPool")["Schema"]
    (tenant,) = [attribute for attribute in schema if attribute["Name"] == "tenant_id"]
    assert tenant["AttributeDataType"] == "String" and tenant["Mutable"] is True


def test_the_groups_of_the_allow_rules_exist_in_the_created_user_pool(dev) -> None:
    groups = [
        resource["Properties"]["GroupName"]
        for resource in dev.template.to_json()["Resources"].values()
        if resource["Type"] == "AWS::Cognito::UserPoolGroup"
    ]
    assert groups == ["admin"]


def test_a_signed_in_user_cannot_write_their_own_tenant(dev) -> None:
    client = _only(dev.template, "AWS::Cognito::UserPoolClient")
    assert client["WriteAttributes"] == ["name"]
    assert "custom:tenant_id" in client["ReadAttributes"]


def test_synth_warns_about_each_type_that_binds_nothing_of_the_caller(dev, prod) -> None:
    warnings = Annotations.from_stack(prod.stack).find_warning("*", Match.string_like_regexp("exports the same rows"))
    texts = sorted(str(warning.entry.data) for warning in warnings)
    assert len(texts) == 2 and "type invoices" in texts[1] and "type entries" in texts[0]
    assert not Annotations.from_stack(dev.stack).find_warning("*", Match.string_like_regexp("exports the same rows"))
