"""The synthesized templates pass cdk-nag's AwsSolutions rules and cfn-lint."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import Validations
from cdk_nag import AwsSolutionsChecks
from cfnlint.config import ConfigFileArgs

from tests.infra.conftest import REPO_ROOT

pytestmark = pytest.mark.infra

# The cfn-lint command finds its configuration in the directory it runs in (the repository's root).
CFN_LINT = Path(sys.executable).with_name("cfn-lint")
CFN_LINT_CONFIG = REPO_ROOT / ".cfnlintrc.yaml"


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


def test_the_repositorys_cfn_lint_configuration_ignores_only_what_the_cdk_always_writes():
    # W3005 (a DependsOn a Ref or GetAtt already enforces) is how the CDK writes every function's
    # dependency on its role's policy; nothing else may be ignored.
    assert ConfigFileArgs(config_file=CFN_LINT_CONFIG).file_args["ignore_checks"] == ["W3005"]


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_cfn_lint_passes_as_an_operator_runs_it_from_the_repository(assembly, stage, tmp_path):
    template = tmp_path / f"exports-{stage}.template.json"
    template.write_text(json.dumps(getattr(assembly, stage).template.to_json()), encoding="utf-8")

    linted = subprocess.run(
        [str(CFN_LINT), str(template)], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300, check=False
    )

    assert (linted.returncode, linted.stdout, linted.stderr) == (0, "", "")
