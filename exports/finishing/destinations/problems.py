"""What can stop a file reaching a destination, in words its customer can act on.

Each kind writes its own sentences (its module in :mod:`exports.finishing.destinations.kinds`)
for the steps below: a probe (``verify``) and a file delivery raise the same
:class:`DestinationProblem`, so a customer reads the same sentence in the verify answer, on the
task and in the ``export.delivery_failed`` webhook. Nothing here names our internals: no stack
trace, no SDK error code, only what the customer can change on their side.
"""

from __future__ import annotations

from enum import StrEnum

from exports.core.errors import ExportsError


class ProblemStep(StrEnum):
    """The step that failed, in the order a connection takes them."""

    # The host resolves to an address the service never delivers to (private, loopback, ...).
    ADDRESS = "ADDRESS"
    DNS = "DNS"
    TCP = "TCP"
    HOST_KEY = "HOST_KEY"
    AUTH = "AUTH"
    PERMISSION = "PERMISSION"
    # The directory (SFTP) or the bucket (S3) is not there.
    PATH = "PATH"


# Steps a later attempt may get past without the customer changing anything (a server down for
# minutes, a DNS hiccup): a file delivery retries these, and reports the others at once.
TRANSIENT_STEPS = frozenset({ProblemStep.DNS, ProblemStep.TCP})


class DestinationProblem(ExportsError):
    """A destination could not be reached or written: ``step`` says where, the message what to do."""

    code = "DESTINATION_UNREACHABLE"

    def __init__(self, step: ProblemStep, message: str) -> None:
        super().__init__(message, step=step.value)
        self.step = step

    @property
    def transient(self) -> bool:
        """Whether trying again later, unchanged, may succeed."""
        return self.step in TRANSIENT_STEPS


def address_refused(host: str, address: str, rule: str) -> DestinationProblem:
    """The host resolves to an address the SSRF guard refuses."""
    return DestinationProblem(
        ProblemStep.ADDRESS,
        f"{host} resolves to {address}, which is not a public address ({rule}): we only deliver to public addresses.",
    )
