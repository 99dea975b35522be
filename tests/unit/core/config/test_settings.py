"""The worker's tunables read from its environment."""

import pytest
from pydantic import ValidationError

from exports.core.config.env import Env
from exports.core.config.settings import WorkerSettings
from exports.core.config.worker import Worker
from tests.unit.running.test_export_run_xlsx import ENVIRONMENT


def test_the_progress_interval_defaults_to_two_seconds_and_can_be_set_by_environment():
    assert WorkerSettings.from_env(ENVIRONMENT).progress_interval_sec == Worker.PROGRESS_INTERVAL_SEC == 2.0
    assert WorkerSettings.from_env({**ENVIRONMENT, Env.PROGRESS_INTERVAL_SEC: "0.2"}).progress_interval_sec == 0.2
    with pytest.raises(ValidationError, match="progress_interval_sec"):
        WorkerSettings.from_env({**ENVIRONMENT, Env.PROGRESS_INTERVAL_SEC: "0"})
