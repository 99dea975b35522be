"""Lambda packages built without Docker (CDK local bundling).

A package is: the Linux arm64 wheels of the function's runtime dependencies (``pip install
--platform manylinux2014_aarch64 --platform manylinux_2_28_aarch64 --only-binary=:all:
--target``), the shared ``exports`` package, the function's own ``handler.py``, the declaration
of export types (``exports.toml`` at the package root, with the CA bundles it names), and
``.pyc`` files compiled by an interpreter of the Lambda runtime's version. The bytecode is
written in ``unchecked-hash`` mode: the asset zip resets file times, so timestamp-checked
bytecode would look stale and be recompiled (into a read-only file system) on every cold start.
The same package can be built for x86_64 (:attr:`PackageSpec.platforms`), which the packaged
function suite (``tests/packaged``) runs on this machine as Lambda would.

Versions are never typed here: they come from ``[project].dependencies`` in ``pyproject.toml``,
and ``requirements.lock`` pins everything those pull in: the same locked versions as the
virtualenv (``make`` syncs it from the lock), handed to pip as constraints
(:func:`locked_constraints`). The wheels are downloaded once per set of pins into a wheelhouse
(see :func:`wheelhouse`) and installed from there without an index.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Final

import jsii
from aws_cdk import BundlingOptions, ILocalBundling
from aws_cdk import aws_lambda as lambda_

from infra import elf_strip

REPO_ROOT: Final = Path(__file__).resolve().parent.parent
PYPROJECT: Final = REPO_ROOT / "pyproject.toml"
LOCKFILE: Final = REPO_ROOT / "requirements.lock"
# A pinned line of the lock: ``name==version`` (markers and hashes may follow).
_LOCKED_PIN: Final = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)", re.MULTILINE)
SHARED_PACKAGE: Final = REPO_ROOT / "exports"
FUNCTIONS_DIR: Final = REPO_ROOT / "functions"
PIP_PLATFORM: Final = "manylinux2014_aarch64"
# Wheels built for glibc 2.28 too (psycopg-binary ships no manylinux2014 arm64 wheel): Lambda's
# python3.12 runtime runs on Amazon Linux 2023, glibc 2.34.
PIP_PLATFORMS: Final = (PIP_PLATFORM, "manylinux_2_28_aarch64")
# The same dependency set for this machine's architecture: the packaged-function suite
# (tests/packaged) builds and runs the packages here, where arm64 code cannot run.
X86_64_PLATFORMS: Final = ("manylinux2014_x86_64", "manylinux_2_28_x86_64")
WHEEL_CACHE_ENV: Final = "EXPORTS_LAMBDA_WHEEL_CACHE"
# The AWS services the functions' code calls (the adapters: also RDS IAM auth tokens and RDS
# secrets of declared PostgreSQL sources, the callback's secret). botocore
# ships ~445 service models (23 MB of a 45 MB package); a package keeps only these, which makes
# its zip 62% smaller (docs/performance.md, "Package sizes"). A test scans the code for every
# client it makes, so a new service cannot be forgotten here.
AWS_SERVICES: Final = (
    "apigatewaymanagementapi",
    "dynamodb",
    "events",
    "rds",
    "s3",
    "scheduler",
    "secretsmanager",
    "sesv2",
    "sqs",
    "stepfunctions",
    # Delivery destinations: the customers' S3 roles are assumed through STS.
    "sts",
)
BOTOCORE_DATA: Final = Path("botocore") / "data"
# What of pyarrow the worker never loads (it writes Parquet to a file-like object): Arrow Flight,
# the S3 file system, the tests, the C++ headers and the Cython sources. About 55 MB of the
# worker's 250 MB (docs/performance.md, "Package sizes"); nothing that pyarrow.parquet links.
PYARROW_UNUSED: Final = (
    "tests",
    "include",
    "src",
    "libarrow_flight.so*",
    "libarrow_python_flight.so*",
    "_flight.*.so",
    "libarrow_s3.so*",
    "_s3fs.*.so",
    "*.pyx",
    "*.pxd",
    "*.pxi",
)
# Data files of the shared package that only some functions load (globs under exports/): every
# package leaves them out but those whose spec names them (PackageSpec.shared_data). The PDF font
# (13.3 MB) and its licence go with the worker alone, the only function that writes PDF.
PDF_FONT_FILES: Final = "running/writers/pdf/fonts/*"
OPTIONAL_SHARED_DATA: Final = (PDF_FONT_FILES,)
# Build leftovers of our own code that never go into a package.
_CACHE_NAMES: Final = ("__pycache__", "*.pyc")


class BundlingError(RuntimeError):
    """A Lambda package could not be built."""


def normalized_name(requirement: str) -> str:
    """The PEP 503 name of a requirement (``"Foo_Bar[x]==1"`` → ``"foo-bar"``)."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    if not match:
        raise ValueError(f"not a requirement: {requirement!r}")
    return re.sub(r"[-_.]+", "-", match.group(1)).lower()


@cache
def pinned_requirements(pyproject: Path = PYPROJECT) -> dict[str, str]:
    """The runtime requirements of ``pyproject.toml`` by normalized distribution name."""
    dependencies = tomllib.loads(pyproject.read_text())["project"]["dependencies"]
    return {normalized_name(requirement): requirement for requirement in dependencies}


def requirements_for(distributions: Iterable[str], pyproject: Path = PYPROJECT) -> tuple[str, ...]:
    """The pinned requirements of ``distributions``; ValueError for a name pyproject lacks."""
    pins = pinned_requirements(pyproject)
    names = [normalized_name(name) for name in distributions]
    missing = sorted(set(names) - pins.keys())
    if missing:
        raise ValueError(f"not in [project].dependencies of {pyproject.name}: {missing}")
    return tuple(pins[name] for name in names)


@cache
def locked_constraints(lockfile: Path = LOCKFILE) -> str:
    """Every package ``lockfile`` pins, as pip constraints (``name==version`` lines, sorted,
    without the lock's hashes, which pip refuses in constraints). A package locked at two
    versions (a fork by platform) cannot be one constraint and is refused."""
    versions: dict[str, set[str]] = {}
    for name, version in _LOCKED_PIN.findall(lockfile.read_text()):
        versions.setdefault(normalized_name(name), set()).add(version)
    forked = sorted(name for name, found in versions.items() if len(found) > 1)
    if forked:
        raise BundlingError(f"{lockfile.name} locks several versions of {forked}: pin one in pyproject.toml")
    return "".join(f"{name}=={found.pop()}\n" for name, found in sorted(versions.items()))


def _constraints_file() -> Path:
    """:func:`locked_constraints` in a file pip can read (next to the wheelhouses, by content)."""
    text = locked_constraints()
    path = wheel_cache_root() / f"constraints-{hashlib.sha256(text.encode()).hexdigest()[:24]}.txt"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".partial-{os.getpid()}")
        partial.write_text(text)
        partial.replace(path)
    return path


def _python_version_of(interpreter: str) -> str | None:
    """``"X.Y"`` of ``interpreter``, or None when it does not run (e.g. an inactive pyenv shim)."""
    probe = [interpreter, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"]
    result = subprocess.run(probe, capture_output=True, text=True, check=False)
    return result.stdout.strip() if result.returncode == 0 else None


@cache
def find_interpreter(python_version: str) -> Path:
    """A Python ``python_version`` interpreter (``"3.12"``) to compile bytecode for the runtime.

    Looks at the running interpreter, ``pythonX.Y`` on PATH, then pyenv's installed versions.
    """
    if f"{sys.version_info.major}.{sys.version_info.minor}" == python_version:
        return Path(sys.executable)
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    installed = sorted(
        pyenv_root.glob(f"versions/{python_version}.*/bin/python{python_version}"),
        key=lambda path: [int(part) for part in re.findall(r"\d+", path.parts[-3])],
        reverse=True,
    )
    on_path = shutil.which(f"python{python_version}")
    for candidate in [*([on_path] if on_path else []), *map(str, installed)]:
        if _python_version_of(candidate) == python_version:
            return Path(candidate)
    raise BundlingError(
        f"no Python {python_version} found (on PATH as python{python_version}, or under pyenv): it compiles "
        f"the bytecode the Lambda runtime loads. Install it (e.g. `pyenv install {python_version}`)."
    )


def _source_files(root: Path) -> Iterator[Path]:
    """Files under ``root`` that belong in a package, in a stable order."""
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        cached = any(fnmatch.fnmatch(part, pattern) for part in relative.parts for pattern in _CACHE_NAMES)
        if path.is_file() and not cached:
            yield path


@dataclass(frozen=True)
class PackageSpec:
    """What goes into one function's package."""

    handler_dir: Path
    requirements: tuple[str, ...]
    python_version: str
    # botocore keeps only these services' models (see :data:`AWS_SERVICES`); None keeps all.
    aws_services: tuple[str, ...] | None = AWS_SERVICES
    # Files besides the code, as (file, path in the package): the declaration of export types
    # and the CA bundles it names.
    extra_files: tuple[tuple[Path, str], ...] = ()
    # Which of :data:`OPTIONAL_SHARED_DATA` it carries (the others stay out).
    shared_data: tuple[str, ...] = ()
    # pip's target platforms: Lambda's arm64 (what the CDK app deploys) unless told otherwise.
    platforms: tuple[str, ...] = PIP_PLATFORMS

    def fingerprint(self) -> str:
        """A hash of every input of the package: unchanged inputs let CDK reuse a built asset."""
        digest = hashlib.sha256()
        digest.update(Path(__file__).read_bytes())
        digest.update(Path(elf_strip.__file__).read_bytes())
        digest.update("\n".join((self.python_version, *self.platforms, *self.requirements)).encode())
        digest.update(repr(self.aws_services).encode())
        digest.update(repr(self.shared_data).encode())
        for source, target in self.extra_files:
            digest.update(target.encode())
            digest.update(source.read_bytes())
        digest.update(locked_constraints().encode())
        for root in (self.handler_dir, SHARED_PACKAGE):
            for path in _source_files(root):
                digest.update(str(path.relative_to(REPO_ROOT)).encode())
                digest.update(path.read_bytes())
        return digest.hexdigest()


def shared_files(spec: PackageSpec) -> Iterator[Path]:
    """The files of the shared package that go into ``spec``'s package: all but the optional
    data it does not name."""
    left_out = [pattern for pattern in OPTIONAL_SHARED_DATA if pattern not in spec.shared_data]
    for source in _source_files(SHARED_PACKAGE):
        relative = source.relative_to(SHARED_PACKAGE).as_posix()
        if not any(fnmatch.fnmatch(relative, pattern) for pattern in left_out):
            yield source


def _run(command: list[str], step: str) -> None:
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise BundlingError(f"{step} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")


def _copy(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(source, target)


def _pip(platforms: tuple[str, ...], *arguments: str) -> list[str]:
    """A pip command for Linux wheels of ``platforms`` and the runtime's Python, pinned by the lock."""
    command = [sys.executable, "-m", "pip", *arguments, "--disable-pip-version-check", "--no-input", "--quiet"]
    for platform in platforms:
        command += ["--platform", platform]
    command += ["--implementation", "cp", "--only-binary=:all:"]
    return [*command, "--constraint", str(_constraints_file())]


def wheel_cache_root() -> Path:
    """Where downloaded wheels are kept (``$EXPORTS_LAMBDA_WHEEL_CACHE``, else the user cache)."""
    configured = os.environ.get(WHEEL_CACHE_ENV)
    return Path(configured) if configured else Path.home() / ".cache" / "exports-lambda-wheels"


def wheelhouse(spec: PackageSpec) -> Path:
    """A folder with every wheel ``spec`` needs, downloaded once per set of pins.

    Keyed by the requirements, the constraints and the target platform, so a change to our own
    code never downloads again, and a synth after the first one needs no network.
    """
    key = hashlib.sha256()
    key.update("\n".join((*spec.platforms, spec.python_version, *spec.requirements)).encode())
    key.update(locked_constraints().encode())
    root = wheel_cache_root()
    house = root / key.hexdigest()[:24]
    if house.is_dir():
        return house
    partial = root / f"{house.name}.partial-{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    download = _pip(spec.platforms, "download", "--dest", str(partial), "--python-version", spec.python_version)
    _run([*download, *spec.requirements], "pip download")
    try:
        partial.rename(house)
    except OSError:  # another build finished the same download first
        shutil.rmtree(partial, ignore_errors=True)
    return house


def build_package(spec: PackageSpec, output_dir: Path) -> None:
    """Write the package of ``spec`` into ``output_dir``."""
    interpreter = find_interpreter(spec.python_version)
    install = _pip(
        spec.platforms, "install", "--no-index", "--find-links", str(wheelhouse(spec)), "--target", str(output_dir)
    )
    install += ["--python-version", spec.python_version, "--no-compile"]
    _run([*install, *spec.requirements], "pip install")
    if spec.aws_services is not None:
        trim_botocore(output_dir, spec.aws_services)
    trim_pyarrow(output_dir)
    # The wheels' native libraries carry their static symbol tables (about 50 MB of the worker's
    # package, a fifth): no loader reads them (infra/elf_strip.py).
    elf_strip.strip_package(output_dir)
    # The handler's folder is a package only for the tests; in Lambda its files sit at the root.
    for source in _source_files(spec.handler_dir):
        if source.name != "__init__.py":
            _copy(source, output_dir / source.relative_to(spec.handler_dir))
    for source in shared_files(spec):
        _copy(source, output_dir / SHARED_PACKAGE.name / source.relative_to(SHARED_PACKAGE))
    for source, target in spec.extra_files:
        _copy(source, output_dir / target)
    compile_all = [str(interpreter), "-m", "compileall", "-q", "-j", "0", "--invalidation-mode", "unchecked-hash"]
    _run([*compile_all, str(output_dir)], f"compileall with {interpreter}")


def trim_botocore(package_dir: Path, keep: Iterable[str]) -> None:
    """Remove every botocore service model but ``keep``'s (the shared files, endpoints and
    partitions, stay). A client of a removed service fails with ``UnknownServiceError``."""
    data = package_dir / BOTOCORE_DATA
    if not data.is_dir():
        return
    kept = set(keep)
    missing = sorted(kept - {path.name for path in data.iterdir() if path.is_dir()})
    if missing:
        raise BundlingError(f"botocore has no service model for {missing}")
    for model in data.iterdir():
        if model.is_dir() and model.name not in kept:
            shutil.rmtree(model)


def trim_pyarrow(package_dir: Path) -> None:
    """Remove :data:`PYARROW_UNUSED` from the package's pyarrow, if it has one."""
    root = package_dir / "pyarrow"
    if not root.is_dir():
        return
    for pattern in PYARROW_UNUSED:
        for path in root.glob(pattern):
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink()


@jsii.implements(ILocalBundling)
class LocalBundling:
    """CDK's local bundling hook: builds the package on this machine, never in Docker."""

    def __init__(self, spec: PackageSpec) -> None:
        self._spec = spec

    def try_bundle(self, output_dir: str, _options: BundlingOptions | None = None) -> bool:
        """Build into ``output_dir``; True tells CDK that no Docker run is needed.

        jsii passes the bundling options as one positional struct; they describe the Docker run
        this replaces, so they are not needed.
        """
        build_package(self._spec, Path(output_dir))
        return True


def lambda_code(spec: PackageSpec, runtime: lambda_.Runtime) -> lambda_.Code:
    """The asset of one function, bundled locally and keyed by :meth:`PackageSpec.fingerprint`."""
    return lambda_.Code.from_asset(
        str(spec.handler_dir),
        asset_hash=spec.fingerprint(),
        bundling=BundlingOptions(
            # Required by the API; never pulled: local bundling either succeeds or raises.
            image=runtime.bundling_image,
            local=LocalBundling(spec),  # type: ignore[arg-type]  # jsii.implements: an ILocalBundling at run time
        ),
    )
