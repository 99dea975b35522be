"""Build every function's Lambda package as the CDK app does, for this machine's x86_64.

``python -m tests.packaged.build [<declaration>]`` prints a JSON manifest: per function
its package folder, handler and what its settings read. It runs in a process of its own so
that the test processes never import the CDK (and start its node kernel). A package is kept
under the wheel cache, keyed by its fingerprint (the lock, our code, the declaration, the
platform): an unchanged tree reuses it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from exports.core.config.settings import RegistrySettings
from exports.export_types.loader import default_path, load_declarations
from infra.function_factory import HANDLER
from infra.functions import SPECS
from infra.packaging import X86_64_PLATFORMS, build_package, find_interpreter, wheel_cache_root
from infra.sources import DeclaredSources


def main(declaration: Path) -> dict[str, dict[str, object]]:
    """Build (or reuse) the packages; the manifest by function name."""
    packaged = DeclaredSources(load_declarations(declaration), {}).packaged_files()
    root = wheel_cache_root() / "packages"
    manifest: dict[str, dict[str, object]] = {}
    for spec in SPECS:
        # The declaration goes only where the registry is built, as in infra/functions.py.
        extra = packaged if issubclass(spec.runtime_settings, RegistrySettings) else ()
        package = dataclasses.replace(spec.package(extra), platforms=X86_64_PLATFORMS)
        folder = root / package.fingerprint()[:24]
        if not folder.is_dir():
            partial = folder.with_name(f"{folder.name}.partial-{os.getpid()}")
            shutil.rmtree(partial, ignore_errors=True)
            build_package(package, partial)
            try:
                partial.rename(folder)
            except OSError:  # another session built the same package first
                shutil.rmtree(partial, ignore_errors=True)
        manifest[spec.name] = {
            "path": str(folder),
            "handler": HANDLER,
            "variables": sorted(spec.runtime_settings.variables()),
            "memory_mb": spec.memory_mb,
            "timeout_sec": spec.timeout_sec,
            # The interpreter itself (a pyenv shim needs an environment the runtime does not have).
            "interpreter": subprocess.run(
                [str(find_interpreter(package.python_version)), "-c", "import sys; print(sys.executable)"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip(),
        }
    return manifest


def build_apart() -> dict[str, dict[str, Any]]:
    """:func:`main` for the default declaration in a process of its own (so that the caller
    never imports the CDK and starts its node kernel); the manifest. The packages are kept in
    the virtualenv's wheel cache when there is one (the tests' and the bench's)."""
    in_venv = sys.prefix != sys.base_prefix
    cache = Path(sys.prefix) / "lambda-wheels" if in_venv else Path.home() / ".cache" / "exports-lambda-wheels"
    built = subprocess.run(
        [sys.executable, "-m", "tests.packaged.build"],
        cwd=Path(__file__).resolve().parents[2],
        env={
            **os.environ,
            "EXPORTS_LAMBDA_WHEEL_CACHE": str(cache),
            "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
        },
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    if built.returncode != 0:
        raise RuntimeError(f"building the packages failed:\n{built.stderr}")
    manifest: dict[str, dict[str, Any]] = json.loads(built.stdout.strip().splitlines()[-1])
    return manifest


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]) if len(sys.argv) > 1 else default_path())))
