"""app.py, as ``cdk synth`` runs it: the stage from context, one stack, cdk-nag as a gate."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from aws_cdk import App
from aws_cdk import aws_sqs as sqs

from app import build

pytestmark = pytest.mark.infra

REPO_ROOT = Path(__file__).resolve().parents[2]
CDK_CONTEXT = json.loads((REPO_ROOT / "cdk.json").read_text())["context"]


def app_for(stage, outdir, **context):
    return App(context={**CDK_CONTEXT, "stage": stage, "aws:cdk:bundling-stacks": [], **context}, outdir=str(outdir))


def test_the_app_synthesizes_the_stage_named_in_context(tmp_path):
    app = app_for("prod", tmp_path, alarm_email="oncall@example.com")

    stack = build(app)
    app.synth()

    assert stack.stack_name == "exports-prod"
    assert stack.settings.protect_data is True
    assert [path.name for path in tmp_path.glob("*.template.json")] == ["exports-prod.template.json"]


def test_an_unacknowledged_finding_stops_the_synth(tmp_path):
    app = app_for("dev", tmp_path)
    stack = build(app)
    # Given a resource cdk-nag objects to (no encryption, no SSL-only policy, no DLQ)
    sqs.Queue(stack, "Careless", encryption=sqs.QueueEncryption.UNENCRYPTED)

    with pytest.raises(RuntimeError, match="ValidationFailed") as failure:
        app.synth()

    assert "AwsSolutions-SQS4" in str(failure.value)


def test_prod_without_an_alarm_destination_is_refused_in_one_line_without_a_traceback(tmp_path):
    context = {**CDK_CONTEXT, "stage": "prod"}
    environment = {**os.environ, "CDK_CONTEXT_JSON": json.dumps(context), "CDK_OUTDIR": str(tmp_path)}

    synth = subprocess.run(
        [sys.executable, "app.py"],
        cwd=REPO_ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert synth.returncode == 1
    (line,) = [line for line in synth.stderr.splitlines() if line.strip() and "!!" not in line]
    assert line.startswith("exports: stage prod needs an alarm destination") and "alarm_email" in line
    assert "Traceback" not in synth.stderr


def test_prod_without_an_alarm_destination_stops_before_any_stack_is_built(tmp_path):
    app = app_for("prod", tmp_path)

    with pytest.raises(ValueError, match="alarm destination"):
        build(app)

    assert app.node.children == []
