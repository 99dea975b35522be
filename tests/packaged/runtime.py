"""Running a packaged function the way Lambda runs it, on this machine.

Each invocation is a fresh interpreter of the runtime's Python version in isolated mode without
``site`` (``python -I -S``: no site-packages, no user site, no ``PYTHON*`` variables), that sees
the package and the standard library only (:mod:`tests.packaged.bootstrap` imports the handler),
in a mount namespace of its own (``unshare``) where:

- the file system is read-only but for ``/tmp``, and the package (the working directory, like
  ``/var/task``) is read-only too;
- the environment is exactly Lambda's variables and the function's own (no ``HOME``, no
  ``SSL_CERT_FILE``);
- the runtime's trust store (the file the interpreter's OpenSSL reads by default) holds what the
  test says it holds, so "trusting only what the runtime would" means what it means on Lambda.

Nothing here changes the machine: the mounts exist in the namespace only, and end with it.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BOOTSTRAP = Path(__file__).with_name("bootstrap.py")
REGION = "us-east-1"
INVOKE_TIMEOUT_SEC = 180


@dataclass(frozen=True)
class PackagedFunction:
    """One function's unpacked package, as :mod:`tests.packaged.build` describes it."""

    name: str
    path: Path
    handler: str
    variables: frozenset[str]
    memory_mb: int
    timeout_sec: int
    interpreter: str

    @classmethod
    def from_manifest(cls, name: str, entry: dict[str, Any]) -> PackagedFunction:
        """From one entry of the build's manifest."""
        return cls(
            name=name,
            path=Path(entry["path"]),
            handler=entry["handler"],
            variables=frozenset(entry["variables"]),
            memory_mb=int(entry["memory_mb"]),
            timeout_sec=int(entry["timeout_sec"]),
            interpreter=entry["interpreter"],
        )

    def own_environment(self, available: dict[str, str]) -> dict[str, str]:
        """Of ``available``, what the CDK app gives this function: the variables its settings read."""
        return {name: value for name, value in available.items() if name in self.variables}


@dataclass(frozen=True)
class Invocation:
    """What one invocation returned (or raised, in Lambda's error shape), and what it printed."""

    outcome: dict[str, Any]
    stdout: str
    stderr: str

    @property
    def result(self) -> Any:
        """The handler's return value; AssertionError with the error if it raised."""
        if "errorType" in self.outcome:
            raise AssertionError(f"{self.outcome['errorType']}: {self.outcome['errorMessage']}\n{self.stderr}")
        return self.outcome["result"]


@dataclass
class Runtime:
    """Lambda's runtime for a function: its interpreter, its trust store, its variables."""

    trust_bundle: Path
    trust_store: Path
    endpoint_url: str
    # Folders no function may write even where they lie under /tmp (a clone in /tmp: the project).
    read_only: tuple[Path, ...] = ()
    scratch: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="exports-lambda-")))
    runtime_dir: Path = field(init=False)
    bootstrap: Path = field(init=False)

    def __post_init__(self) -> None:
        # The runtime's own folder (Lambda's /var/runtime), outside the project.
        self.runtime_dir = self.scratch / "runtime"
        self.runtime_dir.mkdir()
        self.bootstrap = self.runtime_dir / BOOTSTRAP.name
        shutil.copyfile(BOOTSTRAP, self.bootstrap)

    def close(self) -> None:
        """Remove the runtime's folder and what invocations left in it."""
        shutil.rmtree(self.scratch, ignore_errors=True)

    def lambda_variables(self, function: PackagedFunction) -> dict[str, str]:
        """The variables Lambda sets for ``function`` (docs: "Defined runtime environment
        variables"), with the local stack's endpoint and credentials."""
        return {
            "_HANDLER": function.handler,
            "AWS_EXECUTION_ENV": "AWS_Lambda_python3.12",
            "AWS_REGION": REGION,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_LAMBDA_FUNCTION_NAME": f"exports-{function.name}",
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(function.memory_mb),
            "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
            "AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand",
            "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/exports-{function.name}",
            "AWS_LAMBDA_LOG_STREAM_NAME": "2026/12/01/[$LATEST]0123456789abcdef",
            "AWS_LAMBDA_RUNTIME_API": "127.0.0.1:9001",
            "AWS_ACCESS_KEY_ID": "local",
            "AWS_SECRET_ACCESS_KEY": "local",
            "AWS_SESSION_TOKEN": "local",
            # Active tracing: the X-Ray SDK sends its segments to the daemon's (closed) UDP port.
            "AWS_XRAY_CONTEXT_MISSING": "LOG_ERROR",
            "AWS_XRAY_DAEMON_ADDRESS": "127.0.0.1:2000",
            "_X_AMZN_TRACE_ID": "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1",
            "LAMBDA_TASK_ROOT": str(function.path),
            "LAMBDA_RUNTIME_DIR": str(self.runtime_dir),
            "LANG": "en_US.UTF-8",
            "TZ": ":UTC",
            "PATH": "/usr/local/bin:/usr/bin/:/bin",
            # Not on Lambda: where the local stack answers instead of AWS.
            "AWS_ENDPOINT_URL": self.endpoint_url,
            "EXPORTS_HARNESS_TIMEOUT_SEC": str(function.timeout_sec),
        }

    def run_isolated(
        self, function: PackagedFunction, environment: dict[str, str], *argv: str
    ) -> subprocess.CompletedProcess[str]:
        """``python -I -S <argv>`` of ``function``'s runtime in the package folder, isolated as
        the module says, with exactly ``environment``."""
        package = shlex.quote(str(function.path))
        variables = " ".join(shlex.quote(f"{name}={value}") for name, value in environment.items())
        script = "\n".join(
            (
                "set -e",
                f"mount --bind {shlex.quote(str(self.trust_bundle))} {shlex.quote(str(self.trust_store))}",
                "mount --bind /tmp /tmp",
                *(f"mount --bind {shlex.quote(str(path))} {shlex.quote(str(path))}" for path in self.read_only),
                *(f"mount -o remount,bind,ro {shlex.quote(str(path))}" for path in self.read_only),
                f"mount --bind {package} {package}",
                f"mount -o remount,bind,ro {package}",
                # Bind remounts change this namespace's mount only, never the machine's.
                "mount -o remount,bind,ro /",
                f"cd {package}",
                f"exec env -i {variables} {shlex.quote(function.interpreter)} -I -S "
                + " ".join(shlex.quote(arg) for arg in argv),
            )
        )
        return subprocess.run(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
            capture_output=True,
            text=True,
            timeout=INVOKE_TIMEOUT_SEC,
            check=False,
        )

    def invoke(self, function: PackagedFunction, event: dict[str, Any], environment: dict[str, str]) -> Invocation:
        """One invocation of ``function`` with ``event`` and its own ``environment``."""
        with tempfile.TemporaryDirectory(dir=self.scratch) as folder:
            event_file, result_file = Path(folder) / "event.json", Path(folder) / "result.json"
            event_file.write_text(json.dumps(event))
            variables = {**self.lambda_variables(function), **environment}
            ran = self.run_isolated(
                function, variables, str(self.bootstrap), str(function.path), str(event_file), str(result_file)
            )
            if not result_file.exists():
                raise AssertionError(f"the {function.name} runtime did not finish ({ran.returncode}):\n{ran.stderr}")
            return Invocation(json.loads(result_file.read_text()), ran.stdout, ran.stderr)
