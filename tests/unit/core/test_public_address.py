"""The SSRF guard, with a fake resolver: what may be called back, and what never."""

import ipaddress

import pytest

from exports.core.errors import InvalidRequest
from exports.core.public_address import check_destination


def resolving_to(*addresses: str):
    return lambda host, port: list(addresses)


REFUSED_ADDRESSES = {
    "private 10/8": "10.1.2.3",
    "private 172.16/12": "172.16.0.9",
    "private 192.168/16": "192.168.1.1",
    "loopback": "127.0.0.1",
    "loopback v6": "::1",
    "link-local (cloud metadata)": "169.254.169.254",
    "link-local v6": "fe80::1",
    "unique-local v6": "fd12:3456::1",
    "multicast": "224.0.0.251",
    "multicast v6": "ff02::1",
    "reserved": "240.0.0.1",
    "unspecified": "0.0.0.0",
    "shared (CGNAT)": "100.64.0.1",
    "documentation": "192.0.2.10",
    "IPv4-mapped loopback": "::ffff:127.0.0.1",
    "broadcast": "255.255.255.255",
}


@pytest.mark.parametrize("address", REFUSED_ADDRESSES.values(), ids=REFUSED_ADDRESSES.keys())
def test_every_non_public_address_class_is_refused(address: str) -> None:
    with pytest.raises(InvalidRequest) as refused:
        check_destination("https://hooks.example.com/x", resolving_to(address))
    assert refused.value.field == "callback_url"
    assert refused.value.code == "CALLBACK_URL_REFUSED"


def test_one_private_answer_among_public_ones_is_enough_to_refuse() -> None:
    with pytest.raises(InvalidRequest):
        check_destination("https://hooks.example.com/", resolving_to("93.184.216.34", "10.0.0.1"))


def test_a_public_https_destination_is_pinned_to_the_checked_address() -> None:
    destination = check_destination("https://hooks.example.com:8443/in?x=1", resolving_to("93.184.216.34"))
    assert (destination.scheme, destination.host, destination.port) == ("https", "hooks.example.com", 8443)
    assert destination.target == "/in?x=1"
    assert destination.address == "93.184.216.34"


@pytest.mark.parametrize(
    "url",
    [
        "http://hooks.example.com/x",
        "ftp://hooks.example.com/x",
        "file:///etc/passwd",
        "https://user:pw@hooks.example.com/x",
        "https:///nohost",
        "https://hooks.example.com:99999/x",
    ],
)
def test_urls_of_the_wrong_shape_are_refused(url: str) -> None:
    with pytest.raises(InvalidRequest):
        check_destination(url, resolving_to("93.184.216.34"))


def test_a_host_that_does_not_resolve_is_refused() -> None:
    def failing(host: str, port: int) -> list[str]:
        raise OSError("no such host")

    with pytest.raises(InvalidRequest, match="does not resolve"):
        check_destination("https://nowhere.invalid/", failing)


def test_local_development_allows_plain_http_to_loopback_only() -> None:
    assert check_destination("http://localhost:9000/h", resolving_to("127.0.0.1"), allow_local=True).port == 9000
    with pytest.raises(InvalidRequest):
        check_destination("http://localhost:9000/h", resolving_to("127.0.0.1"), allow_local=False)
    with pytest.raises(InvalidRequest):
        check_destination("http://intranet:9000/h", resolving_to("10.0.0.2"), allow_local=True)
    with pytest.raises(InvalidRequest):
        check_destination("http://hooks.example.com/h", resolving_to("93.184.216.34"), allow_local=True)


@pytest.mark.parametrize(
    ("address", "rule"),
    [
        ("fec0::1", "site-local"),
        ("fec0:1234::5", "site-local"),
        ("3fff::1", "documentation"),
        ("3fff:fff:ffff::1", "documentation"),
        ("5f00::1", "segment routing"),
        ("100:0:0:1::1", "dummy"),
        ("2001:2::1", "IETF protocol assignment"),
        ("2001:db8::1", "documentation"),
        ("4000::1", "not a global unicast address"),
        ("fd00::1", "unique-local"),
        ("ff02::1", "multicast"),
        ("192.0.0.9", "IETF protocol assignment"),
        ("192.88.99.1", "6to4 relay"),
        ("100.64.0.1", "shared"),
        ("198.18.0.1", "benchmarking"),
        ("::ffff:192.168.1.5", "private address"),
        ("2002:c0a8:105::1", "private address"),
        ("64:ff9b::a00:1", "private address"),
    ],
)
def test_every_special_purpose_block_is_refused_and_the_rule_named(address: str, rule: str) -> None:
    with pytest.raises(InvalidRequest) as refused:
        check_destination("https://hooks.example.com/x", resolving_to(address))
    assert rule in refused.value.message
    assert str(ipaddress.ip_address(address)) in refused.value.message


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("http://192.168.1.5/hook", "private address (RFC 1918)"),
        ("http://10.1.2.3/", "private address"),
        ("http://[fe80::1]/", "link-local"),
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
    ],
)
def test_a_private_http_url_is_refused_for_its_address_not_its_scheme(url: str, says: str) -> None:
    host = url.split("//")[1].split("/", maxsplit=1)[0].strip("[]")
    with pytest.raises(InvalidRequest) as refused:
        check_destination(url, resolving_to(host))
    assert says in refused.value.message
    assert "https" not in refused.value.message


def test_a_public_http_url_is_refused_for_its_scheme() -> None:
    with pytest.raises(InvalidRequest) as refused:
        check_destination("http://hooks.example.com/", resolving_to("93.184.216.34"))
    assert "must use https" in refused.value.message


@pytest.mark.parametrize("address", ["93.184.216.34", "2606:4700::1111", "2a00:1450:4001::200e", "::ffff:8.8.8.8"])
def test_global_unicast_addresses_pass(address: str) -> None:
    destination = check_destination("https://hooks.example.com/", resolving_to(address))
    assert destination.address == str(ipaddress.ip_address(address))
