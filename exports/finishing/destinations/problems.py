"""What can stop a file reaching a destination, in words its customer can act on.

One table per kind: a probe (``verify``) and, later, a file delivery raise the same
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


def sftp_problem(step: ProblemStep, host: str, port: int, username: str, path: str) -> DestinationProblem:
    """The customer's sentence for an SFTP destination's ``step``."""
    messages = {
        ProblemStep.DNS: f"{host} does not resolve: check the host name, and that its DNS record is public.",
        ProblemStep.TCP: f"nothing accepted a connection on {host} port {port}: check that the server is up"
        " and that its firewall lets our addresses in.",
        ProblemStep.HOST_KEY: f"{host} showed a host key other than the pinned one: if the server's key changed"
        " on purpose, set the new host_key_fingerprint; if not, someone may be in between.",
        ProblemStep.AUTH: f"{host} refused our login as {username}: install the destination's public key in that"
        " user's authorized_keys, or set the right password.",
        ProblemStep.PERMISSION: f"{username} may not create and remove files in {path} on {host}: grant write"
        " access to that directory.",
        ProblemStep.PATH: f"the directory {path} does not exist on {host}: create it, or change the path.",
    }
    return DestinationProblem(step, messages[step])


def address_refused(host: str, address: str, rule: str) -> DestinationProblem:
    """The host resolves to an address the SSRF guard refuses."""
    return DestinationProblem(
        ProblemStep.ADDRESS,
        f"{host} resolves to {address}, which is not a public address ({rule}): we only deliver to public addresses.",
    )


def s3_problem(step: ProblemStep, bucket: str, prefix: str, role_arn: str) -> DestinationProblem:
    """The customer's sentence for an S3 destination's ``step``."""
    messages = {
        ProblemStep.AUTH: f"we could not assume {role_arn}: check that its trust policy is the one this"
        " destination shows (our principal and its ExternalId).",
        ProblemStep.PERMISSION: f"the role may not write to s3://{bucket}/{prefix}: attach the permissions"
        " policy this destination shows (s3:PutObject, s3:DeleteObject; the KMS key's use with SSE-KMS).",
        ProblemStep.PATH: f"the bucket {bucket} does not exist in the destination's region.",
        ProblemStep.TCP: "S3 did not answer: we will try again.",
    }
    return DestinationProblem(step, messages[step])
