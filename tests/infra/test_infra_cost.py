"""The cost estimate reads its stack facts from the template and prices both volumes."""

from __future__ import annotations

import pytest

from exports.config import Worker
from infra.settings import Sizing
from scripts.cost_estimate import VOLUMES, Workload, cost_lines, render, stack_facts

pytestmark = pytest.mark.infra


def test_the_stack_facts_come_from_the_template(prod):
    facts = stack_facts(prod.template.to_json())

    assert (facts.api_memory_mb, facts.worker_memory_mb) == (Sizing.API_MEMORY_MB, Sizing.WORKER_MEMORY_MB)
    assert facts.worker_batch_size == Worker.BATCH_SIZE
    assert facts.log_retention_days == prod.settings.log_retention_days
    assert facts.results_expiry_days == prod.settings.results_expiry_days
    assert facts.alarms == len(prod.template.find_resources("AWS::CloudWatch::Alarm"))
    assert (facts.dashboards, facts.state_machines) == (1, 0)


def test_every_item_costs_something_and_more_exports_cost_more(prod):
    lines = cost_lines(stack_facts(prod.template.to_json()), Workload())

    low, high = VOLUMES
    assert all(line.per_export > 0 or line.fixed > 0 for line in lines)
    assert sum(line.monthly(high) for line in lines) > sum(line.monthly(low) for line in lines) > 0


def test_the_estimate_names_both_volumes_and_the_step_functions_price(prod):
    text = render(prod.template.to_json(), "prod")

    assert "| 1,000 exports/month | 1,000,000 exports/month |" in text
    assert "## Step Functions" in text
    assert "**Total**" in text
