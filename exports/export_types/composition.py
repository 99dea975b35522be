"""Building this deployment's export types from its declaration file, wired to their sources' readers."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from exports.core.aws.clients import aws_client
from exports.core.config.settings import (
    RegistrySettings,
)

if TYPE_CHECKING:
    from exports.core.export_type import AnyExportType
    from exports.export_types.build import BuiltTypes
    from exports.export_types.registry import ExportTypeRegistry


def declared_export_types(settings: RegistrySettings, environ: Mapping[str, str] = os.environ) -> list[AnyExportType]:
    """The export types of this deployment: the declaration file's, wired to their sources."""
    return built_export_types(settings, environ).types


def built_export_types(settings: RegistrySettings, environ: Mapping[str, str] = os.environ) -> BuiltTypes:
    """The declaration file's export types wired to their sources (each source kind builds its
    readers on the shared clients), and those left out (a source this deployment gives no
    connection) with the reason."""
    from exports.export_types.build import build_export_types
    from exports.export_types.loader import default_path, load_declarations
    from exports.sources.kind import SourceReaders

    declarations = load_declarations(settings.exports_config or default_path(), settings.source_overrides)
    readers = SourceReaders(client=aws_client, environ=environ, settings=settings)
    return build_export_types(declarations, readers)


def build_registry(settings: RegistrySettings, environ: Mapping[str, str] = os.environ) -> ExportTypeRegistry:
    """The registry of the declared export types, built now."""
    from exports.export_types.registry import ExportTypeRegistry

    return ExportTypeRegistry(declared_export_types(settings, environ))
