"""The declared sources and export types the stack deploys: checked at synth (a broken
declaration fails ``cdk synth`` with the loader's message), packaged into every function, and
what the worker needs to reach them (secrets, RDS IAM users, the services it calls, the user's
own tables)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from exports.config.declarations import Declarations as DeclarationFiles
from exports.config.env import Env
from exports.declared.loader import DeclarationError, Declarations, default_path, load_declarations
from exports.sources.kind import Fail, InvokeGrant, TableRead
from exports.sources.registry import source_kind, type_kind
from infra.settings import StageSettings

# How Cognito names a custom attribute's claim, and its groups claim.
COGNITO_CUSTOM = "custom:"
COGNITO_GROUPS = "cognito:groups"


@dataclass(frozen=True)
class DeclaredSources:
    """The checked declaration of a stage, with its source overrides."""

    declarations: Declarations
    overrides: dict[str, dict[str, object]]

    @classmethod
    def load(cls, settings: StageSettings) -> DeclaredSources:
        """The stage's declaration file (``-c exports_config``) with ``-c sources`` applied."""
        path = Path(settings.exports_config) if settings.exports_config else default_path()
        return cls(load_declarations(path, settings.source_overrides), settings.source_overrides)

    def packaged_files(self) -> tuple[tuple[Path, str], ...]:
        """The declaration, as the package's ``exports.toml`` (where the functions look by
        default), and the files its sources' kinds ship with it (CA bundles), at the same place
        relative to it."""
        files = [(self.declarations.path, DeclarationFiles.PACKAGED_FILE)]
        base = self.declarations.base_dir.resolve()
        for name, source in self.declarations.file.sources.items():
            for key, relative in source_kind(source).shipped_files(source):
                shipped = (base / relative).resolve()
                if not shipped.is_relative_to(base) or not shipped.is_file():
                    raise DeclarationError(
                        self.declarations.path, f"sources.{name}: {key}", "must name a file in the declaration's folder"
                    )
                files.append((shipped, str(shipped.relative_to(base))))
        return tuple(files)

    def environment(self) -> dict[str, str]:
        """What the functions that build the registry (API, worker) need besides the file: the
        source overrides."""
        return {Env.SOURCE_OVERRIDES: json.dumps(self.overrides, sort_keys=True)} if self.overrides else {}

    def cognito_attributes(self) -> list[str]:
        """The Cognito custom attributes the declaration reads (``custom:tenant_id`` in a caller
        binding or an allow rule): a user pool the stack creates defines them."""
        claims = set(self.declarations.bound_claims)
        for declared in self.declarations.file.types.values():
            if declared.allow is not None:
                claims.update(declared.allow.claims)
        return sorted(claim.removeprefix(COGNITO_CUSTOM) for claim in claims if claim.startswith(COGNITO_CUSTOM))

    def cognito_groups(self) -> list[str]:
        """The groups the declaration's allow rules name, when they read Cognito's groups claim:
        a user pool the stack creates has them."""
        if self.declarations.file.access.groups_claim != COGNITO_GROUPS:
            return []
        return sorted(
            {
                group
                for declared in self.declarations.file.types.values()
                if declared.allow
                for group in declared.allow.groups
            }
        )

    def secret_arns(self) -> list[str]:
        """The secrets the worker reads to connect, as IAM resources (as each kind names them)."""
        sources = self.declarations.file.sources.values()
        return sorted({arn for source in sources for arn in source_kind(source).secret_arns(source)})

    def iam_users(self) -> list[tuple[str, str, str | None]]:
        """(resource id, database user, region or None for the stack's) of every source with
        RDS IAM authentication."""
        users = {
            (user.resource_id, user.user, user.region)
            for name, source in self.declarations.file.sources.items()
            for user in source_kind(source).rds_users(self._failing(f"sources.{name}"), source)
        }
        return sorted(users, key=str)

    def invoke_grants(self) -> list[InvokeGrant]:
        """The services (APIs, function URLs) the worker calls to read the sources, each as
        narrow as the source's kind makes it from the source and the types reading it."""
        types = self.declarations.file.types.values()
        grants = {
            grant
            for name, source in self.declarations.file.sources.items()
            for grant in source_kind(source).invoke_grants(source, [t for t in types if t.source == name])
        }
        return sorted(grants, key=str)

    def table_variables(self) -> set[str]:
        """The variables declared DynamoDB types name their table by (``table_env``)."""
        return {name for name, _ in self.table_indexes()}

    def table_indexes(self) -> list[tuple[str, str | None]]:
        """(table variable, index or None for the table itself) that declared DynamoDB types
        read, for the tables they name by variable."""
        return sorted({(read.table_env, read.index) for read in self._table_reads() if read.table_env}, key=str)

    def user_tables(self) -> list[str]:
        """The DynamoDB tables declared by name (tables named by variable are the stack's own)."""
        return sorted({read.table for read in self._table_reads() if read.table})

    def _table_reads(self) -> list[TableRead]:
        reads: list[TableRead] = []
        for declared in self.declarations.file.types.values():
            kind = type_kind(declared)
            if kind is not None:
                reads.extend(kind.table_reads(declared))
        return reads

    def _failing(self, entry: str) -> Fail:
        def fail(key: str, message: str) -> DeclarationError:
            return DeclarationError(self.declarations.path, f"{entry}: {key}", message)

        return fail
