"""The recipients' rule as the OpenAPI document states it: the pattern of the allowed domains
takes exactly the addresses the service mails (the caller's own address aside), read as a JSON
Schema validator reads it (ECMA-262, jsonschema_rs), not only as Python's ``re`` does."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema_rs import Draft202012Validator

from exports.schedules.mail import (
    NO_CONTROL_CHARACTERS,
    has_control_characters,
    is_address,
    may_receive,
    recipient_pattern,
)

DOMAINS = frozenset({"acme.example", "finance.acme-2.example"})


def schema_takes(pattern: str, value: str) -> bool:
    return Draft202012Validator({"type": "string", "pattern": pattern}).is_valid(value)


@pytest.mark.parametrize(
    ("address", "mailed"),
    [
        ("ops@acme.example", True),
        ("first.last+tag@ACME.Example", True),  # the service lowers the domain
        ("o'neil@finance.acme-2.example", True),
        ("x@acme.example.com", False),  # a longer domain is another domain
        ("x@sub.acme.example", False),  # a subdomain is not allowed with its parent
        ("x@acmexexample", False),  # the dot is a dot, not any character
        ("x@finance.acme-2.example.", False),
        ("x@elsewhere.example", False),
        ("x@acme.example\n", False),  # ECMA's $ is the end (Python's would take a final line feed)
        ("x.@acme.example", False),
        ("a..b@acme.example", False),
        ("Ops <ops@acme.example>", False),
        ("ops@acme.example, x@elsewhere.example", False),
        ('"ops"@acme.example', False),
    ],
)
def test_the_pattern_takes_what_the_service_mails(address: str, mailed: bool) -> None:
    pattern = recipient_pattern(DOMAINS)
    assert pattern is not None
    assert schema_takes(pattern, address) is mailed
    assert (is_address(address) and may_receive(address, DOMAINS, None)) is mailed


_LOCAL = st.from_regex(r"[A-Za-z0-9.!#'*+=?^_`{|}~@ -]{1,12}", fullmatch=True)
_DOMAIN = st.sampled_from(["acme.example", "ACME.example", "finance.acme-2.example", "acme.example.org", "b.example"])


@settings(max_examples=300, derandomize=True, database=None)
@given(local=_LOCAL, domain=_DOMAIN)
def test_schema_and_service_agree_on_any_address(local: str, domain: str) -> None:
    address = f"{local}@{domain}"
    pattern = recipient_pattern(DOMAINS)
    assert pattern is not None
    assert schema_takes(pattern, address) == (is_address(address) and may_receive(address, DOMAINS, None)), address


def test_without_an_allowed_domain_there_is_no_pattern() -> None:
    """Such a deployment mails its callers' own verified addresses only: no pattern can name them."""
    assert recipient_pattern(frozenset()) is None
    assert recipient_pattern(frozenset({"not a domain"})) is None


def test_the_name_pattern_refuses_exactly_the_characters_kept_from_a_subject() -> None:
    """Every code point (but the lone surrogates, which no JSON text carries as UTF-8), alone
    and inside a name: the schema and the service agree."""
    name_schema = Draft202012Validator({"type": "string", "pattern": NO_CONTROL_CHARACTERS})
    disagree = [
        hex(point)
        for point in range(0x110000)
        if not 0xD800 <= point <= 0xDFFF
        and name_schema.is_valid(f"Weekly {chr(point)} orders") == has_control_characters(chr(point))
    ]
    assert disagree == []
