"""The mail of a scheduled run: a short text with the outcome, the row count and a presigned
link to the file (never the file itself), and who may receive it.

No open relay: a recipient must be in a domain the deployment allows (``mail_allowed_domains``)
or be the schedule owner's own address, as their token's ``email`` claim gives it with
``email_verified`` true. A deployment that allows no domain mails owners only. Every address is
checked as an address (a dot-atom local part, a DNS domain): nothing that could carry another
header or a display name. No control character (CR, LF, any C0/C1 or line separator) of a
schedule's name reaches the subject."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Final

from exports.core.config.schedules import Schedules
from exports.core.errors import InvalidRequest

# An address as SES takes it and nothing more: a dot-atom local part (RFC 5322 atext, no quoted
# string, no comment, no display name) and a domain of DNS labels with a top-level label of letters.
_ATEXT: Final = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"

_LABEL: Final = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"

_DOMAIN: Final = rf"(?:{_LABEL}\.)+[A-Za-z]{{2,63}}"

_ADDRESS: Final = re.compile(rf"{_ATEXT}(?:\.{_ATEXT})*@{_DOMAIN}")

# RFC 5321's limits: 64 characters of local part, 254 of address.
MAX_ADDRESS_LENGTH: Final = 254

_MAX_LOCAL_LENGTH: Final = 64

# Unicode categories that never belong in a header: controls (CR, LF, tab, C1), line and
# paragraph separators.
_UNSAFE_CATEGORIES: Final = frozenset({"Cc", "Zl", "Zp"})


def is_address(value: str) -> bool:
    """Whether ``value`` is one plain e-mail address (``local@example.com``)."""
    local, _, _ = value.rpartition("@")
    return (
        len(value) <= MAX_ADDRESS_LENGTH
        and 0 < len(local) <= _MAX_LOCAL_LENGTH
        and _ADDRESS.fullmatch(value) is not None
    )


# The mark of the schema of one recipient in a model's JSON Schema: the OpenAPI document puts the
# deployment's rule there (:func:`recipient_pattern`), which a model written once cannot know.
RECIPIENT_MARK: Final = "x-exports-recipient"


def recipient_pattern(allowed_domains: Collection[str]) -> str | None:
    """The rule of :func:`may_receive` for everyone, as a JSON Schema ``pattern`` (an ECMA-262
    regular expression that Python's ``re`` reads the same way): an address of
    :func:`is_address`'s shape whose domain is one of ``allowed_domains``, in any case (the
    check lowers it); None when no domain is allowed. It cannot state two things: the local
    part's 64 characters (a look-ahead no generator of examples follows), and the caller's own
    verified address, which the deployment mails too (a matter of the token, not of the body)."""
    # A configured value that is no domain can be no address's either: it adds nothing.
    domains = [domain for domain in sorted(allowed_domains) if re.fullmatch(_DOMAIN, domain)]
    if not domains:
        return None
    alternatives = "|".join(_any_case(domain) for domain in domains)
    return rf"^{_ATEXT}(?:\.{_ATEXT})*@(?:{alternatives})$"


def _any_case(domain: str) -> str:
    """``domain`` (letters, digits, hyphens, dots) as a regular expression that matches it in
    upper or lower case."""
    return "".join(
        f"[{char.upper()}{char.lower()}]" if char.isalpha() else "\\." if char == "." else char
        for char in domain.lower()
    )


# The characters of _UNSAFE_CATEGORIES (Cc: U+0000-U+001F and U+007F-U+009F; Zl: U+2028; Zp:
# U+2029) kept out, as a JSON Schema ``pattern`` (ECMA-262 and Python's ``re`` read it alike):
# how the OpenAPI document states :func:`has_control_characters` for a schedule's name.
NO_CONTROL_CHARACTERS: Final = r"^[^\u0000-\u001f\u007f-\u009f\u2028\u2029]*$"


def has_control_characters(value: str) -> bool:
    """Whether ``value`` holds a character that must never reach a mail header (CR, LF, any
    other control character, a line or paragraph separator)."""
    return any(unicodedata.category(char) in _UNSAFE_CATEGORIES for char in value)


def header_text(value: str) -> str:
    """``value`` with every character :func:`has_control_characters` refuses made a space."""
    return "".join(" " if unicodedata.category(char) in _UNSAFE_CATEGORIES else char for char in value)


def verified_email(claims: Mapping[str, Any]) -> str | None:
    """The caller's own address: the token's ``email`` claim when ``email_verified`` is true
    (a JSON boolean, or the string API Gateway's authorizer makes of it), lower case; else None."""
    email, verified = claims.get("email"), claims.get("email_verified")
    if isinstance(email, str) and is_address(email) and verified in (True, "true"):
        return email.lower()
    return None


def may_receive(address: str, allowed_domains: Collection[str], own_email: str | None) -> bool:
    """Whether the deployment mails ``address``: in an allowed domain, or the owner's own
    verified address."""
    lowered = address.lower()
    return lowered.rpartition("@")[2] in allowed_domains or (own_email is not None and lowered == own_email)


def check_recipients(
    recipients: Sequence[str], sender: str | None, allowed_domains: frozenset[str], own_email: str | None
) -> None:
    """422 on ``recipients`` when this deployment sends no mail, on ``recipients[i]`` for what
    is not an address (``VALIDATION_ERROR``) or an address the deployment does not mail
    (``RECIPIENT_NOT_ALLOWED``: outside the allowed domains and not ``own_email``, the
    caller's verified address)."""
    if not recipients:
        return
    if not sender:
        raise InvalidRequest(
            "this deployment sends no mail (no sender is configured): leave recipients out",
            field="recipients",
            code="MAIL_NOT_CONFIGURED",
        )
    if len(recipients) > Schedules.MAX_RECIPIENTS:
        raise InvalidRequest(f"at most {Schedules.MAX_RECIPIENTS} recipients", field="recipients")
    for index, address in enumerate(recipients):
        if not is_address(address):
            raise InvalidRequest("is not an e-mail address (local@example.com)", field=f"recipients[{index}]")
        if not may_receive(address, allowed_domains, own_email):
            domains = f"the domains {', '.join(sorted(allowed_domains))} or " if allowed_domains else ""
            raise InvalidRequest(
                f"{address} is not an address this deployment mails: it mails {domains}your own verified e-mail "
                "address only",
                field=f"recipients[{index}]",
                code="RECIPIENT_NOT_ALLOWED",
            )


def allowed(recipients: Sequence[str], allowed_domains: frozenset[str], own_email: str | None) -> list[str]:
    """The recipients the deployment still mails (it may have narrowed its domains since)."""
    return [r for r in recipients if is_address(r) and may_receive(r, allowed_domains, own_email)]
