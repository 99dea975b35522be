"""The declaration file of sources and export types."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import exports


class Declarations:
    """Declared sources and export types (see docs/export-your-own-data.md)."""

    # The demo declaration the repository ships, relative to the repository (and package) root.
    DEFAULT_FILE: Final = "exports.toml"
    # Where the CDK app puts the effective declaration inside every function's package.
    PACKAGED_FILE: Final = "exports.toml"


def default_declaration_path() -> Path:
    """The declaration the repository ships (and the CDK app packages next to ``exports/``)."""
    return Path(exports.__file__).resolve().parent.parent / Declarations.DEFAULT_FILE
