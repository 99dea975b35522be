"""The declared sources and export types the stack deploys: checked at synth (a broken
declaration fails ``cdk synth`` with the loader's message), packaged into every function, and
what the worker needs to reach them (secrets, RDS IAM users, the user's own tables)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from exports.config.declarations import Declarations as DeclarationFiles
from exports.config.env import Env
from exports.declared.loader import DeclarationError, Declarations, default_path, load_declarations
from exports.declared.model import PostgresSource
from infra.settings import StageSettings

# Secrets Manager appends a hyphen and six random characters to a secret's name in its ARN.
_COMPLETE_SECRET_ARN = re.compile(r":secret:.+-[A-Za-z0-9]{6}$")
PARTIAL_SECRET_SUFFIX = "-??????"
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
        default), and the CA bundles its sources name, at the same place relative to it."""
        files = [(self.declarations.path, DeclarationFiles.PACKAGED_FILE)]
        base = self.declarations.base_dir.resolve()
        for name, source in self.declarations.file.sources.items():
            if isinstance(source, PostgresSource) and source.sslrootcert not in (None, "system"):
                bundle = (base / str(source.sslrootcert)).resolve()
                if not bundle.is_relative_to(base) or not bundle.is_file():
                    raise DeclarationError(
                        self.declarations.path,
                        f"sources.{name}: sslrootcert",
                        "must name a file in the declaration's folder",
                    )
                files.append((bundle, str(bundle.relative_to(base))))
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
        """The secrets the worker reads to connect, as IAM resources: a complete ARN as it is,
        a partial one (without the ``-XXXXXX`` suffix Secrets Manager appends to the name,
        which GetSecretValue accepts) with that suffix as a wildcard: IAM compares the full ARN,
        so the bare partial one would be denied."""
        arns = set()
        for source in self.declarations.file.sources.values():
            if isinstance(source, PostgresSource) and source.secret_arn:
                arn = source.secret_arn
                arns.add(arn if _COMPLETE_SECRET_ARN.search(arn) else f"{arn}{PARTIAL_SECRET_SUFFIX}")
        return sorted(arns)

    def iam_users(self) -> list[tuple[str, str, str | None]]:
        """(resource id, database user, region or None for the stack's) of every source with
        RDS IAM authentication."""
        users = []
        for name, source in self.declarations.file.sources.items():
            if isinstance(source, PostgresSource) and source.iam_auth is not None:
                if source.iam_auth.resource_id is None:
                    raise DeclarationError(
                        self.declarations.path,
                        f"sources.{name}: iam_auth.resource_id",
                        "is needed on AWS: the worker is granted rds-db:connect on it",
                    )
                users.append((source.iam_auth.resource_id, source.iam_auth.user, source.iam_auth.region))
        return sorted(set(users), key=str)

    def table_variables(self) -> set[str]:
        """The variables declared DynamoDB types name their table by (``table_env``)."""
        return {name for name, _ in self.table_indexes()}

    def table_indexes(self) -> list[tuple[str, str | None]]:
        """(table variable, index or None for the table itself) that declared DynamoDB types
        read, for the tables they name by variable."""
        read: set[tuple[str, str | None]] = set()
        for declared in self.declarations.file.types.values():
            if declared.dynamodb is not None and declared.dynamodb.table_env:
                read.add((declared.dynamodb.table_env, declared.dynamodb.index))
        return sorted(read, key=str)

    def user_tables(self) -> list[str]:
        """The DynamoDB tables declared by name (tables named by variable are the stack's own)."""
        return sorted(
            {
                declared.dynamodb.table
                for declared in self.declarations.file.types.values()
                if declared.dynamodb is not None and declared.dynamodb.table
            }
        )
