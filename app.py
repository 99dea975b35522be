"""CDK entry point: ``npx cdk synth`` (or ``make synth``), ``-c stage=prod`` for production.

Context keys are listed in :class:`infra.settings.Context`; deploying is described in
docs/deploy.md.
"""

from __future__ import annotations

import sys

from aws_cdk import App

from exports.export_types.loader import DeclarationError
from infra.nag import add_checks
from infra.settings import StageSettings
from infra.stack import ExportsStack, stack_name


def build(app: App) -> ExportsStack:
    """Add the stack of the stage named in ``app``'s context, and cdk-nag as a synth gate."""
    settings = StageSettings.from_context(app.node.try_get_context)
    stack = ExportsStack(app, stack_name(settings.stage), settings=settings)
    add_checks(app)
    return stack


def main() -> None:
    """Synthesize the app as the CDK CLI asks (context and output folder from its environment)."""
    app = App()
    try:
        build(app)
    except (ValueError, DeclarationError) as error:  # a context or declaration mistake: its message says it all
        sys.exit(f"exports: {error}")
    app.synth()


if __name__ == "__main__":
    main()
