"""Sizes of the Lambda packages, botocore's share, and what trimming its service models buys.

Builds each function's package exactly as ``cdk synth`` does (:func:`infra.packaging.build_package`,
Linux arm64 wheels at the locked versions, bytecode for the runtime, botocore trimmed to
:data:`infra.packaging.AWS_SERVICES`), then reports per function: the unzipped size, the zipped
size (deflate, as CDK zips assets), botocore's size and how many service models it carries. Then
the API function's package is built once more with every service model (what it was before the
trim) and compared: sizes, and ``import boto3`` plus building the used clients in fresh
interpreters of the runtime's Python (median of ``--rounds``, the two variants alternating),
which is what a cold start gains.

Last, the margin check: every package must stay :data:`MARGIN_FRACTION` below Lambda's limit of
250 MB unzipped (:data:`LAMBDA_UNZIPPED_LIMIT_BYTES`); the script exits 1 naming any that does
not, so a dependency upgrade that grows the worker (pyarrow alone is about 79 MB of it, its native
libraries stripped of their symbol tables by :mod:`infra.elf_strip`) towards the limit fails here
rather than at deploy.

``make package-sizes`` (``ARGS="--rounds 9 --json sizes.json"``). Needs the wheels once (the
package index, or the wheel cache of an earlier synth).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

REPO_ROOT: Final = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from infra.function_factory import runtime_python_version  # noqa: E402
from infra.functions import SPECS  # noqa: E402
from infra.packaging import AWS_SERVICES, build_package, find_interpreter  # noqa: E402

# Lambda's quota for a function's deployment package unzipped (with its layers): 250 MB, counted
# in MiB (262,144,000 bytes).
LAMBDA_UNZIPPED_LIMIT_BYTES: Final = 250 * 1024 * 1024
# The room every package keeps below that limit.
MARGIN_FRACTION: Final = 0.25

_PROBE: Final = (
    "import sys, time; sys.path.insert(0, sys.argv[1]); t = time.perf_counter(); import boto3; "
    "s = boto3.session.Session(region_name='us-east-1'); "
    "[s.client(n, aws_access_key_id='x', aws_secret_access_key='x') for n in sys.argv[2].split(',')]; "
    "print(time.perf_counter() - t)"
)


def folder_bytes(folder: Path) -> int:
    """Bytes of every file under ``folder``."""
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def zipped_bytes(folder: Path) -> int:
    """The size of ``folder`` zipped with deflate (level 6, like CDK's asset zips)."""
    with tempfile.TemporaryDirectory() as scratch:
        archive = Path(scratch) / "asset.zip"
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as zipped:
            for path in sorted(folder.rglob("*")):
                if path.is_file():
                    zipped.write(path, path.relative_to(folder))
        return archive.stat().st_size


def service_models(package: Path) -> list[Path]:
    """botocore's service model folders in ``package``."""
    return sorted(path for path in (package / "botocore" / "data").iterdir() if path.is_dir())


def client_seconds(interpreter: Path, packages: dict[str, Path], rounds: int) -> dict[str, float]:
    """Median seconds of ``import boto3`` and the used clients from each package, in fresh
    interpreters, the packages taking turns (so neither always runs first)."""
    samples: dict[str, list[float]] = {name: [] for name in packages}
    for round_number in range(rounds):
        order = list(packages) if round_number % 2 == 0 else list(reversed(packages))
        for name in order:
            done = subprocess.run(
                [str(interpreter), "-c", _PROBE, str(packages[name]), ",".join(AWS_SERVICES)],
                capture_output=True,
                text=True,
                check=True,
            )
            samples[name].append(float(done.stdout.strip()))
    return {name: statistics.median(values) for name, values in samples.items()}


def measure(rounds: int) -> dict[str, Any]:
    """Build the packages and measure; the result is what :func:`report` prints."""
    result: dict[str, Any] = {"functions": {}}
    with tempfile.TemporaryDirectory(prefix="exports-packages-") as scratch:
        root = Path(scratch)
        for spec in SPECS:
            package = root / spec.name
            build_package(spec.package(), package)
            result["functions"][spec.name] = {
                "unzipped": folder_bytes(package),
                "zipped": zipped_bytes(package),
                "botocore": folder_bytes(package / "botocore"),
                "service_models": len(service_models(package)),
            }
            print(f"  built {spec.name}", file=sys.stderr, flush=True)
        trimmed, full = root / SPECS[0].name, root / "untrimmed"
        build_package(replace(SPECS[0].package(), aws_services=None), full)
        interpreter = find_interpreter(runtime_python_version())
        result["trim"] = {
            "function": SPECS[0].name,
            "kept": list(AWS_SERVICES),
            "service_models": {"full": len(service_models(full)), "trimmed": len(service_models(trimmed))},
            "unzipped": {"full": folder_bytes(full), "trimmed": folder_bytes(trimmed)},
            "zipped": {"full": zipped_bytes(full), "trimmed": zipped_bytes(trimmed)},
            "clients_sec": client_seconds(interpreter, {"full": full, "trimmed": trimmed}, rounds),
            "rounds": rounds,
        }
    return result


def report(result: dict[str, Any]) -> None:
    """Print the tables (sizes in MB of 10^6 bytes)."""
    mb = 1e6
    print("| function | unzipped MB | zipped MB | botocore MB | botocore service models |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, sizes in result["functions"].items():
        print(
            f"| {name} | {sizes['unzipped'] / mb:.1f} | {sizes['zipped'] / mb:.1f} | {sizes['botocore'] / mb:.1f} |"
            f" {sizes['service_models']} |"
        )
    trim = result["trim"]
    print()
    print(
        f"The {trim['function']} package with every botocore service model and trimmed to {', '.join(trim['kept'])}"
        f" (import boto3 + those clients: median of {trim['rounds']} fresh interpreters):"
    )
    print()
    print("| botocore | service models | unzipped MB | zipped MB | import boto3 + clients s |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for variant in ("full", "trimmed"):
        print(
            f"| {variant} | {trim['service_models'][variant]} | {trim['unzipped'][variant] / mb:.1f} |"
            f" {trim['zipped'][variant] / mb:.1f} | {trim['clients_sec'][variant]:.3f} |"
        )


def over_margin(functions: dict[str, dict[str, int]]) -> list[str]:
    """The functions (of :func:`measure`'s ``functions``) whose unzipped package leaves less than
    :data:`MARGIN_FRACTION` of Lambda's limit free, each with its size and the ceiling."""
    ceiling = LAMBDA_UNZIPPED_LIMIT_BYTES * (1 - MARGIN_FRACTION)
    return [
        f"{name}: {sizes['unzipped'] / 1e6:.1f} MB unzipped, above {ceiling / 1e6:.1f} MB "
        f"({1 - MARGIN_FRACTION:.0%} of Lambda's {LAMBDA_UNZIPPED_LIMIT_BYTES / 1e6:.1f} MB)"
        for name, sizes in functions.items()
        if sizes["unzipped"] > ceiling
    ]


def main() -> None:
    """Measure, print, optionally write JSON, and fail if a package is too close to the limit."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="fresh interpreters per timing; the median counts")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    options = parser.parse_args()
    result = measure(options.rounds)
    report(result)
    if options.json:
        options.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    too_large = over_margin(result["functions"])
    print()
    for line in too_large:
        print(f"TOO CLOSE TO THE LIMIT: {line}")
    if too_large:
        sys.exit(1)
    largest = max(sizes["unzipped"] for sizes in result["functions"].values())
    print(
        f"Margin kept: the largest package is {largest / LAMBDA_UNZIPPED_LIMIT_BYTES:.0%} of Lambda's unzipped limit "
        f"(at most {1 - MARGIN_FRACTION:.0%} allowed)."
    )


if __name__ == "__main__":
    main()
