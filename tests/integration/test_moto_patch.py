"""local_stack.moto_patch: a patch stays until its last user uninstalls it; the local stack's
patches: moto's server lists the same service folders, once, and botocore sessions share one
loader (installed for the whole test session by tests/conftest.py)."""

import functools
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import boto3
import botocore.session
import pytest
from botocore.exceptions import ClientError
from moto import backends, mock_aws
from moto.stepfunctions.parser.models import StepFunctionsParserBackend

from local_stack.embedded_aws import LISTED_ONCE, MOTO_CONFIG, REGION, SHARED_LOADER, SPEED_UPS, VALIDATED_ONCE
from local_stack.lambda_runtime import INVOKE
from local_stack.moto_patch import MOTO, CountedPatch, UnverifiedLibrary
from tests.stack_process import SPEED_UPS_OFF

REPO_ROOT = Path(__file__).parents[2]
CONTRACTS = REPO_ROOT / "tests" / "contract"


class Service:
    def answer(self) -> str:
        return "moto's"

    @staticmethod
    def check(value: str) -> str:
        return value


def test_a_patch_stays_until_as_many_uninstalls_as_installs():
    patch = CountedPatch(
        Service, "answer", lambda original: lambda self: f"faster than {original(self)}", verified_on=MOTO
    )
    patch.install()
    patch.install()  # an in-process local stack in a session that installed it, say
    patch.uninstall()
    assert Service().answer() == "faster than moto's"
    assert patch.original(Service()) == "moto's"

    patch.uninstall()
    assert Service().answer() == "moto's"
    patch.uninstall()  # one too many changes nothing
    assert Service().answer() == "moto's"


def test_a_patch_verified_on_another_version_of_its_library_refuses_to_install():
    patch = CountedPatch(Service, "answer", lambda original: lambda self: "patched", verified_on=("moto", "0.0.1"))
    with pytest.raises(UnverifiedLibrary, match=r"Service.answer was verified on moto 0.0.1, but 5\.\d+\.\d+"):
        patch.install()
    assert Service().answer() == "moto's"


@pytest.mark.parametrize(
    "patch", [LISTED_ONCE, SHARED_LOADER, VALIDATED_ONCE, *SPEED_UPS, INVOKE], ids=lambda patch: patch.name
)
def test_every_local_stack_patch_is_verified_on_the_installed_library(patch):
    patch.check_version()  # raises UnverifiedLibrary when a pinned library moved without its patches


def test_the_port_contracts_hold_on_moto_without_the_speed_ups():
    # The session installs SPEED_UPS for every other test; the contracts once more on plain moto.
    environment = {**os.environ, SPEED_UPS_OFF: "1"}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(CONTRACTS)],
        check=False,
        cwd=REPO_ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert " passed" in run.stdout and "speed-ups off" in run.stdout


def test_a_static_method_is_given_back_static():
    patch = CountedPatch(
        Service, "check", lambda original: staticmethod(lambda value: original(value).upper()), verified_on=MOTO
    )
    patch.install()
    assert Service().check("a") == "A"
    patch.uninstall()
    assert isinstance(inspect.getattr_static(Service, "check"), staticmethod)
    assert Service().check("a") == "a"


def test_the_servers_service_folders_are_listed_once_and_are_motos_own():
    own = list(backends.list_of_moto_modules())
    LISTED_ONCE.install()
    try:
        assert backends.list_of_moto_modules() is backends.list_of_moto_modules()
        assert list(backends.list_of_moto_modules()) == own
    finally:
        LISTED_ONCE.uninstall()
    assert backends.list_of_moto_modules is LISTED_ONCE.original


def test_botocore_sessions_share_one_loader_while_it_is_installed():
    first, second = botocore.session.Session(), botocore.session.Session()
    assert first.get_component("data_loader") is second.get_component("data_loader")
    assert first.get_service_model("dynamodb").operation_names == second.get_service_model("dynamodb").operation_names
    SHARED_LOADER.install()  # a local stack in the session, say
    SHARED_LOADER.uninstall()
    assert botocore.session.Session().get_component("data_loader") is first.get_component("data_loader")


def test_a_definition_is_validated_once_and_a_bad_one_is_refused_every_time():
    definition = json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}})
    with mock_aws(config=MOTO_CONFIG):  # the backend that executes machines validates them
        sfn = boto3.client("stepfunctions", region_name=REGION)
        role = "arn:aws:iam::123456789012:role/any"
        for name in ("first", "second"):
            sfn.create_state_machine(name=name, definition=definition, roleArn=role)
        for name in ("bad", "bad-again"):
            with pytest.raises(ClientError, match="in definition"):
                sfn.create_state_machine(name=name, definition='{"StartAt": "Nowhere"}', roleArn=role)

    validate = StepFunctionsParserBackend._validate_definition
    # moto annotates the function it defines; the patch put functools.cache's wrapper there.
    assert isinstance(validate, functools._lru_cache_wrapper)
    assert validate.cache_info().hits >= 1  # the second machine's definition
    assert isinstance(inspect.getattr_static(StepFunctionsParserBackend, "_validate_definition"), staticmethod)
    assert VALIDATED_ONCE.original is not inspect.getattr_static(StepFunctionsParserBackend, "_validate_definition")
