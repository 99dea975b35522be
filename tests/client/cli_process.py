"""Running the installed ``exportctl`` as a user would: a subprocess, configured by environment."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

# The console script pip installed next to this interpreter.
EXPORTCTL = Path(sys.executable).with_name("exportctl")
TIMEOUT_SEC = 60


@dataclass(frozen=True)
class Exportctl:
    """``exportctl`` pointed at ``url`` with ``token`` (EXPORTS_API_URL, EXPORTS_TOKEN)."""

    url: str
    token: str

    def __call__(self, *args: str, token: str | None = None) -> subprocess.CompletedProcess[str]:
        """Run it with ``args``; stdout and stderr are captured (pipes, not a terminal)."""
        env = {**os.environ, "EXPORTS_API_URL": self.url, "EXPORTS_TOKEN": token or self.token}
        return subprocess.run(
            [str(EXPORTCTL), *args], env=env, capture_output=True, text=True, timeout=TIMEOUT_SEC, check=False
        )
