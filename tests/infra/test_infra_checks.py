"""The synthesized templates pass cdk-nag's AwsSolutions rules and cfn-lint."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk import Validations
from cdk_nag import AwsSolutionsChecks
from cfnlint.api import ManualArgs, lint

pytestmark = pytest.mark.infra

# CDK templates always trip W3005 (redundant DependsOn); nothing else may be ignored.
CFN_LINT_IGNORED = ["W3005"]


def acknowledgements(construct):
    """Every acknowledgement recorded on ``construct`` and below: (path, rule id, reason)."""
    found: list[tuple[str, str, Any]] = []
    for node in construct.node.find_all():
        for entry in node.node.metadata:
            if entry.type == Validations.ACKNOWLEDGED_RULES_METADATA_KEY:
                # {"Annotation::<rule id>": reason}
                found.extend((node.node.path, rule.split("::", 1)[-1], reason) for rule, reason in entry.data.items())
    return found


def test_cdk_nag_aws_solutions_finds_nothing_unacknowledged(assembly):
    report = AwsSolutionsChecks(assembly.app).validate_scope(assembly.app)

    findings = [
        f"{violation.rule_name} at {[r.construct_path for r in violation.violating_resources]}: {violation.description}"
        for violation in report.violations
    ]
    assert findings == []
    assert report.success


def test_every_acknowledged_finding_carries_a_written_reason(assembly):
    found = acknowledgements(assembly.app)

    assert {rule for _, rule, _ in found} >= {
        "AwsSolutions-L1",
        "AwsSolutions-APIG4",
        "AwsSolutions-IAM5[Resource::*]",
        "AwsSolutions-SMG4",
    }
    for path, rule, reason in found:
        assert len(reason.split()) >= 8, f"{rule} on {path} needs a real reason, got {reason!r}"


def test_the_unrotated_webhook_secret_is_acknowledged_with_the_manual_procedure(dev):
    found = [(path, reason) for path, rule, reason in acknowledgements(dev.stack) if rule == "AwsSolutions-SMG4"]

    assert [path for path, _ in found] == [dev.stack.webhook_secret.secret.node.path]
    assert "docs/deploy.md" in found[0][1]


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_cfn_lint_passes(assembly, stage):
    template = getattr(assembly, stage).template.to_json()

    matches = lint(json.dumps(template), config=ManualArgs(ignore_checks=CFN_LINT_IGNORED, regions=["us-east-1"]))

    assert [str(match) for match in matches] == []
