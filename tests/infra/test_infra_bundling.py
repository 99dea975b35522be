"""Lambda packages: the dependency lists, and one real Docker-free bundling run through CDK.

The bundling test downloads the worker's arm64 wheels once into a wheelhouse inside the virtualenv
(or a temporary folder outside one), so later runs install them without the network.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from aws_cdk import App, Stack

from infra.function_factory import ServiceFunction, runtime_python_version
from infra.functions import API, WORKER
from infra.packaging import WHEEL_CACHE_ENV, normalized_name, pinned_requirements
from infra.settings import StageSettings

pytestmark = pytest.mark.infra

REPO_ROOT = Path(__file__).resolve().parents[2]
CDK_CONTEXT = json.loads((REPO_ROOT / "cdk.json").read_text())["context"]


def names(requirements):
    return {normalized_name(requirement) for requirement in requirements}


def test_requirements_are_the_pins_of_pyproject():
    pins = set(pinned_requirements().values())

    assert set(API.package().requirements) <= pins
    assert set(WORKER.package().requirements) <= pins


def test_openpyxl_ships_only_with_the_worker_and_every_runtime_dependency_ships_somewhere():
    api, worker = names(API.package().requirements), names(WORKER.package().requirements)

    assert "openpyxl" not in api
    assert "openpyxl" in worker
    assert api | worker == set(pinned_requirements())


def test_the_fingerprint_is_stable_and_tells_the_functions_apart():
    assert API.package().fingerprint() == API.package().fingerprint()
    assert API.package().fingerprint() != WORKER.package().fingerprint()


def test_an_unknown_dependency_is_refused():
    from infra.packaging import requirements_for

    with pytest.raises(ValueError, match="not-a-dependency"):
        requirements_for(["boto3", "not-a-dependency"])


@pytest.fixture(scope="module")
def worker_asset(tmp_path_factory) -> Path:
    """The worker's asset folder, bundled by CDK with local bundling (bundling is on by default)."""
    in_venv = sys.prefix != sys.base_prefix
    wheels = Path(sys.prefix) / "lambda-wheels" if in_venv else tmp_path_factory.mktemp("lambda-wheels")
    outdir = tmp_path_factory.mktemp("bundled.out")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(WHEEL_CACHE_ENV, str(wheels))
        app = App(context=CDK_CONTEXT, outdir=str(outdir))
        stack = Stack(app, "Bundling")
        ServiceFunction(stack, "Worker", spec=WORKER, settings=StageSettings.preset("dev"), environment={})
        app.synth()
    (asset,) = (path for path in outdir.glob("asset.*") if path.is_dir())
    return asset


def test_the_bundle_has_the_handler_at_the_root_and_the_shared_package(worker_asset):
    assert (worker_asset / "handler.py").read_bytes() == (REPO_ROOT / "functions/worker/handler.py").read_bytes()
    assert not (worker_asset / "__init__.py").exists()
    assert (worker_asset / "exports/__init__.py").is_file()
    assert (worker_asset / "exports/config.py").read_bytes() == (REPO_ROOT / "exports/config.py").read_bytes()


def test_the_bundle_has_the_workers_dependencies_for_linux_arm64(worker_asset):
    for package in ("aws_lambda_powertools", "pydantic", "boto3", "ulid", "openpyxl"):
        assert (worker_asset / package / "__init__.py").is_file(), package
    (pydantic_core,) = worker_asset.glob("pydantic_core/_pydantic_core.*.so")
    assert "aarch64" in pydantic_core.name
    assert f"cpython-{runtime_python_version().replace('.', '')}" in pydantic_core.name


def test_the_bundle_ships_bytecode_the_runtime_loads_without_checking_sources(worker_asset):
    tag = f"cpython-{runtime_python_version().replace('.', '')}"
    for source in ("handler.py", "exports/config.py", "aws_lambda_powertools/__init__.py", "openpyxl/__init__.py"):
        path = worker_asset / source
        (compiled,) = path.parent.glob(f"__pycache__/{path.stem}.{tag}.pyc")
        # PEP 552 flags: bit 0 = hash-based, bit 1 = check the source. The zip resets file times,
        # so only an unchecked hash keeps the bytecode valid in Lambda.
        flags = int.from_bytes(compiled.read_bytes()[4:8], "little")
        assert flags == 0b01, source
