"""Lambda packages: the dependency lists, and one real Docker-free bundling run through CDK.

The bundling test downloads the worker's arm64 wheels once into a wheelhouse inside the virtualenv
(or a temporary folder outside one), so later runs install them without the network.
"""

from __future__ import annotations

import fnmatch
import json
import re
import subprocess
import sys
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
from aws_cdk import App, Stack

from exports.running.writers.pdf.font import FONT_FILE
from infra import elf_strip
from infra.function_factory import ServiceFunction, runtime_python_version
from infra.functions import API, CALLBACK, LIFECYCLE, PUSH, SCHEDULE, SPECS, STREAM, WORKER
from infra.packaging import (
    AWS_SERVICES,
    BOTOCORE_DATA,
    LOCKFILE,
    PDF_FONT_FILES,
    WHEEL_CACHE_ENV,
    BundlingError,
    find_interpreter,
    locked_constraints,
    normalized_name,
    pinned_requirements,
    shared_files,
    trim_botocore,
    trim_pyarrow,
)
from infra.settings import StageSettings
from infra.sources import DeclaredSources
from scripts.package_sizes import LAMBDA_UNZIPPED_LIMIT_BYTES, MARGIN_FRACTION, folder_bytes, over_margin

pytestmark = pytest.mark.infra

REPO_ROOT = Path(__file__).resolve().parents[2]
CDK_CONTEXT = json.loads((REPO_ROOT / "cdk.json").read_text())["context"]
# Imported only on a path the handler's import does not take (the worker's XLSX writer, fontTools
# for the PDF font, pyarrow and the ADBC driver for Parquet; RE2 when the registry is built).
LAZY_IMPORTS = {
    # zoneinfo loads tzdata on the first zone it does not find in the OS (the mail's zone); asyncssh
    # on the first SFTP delivery, pysequoia and pyzipper on the first encrypted one.
    CALLBACK.name: {"tzdata", "asyncssh", "pysequoia", "pyzipper"},
    WORKER.name: {
        *("openpyxl", "lxml", "psycopg", "google-re2", "fonttools", "pyarrow", "tzdata"),
        # The JSON Lines writer, imported with its format's module on the first JSON Lines export.
        *("adbc-driver-postgresql", "orjson"),
        # A MySQL source's driver, imported on its first query.
        "pymysql",
    },
    # asyncssh and cryptography on the first destination route (host keys, probes, key pairs).
    API.name: {"google-re2", "tzdata", "cronsim", "asyncssh"},
    # The registry (tenancy-bound values) is built on the first check; PyJWT on the first JWT.
    STREAM.name: {"google-re2", "pyjwt"},
    PUSH.name: {"google-re2"},
    # It builds the registry as the API does, on the first firing.
    SCHEDULE.name: {"google-re2", "tzdata", "cronsim"},
}
# The XLSX stack: openpyxl, the lxml it writes through, and what openpyxl pulls in.
XLSX_DISTRIBUTIONS = {"openpyxl", "lxml", "et-xmlfile"}
# Modules of the shared package the worker needs for exporters at scale (they must be in its
# asset): the export types and their sources, the writers, resumable uploads and checkpoints.
WORKER_MODULES = (
    "exports/running/export_run.py",
    "exports/running/long_exports.py",
    "exports/running/formats/lines.py",
    "exports/running/formats/xlsx.py",
    "exports/running/writers/resumable_sha256.py",
    "exports/running/writers/gzip_stream.py",
    "exports/running/writers/sink.py",
    "exports/running/writers/xlsx_writer.py",
    "exports/running/writers/csv_writer.py",
    "exports/running/writers/pdf/document.py",
    "exports/running/writers/pdf/fonts/NotoSansSC-Exports.ttf",
    "exports/running/writers/jsonl_writer.py",
    "exports/running/writers/parquet_writer.py",
    "exports/running/checkpoint.py",
    "exports/core/aws/s3_results.py",
    "exports/sources/dynamodb/export.py",
    "exports/sources/sql/export.py",
)
# Prints the modules loaded by importing a handler the way Lambda does (from its folder), then what
# its invocations import where they use them (issue 50: a handler imports its services, adapters
# and the API's routes on first use): every module the handler's source names, and every group of
# the API's routes.
_PROBE = """
import ast, importlib, inspect, json, pathlib, sys
folder = pathlib.Path(sys.argv[1])
sys.path.insert(0, str(folder))
import handler

def first_use(source):
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            importlib.import_module(node.module)
            for alias in node.names:  # a submodule imported by name (from exports.accepting import push)
                try:
                    importlib.import_module(node.module + "." + alias.name)
                except ModuleNotFoundError:
                    pass
        elif isinstance(node, ast.Import):
            for alias in node.names:
                importlib.import_module(alias.name)

first_use((folder / "handler.py").read_text())
first_use(inspect.getsource(sys.modules[handler.lambda_handler.__module__]))
if hasattr(handler, "load_every_route"):
    handler.load_every_route()
print(json.dumps(sorted(sys.modules)))
"""


def names(requirements):
    return {normalized_name(requirement) for requirement in requirements}


@pytest.fixture(scope="module")
def imported():
    """The runtime dependencies (of pyproject) each handler imports, by function folder name."""
    probes = {
        spec.name: subprocess.Popen(
            [sys.executable, "-c", _PROBE, str(REPO_ROOT / "functions" / spec.name)],
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        for spec in SPECS
    }
    by_module = packages_distributions()
    pins = set(pinned_requirements())
    found: dict[str, set[str] | None] = {}
    for name, probe in probes.items():
        out, _ = probe.communicate(timeout=60)
        # A handler that cannot be imported fails its own case below, not every function's.
        if probe.returncode != 0:
            found[name] = None
            continue
        modules = {module.split(".")[0] for module in json.loads(out)}
        found[name] = {normalized_name(d) for m in modules for d in by_module.get(m, [])} & pins
    return found


def test_requirements_are_the_pins_of_pyproject():
    pins = set(pinned_requirements().values())

    for spec in SPECS:
        assert set(spec.package().requirements) <= pins, spec.name


@pytest.mark.parametrize(
    "spec",
    SPECS,
    ids=lambda spec: spec.name,
)
def test_each_function_carries_exactly_what_its_handler_imports(spec, imported):
    assert imported[spec.name] is not None, f"importing the {spec.name} handler failed"
    shipped = names(spec.package().requirements)

    assert shipped == imported[spec.name] | LAZY_IMPORTS.get(spec.name, set())


def test_openpyxl_and_lxml_ship_only_with_the_worker_and_every_runtime_dependency_ships_somewhere():
    shipped = {spec.name: names(spec.package().requirements) for spec in SPECS}

    for distribution in ("openpyxl", "lxml", "psycopg", "pymysql"):
        assert [name for name, distributions in shipped.items() if distribution in distributions] == [WORKER.name]
    for spec in (API, LIFECYCLE, CALLBACK):
        assert not shipped[spec.name] & {"openpyxl", "lxml", "psycopg", "pymysql"}, spec.name
    assert set().union(*shipped.values()) == set(pinned_requirements())


def locked():
    """requirements.lock's versions by name, as the bundling reads them."""
    return dict(line.split("==") for line in locked_constraints().splitlines())


def test_the_lock_has_exactly_the_versions_pyproject_pins():
    versions = locked()

    for name, requirement in pinned_requirements().items():
        assert requirement.endswith(f"=={versions[name]}"), (requirement, versions[name])


def test_the_constraints_are_every_package_the_lock_pins_and_not_our_projects():
    versions = locked()
    pinned = re.findall(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==", LOCKFILE.read_text(), flags=re.MULTILINE)

    assert set(versions) == {normalized_name(name) for name in pinned}
    assert "--hash" not in locked_constraints()  # pip refuses hashes in constraints
    assert "exports-service" not in versions
    assert "exports-client" not in versions
    # The dev tools are constrained too (harmless: constraints only pin what is installed).
    assert versions["moto"] and versions["botocore"]


def test_a_lock_with_two_versions_of_one_package_is_refused(tmp_path):
    lockfile = tmp_path / "requirements.lock"
    lockfile.write_text(
        "six==1.16.0 ; python_version < '3.12' \\\n    --hash=sha256:00\n"
        "six==1.17.0 ; python_version >= '3.12' \\\n    --hash=sha256:01\n"
    )

    with pytest.raises(BundlingError, match="six"):
        locked_constraints(lockfile)


def test_the_fingerprint_is_stable_and_tells_the_functions_apart():
    assert API.package().fingerprint() == API.package().fingerprint()
    assert len({spec.package().fingerprint() for spec in SPECS}) == len(SPECS)


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
        settings = StageSettings.preset("dev")
        packaged = DeclaredSources.load(settings).packaged_files()
        ServiceFunction(stack, "Worker", spec=WORKER, settings=settings, environment={}, extra_files=packaged)
        app.synth()
    (asset,) = (path for path in outdir.glob("asset.*") if path.is_dir())
    return asset


def test_the_bundle_has_the_handler_at_the_root_and_the_shared_package(worker_asset):
    assert (worker_asset / "handler.py").read_bytes() == (REPO_ROOT / "functions/worker/handler.py").read_bytes()
    assert not (worker_asset / "__init__.py").exists()
    assert (worker_asset / "exports/__init__.py").is_file()
    assert (worker_asset / "exports/core/config/names.py").read_bytes() == (
        REPO_ROOT / "exports/core/config/names.py"
    ).read_bytes()


def test_the_bundle_has_the_workers_dependencies_for_linux_arm64(worker_asset):
    for package in ("aws_lambda_powertools", "pydantic", "boto3", "openpyxl", "et_xmlfile", "lxml"):
        assert (worker_asset / package / "__init__.py").is_file(), package
    assert not (worker_asset / "ulid").exists()
    tag = f"cpython-{runtime_python_version().replace('.', '')}"
    # The compiled extensions: pydantic's core, and lxml's etree (openpyxl writes through it).
    for pattern in ("pydantic_core/_pydantic_core.*.so", "lxml/etree.*.so"):
        (extension,) = worker_asset.glob(pattern)
        assert "aarch64" in extension.name, extension.name
        assert tag in extension.name, extension.name
    assert not [path.name for path in worker_asset.rglob("*.so") if "x86_64" in path.name]


def test_the_bundle_has_psycopgs_arm64_binary_and_the_declaration_of_export_types(worker_asset):
    tag = f"cpython-{runtime_python_version().replace('.', '')}"
    extensions = list(worker_asset.glob("psycopg_binary/_psycopg.*.so"))
    assert len(extensions) == 1 and "aarch64" in extensions[0].name and tag in extensions[0].name
    # libpq comes inside the wheel, built for arm64 too.
    assert list(worker_asset.glob("psycopg_binary.libs/libpq*"))
    assert (worker_asset / "exports.toml").read_bytes() == (REPO_ROOT / "exports.toml").read_bytes()


def test_the_bundle_has_re2s_arm64_binary_for_declared_patterns(worker_asset):
    tag = f"cpython-{runtime_python_version().replace('.', '')}"
    extensions = list(worker_asset.glob("re2/_re2.*.so"))
    assert len(extensions) == 1 and "aarch64" in extensions[0].name and tag in extensions[0].name


def test_every_distribution_in_the_bundle_is_at_its_locked_version(worker_asset):
    versions = locked()
    shipped = {}
    for dist_info in worker_asset.glob("*.dist-info"):
        name, version = dist_info.name.removesuffix(".dist-info").rsplit("-", 1)
        shipped[normalized_name(name)] = version

    assert shipped
    assert {name: version for name, version in shipped.items() if versions.get(name) != version} == {}
    assert {"boto3", "botocore", "aws-lambda-powertools", "pydantic", "openpyxl", "lxml"} <= set(shipped)


def test_the_bundle_ships_lxml_at_the_pinned_version(worker_asset):
    (dist_info,) = worker_asset.glob("lxml-*.dist-info")
    assert f"lxml=={dist_info.name.removeprefix('lxml-').removesuffix('.dist-info')}" == pinned_requirements()["lxml"]
    wheel = (dist_info / "WHEEL").read_text()
    assert "aarch64" in wheel and "Root-Is-Purelib: false" in wheel


def test_the_pdf_font_goes_into_the_workers_package_only():
    """13.3 MB that only the PDF writer reads: no other function carries it."""
    font = FONT_FILE.relative_to(REPO_ROOT / "exports").as_posix()
    assert fnmatch.fnmatch(font, PDF_FONT_FILES)

    carriers = {spec.name for spec in SPECS if any(path == FONT_FILE for path in shared_files(spec.package()))}
    assert carriers == {WORKER.name}
    # Everything else of the shared package goes everywhere.
    everywhere = {path for path in (REPO_ROOT / "exports").rglob("*.py") if "__pycache__" not in path.parts}
    for spec in SPECS:
        assert everywhere <= set(shared_files(spec.package())), spec.name


def test_the_margin_check_names_a_package_too_close_to_lambdas_limit():
    ceiling = LAMBDA_UNZIPPED_LIMIT_BYTES * (1 - MARGIN_FRACTION)
    sizes = {"worker": {"unzipped": int(ceiling) + 1}, "submit": {"unzipped": int(ceiling)}}

    (complaint,) = over_margin(sizes)

    assert complaint.startswith("worker: ")
    assert over_margin({"submit": sizes["submit"]}) == []


def test_the_workers_bundle_keeps_the_margin_below_lambdas_unzipped_limit(worker_asset):
    """The largest package (pyarrow, lxml, psycopg, the PDF font), as CDK bundles it for arm64."""
    assert over_margin({WORKER.name: {"unzipped": folder_bytes(worker_asset)}}) == []


def test_the_bundle_has_the_whole_shared_package_with_the_exporters_modules(worker_asset):
    for module in WORKER_MODULES:
        assert (worker_asset / module).read_bytes() == (REPO_ROOT / module).read_bytes(), module
    shared = {
        path.relative_to(REPO_ROOT).as_posix()
        for path in (REPO_ROOT / "exports").rglob("*.py")
        if "__pycache__" not in path.parts
    }
    bundled = {path.relative_to(worker_asset).as_posix() for path in (worker_asset / "exports").rglob("*.py")}
    assert shared == bundled
    # The resumable sha256 loads OpenSSL's libcrypto of the Lambda runtime through ctypes
    # (exports/running/writers/resumable_sha256.py, docs/deploy.md): the package brings none of its own
    # it could load. psycopg's wheel vendors one for its libpq, under a hashed name ctypes never
    # looks for (libcrypto-<hash>.so.3), next to that libpq only.
    bundled_crypto = [path.relative_to(worker_asset).as_posix() for path in worker_asset.rglob("libcrypto*")]
    assert all(re.fullmatch(r"psycopg_binary\.libs/libcrypto-[0-9a-f]{8}\.so\.3", name) for name in bundled_crypto)


def test_the_bundle_ships_bytecode_the_runtime_loads_without_checking_sources(worker_asset):
    tag = f"cpython-{runtime_python_version().replace('.', '')}"
    for source in (
        "handler.py",
        "exports/core/config/names.py",
        "aws_lambda_powertools/__init__.py",
        "openpyxl/__init__.py",
    ):
        path = worker_asset / source
        (compiled,) = path.parent.glob(f"__pycache__/{path.stem}.{tag}.pyc")
        # PEP 552 flags: bit 0 = hash-based, bit 1 = check the source. The zip resets file times,
        # so only an unchecked hash keeps the bytecode valid in Lambda.
        flags = int.from_bytes(compiled.read_bytes()[4:8], "little")
        assert flags == 0b01, source


# --- botocore trimmed to the services the code calls ------------------------------------------


def clients_made_in(root: Path) -> set[str]:
    """Every service name the code under ``root`` asks the client factory for."""
    found = set()
    for path in root.rglob("*.py"):
        # The factory itself, or handed on (client_factory, a context's client method).
        pattern = r"(?:aws_client|client_factory|\.client)\(\s*[\"']([a-z0-9-]+)[\"']"
        found |= set(re.findall(pattern, path.read_text()))
    return found


def test_the_packages_keep_the_model_of_every_service_the_code_calls():
    used = clients_made_in(REPO_ROOT / "exports") | clients_made_in(REPO_ROOT / "functions")

    assert used == set(AWS_SERVICES)
    # Clients come only from the factory (exports/core/aws/clients.py), never built on the side.
    for root in ("exports", "functions"):
        for path in (REPO_ROOT / root).rglob("*.py"):
            if path.name != "clients.py":
                assert not re.search(r"boto3\.(client|resource)\(|Session\(\)", path.read_text()), path


def test_the_bundle_keeps_only_those_service_models_and_botocores_shared_data(worker_asset):
    data = worker_asset / BOTOCORE_DATA

    assert sorted(path.name for path in data.iterdir() if path.is_dir()) == sorted(AWS_SERVICES)
    for shared in ("endpoints.json", "partitions.json", "sdk-default-configuration.json", "_retry.json"):
        assert (data / shared).is_file(), shared


def test_the_trimmed_bundles_sdk_makes_the_used_clients_and_refuses_others(worker_asset):
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1]); import boto3, botocore.exceptions; "
        "s = boto3.session.Session(region_name='us-east-1', aws_access_key_id='x', aws_secret_access_key='x'); "
        "[s.client(n) for n in sys.argv[2].split(',')]; "
        "exec('try:\\n s.client(\\'ec2\\')\\nexcept botocore.exceptions.UnknownServiceError:\\n print(\\'refused\\')')"
    )
    interpreter = find_interpreter(runtime_python_version())

    done = subprocess.run(
        [str(interpreter), "-c", probe, str(worker_asset), ",".join(AWS_SERVICES)],
        capture_output=True,
        text=True,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "refused"


def test_trimming_refuses_a_service_botocore_does_not_have(tmp_path):
    (tmp_path / BOTOCORE_DATA / "sqs").mkdir(parents=True)

    with pytest.raises(BundlingError, match="no-such-service"):
        trim_botocore(tmp_path, ["sqs", "no-such-service"])
    assert (tmp_path / BOTOCORE_DATA / "sqs").is_dir()


# The probes leave without the interpreter's teardown: pyarrow 26's thread pool aborts it now and
# then on this machine ("terminate called without an active exception", exit 134), the wheel as
# pip installs it as much as a trimmed one; what a probe checks is printed before.
_SKIP_ARROWS_EXIT = "import os; os._exit(0)"


def test_the_trimmed_pyarrow_still_writes_and_reads_parquet(tmp_path: Path) -> None:
    import shutil

    import pyarrow

    shutil.copytree(Path(pyarrow.__file__).parent, tmp_path / "pyarrow")
    before = sum(path.stat().st_size for path in (tmp_path / "pyarrow").rglob("*") if path.is_file())

    trim_pyarrow(tmp_path)

    after = sum(path.stat().st_size for path in (tmp_path / "pyarrow").rglob("*") if path.is_file())
    assert before - after > 40 * 2**20
    assert not list((tmp_path / "pyarrow").glob("libarrow_flight*"))
    probe = (
        "import io, sys; sys.path.insert(0, sys.argv[1]); import pyarrow, pyarrow.parquet as pq; "
        "assert pyarrow.__file__.startswith(sys.argv[1]); buffer = io.BytesIO(); "
        "pq.write_table(pyarrow.table({'n': [1, 2]}), buffer); "
        "print(pq.read_table(io.BytesIO(buffer.getvalue())).column('n').to_pylist(), flush=True); "
        f"{_SKIP_ARROWS_EXIT}"
    )
    result = subprocess.run([sys.executable, "-c", probe, str(tmp_path)], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[1, 2]"


def test_the_stripped_pyarrow_keeps_its_dynamic_symbols_and_still_writes_parquet(tmp_path: Path) -> None:
    import shutil

    import pyarrow

    shutil.copytree(Path(pyarrow.__file__).parent, tmp_path / "pyarrow")
    trim_pyarrow(tmp_path)
    libarrow = next((tmp_path / "pyarrow").glob("libarrow.so.*"))
    before = libarrow.read_bytes()

    saved = elf_strip.strip_package(tmp_path)

    # The static symbol tables go (megabytes), the dynamic ones stay: a second pass finds nothing.
    assert saved > 10 * 2**20
    assert len(libarrow.read_bytes()) < len(before)
    assert elf_strip.strip_package(tmp_path) == 0
    probe = (
        "import ctypes, io, sys; sys.path.insert(0, sys.argv[1]); import pyarrow, pyarrow.parquet as pq; "
        "assert pyarrow.__file__.startswith(sys.argv[1]); ctypes.CDLL(sys.argv[2]).arrow_mi_malloc_aligned; "
        "buffer = io.BytesIO(); pq.write_table(pyarrow.table({'n': [1, 2]}), buffer); "
        "print(pq.read_table(io.BytesIO(buffer.getvalue())).column('n').to_pylist(), flush=True); "
        f"{_SKIP_ARROWS_EXIT}"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path), str(libarrow)], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[1, 2]"


def test_stripping_leaves_files_that_are_not_elf_libraries_as_they_are(tmp_path: Path) -> None:
    text = tmp_path / "notes.so.txt"
    text.write_bytes(b"\x7fELF but not really")
    shell = tmp_path / "lib" / "fake.so"
    shell.parent.mkdir()
    shell.write_bytes(b"#!/bin/sh\n")

    assert elf_strip.strip_package(tmp_path) == 0
    assert text.read_bytes() == b"\x7fELF but not really"
    assert shell.read_bytes() == b"#!/bin/sh\n"
