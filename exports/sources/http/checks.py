"""What the loader checks of an HTTP source (where it is, which hosts) and of an HTTP type
(its columns, its templates over declared values, its pagination)."""

from __future__ import annotations

import ipaddress
from typing import Final
from urllib.parse import urlsplit

from exports.declared.model import ParameterType, TypeDecl
from exports.declared.templates import placeholders
from exports.declared.type_facts import caller_bindings, is_required_or_defaulted
from exports.domain.caller import BindingKind
from exports.sources.http.grants import check_sigv4
from exports.sources.http.model import HttpReadDecl, HttpSource, PaginationDecl, PaginationStyle, SigV4Auth
from exports.sources.kind import Fail

# Where the instance metadata service answers (EC2's IPv4 link-local and IPv6 addresses): the
# worker's own credentials live there, never a data source, so no declaration may name it.
_METADATA: Final = (ipaddress.ip_network("169.254.0.0/16"), ipaddress.ip_network("fd00:ec2::254/128"))

# The keys of a pagination table each style needs, and those it may not have.
_STYLE_KEYS = {
    PaginationStyle.CURSOR: ("cursor_field", "cursor_param"),
    PaginationStyle.NEXT_LINK: ("next_field",),
    PaginationStyle.PAGE: ("page_param",),
}


def check_source(fail: Fail, source: HttpSource) -> None:
    """One of ``base_url`` and ``base_url_env``; a base URL from the environment needs
    ``hosts`` (the file, not the environment, says which hosts may be called); no host is the
    instance metadata service; a SigV4 source names what its grant is on."""
    if (source.base_url is None) == (source.base_url_env is None):
        raise fail("", "declare exactly one of base_url and base_url_env")
    if source.base_url_env is not None and not source.hosts:
        raise fail("hosts", "is needed with base_url_env: the hosts the URL in the variable may name")
    named = [("base_url", urlsplit(source.base_url).hostname)] if source.base_url is not None else []
    named += [(f"hosts.{position}", urlsplit(f"//{host}").hostname) for position, host in enumerate(source.hosts)]
    for key, host in named:
        if _is_metadata(host or ""):
            raise fail(key, f"{host} is the instance metadata service's address, never a data source")
    if isinstance(source.auth, SigV4Auth):
        check_sigv4(fail, source, source.auth)


def _is_metadata(host: str) -> bool:
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False  # a name: the operator's own
    return any(address in network for network in _METADATA)


def check_read(fail: Fail, declared: TypeDecl, read: HttpReadDecl) -> None:
    """Declared columns, templates over values that always have one (in the path), a
    pagination table with the keys of its style."""
    if not declared.columns:
        raise fail("columns", "an HTTP type declares its columns (field to column)")
    for column in declared.columns:
        if column.array_of is not None:
            raise fail(f"columns.{column.name}.array_of", 'is for PostgreSQL arrays; a JSON array is kind = "json"')
    for key, template in templates(read).items():
        for name in placeholders(template):
            _check_placeholder(fail, declared, key, name, in_path=key == "http.path")
    if read.pagination is not None:
        _check_pagination(fail, read, read.pagination)


def _check_placeholder(fail: Fail, declared: TypeDecl, key: str, name: str, in_path: bool) -> None:
    bound = caller_bindings(declared).get(name)
    if bound is BindingKind.STRING:
        return  # a caller value always has one
    if bound is not None:
        raise fail(key, f"{{{name}}} is a {bound.value} caller value: only string caller values fill a request")
    parameter = declared.parameters.get(name)
    if parameter is None:
        raise fail(key, f"{{{name}}} is not a declared parameter or string caller value")
    if in_path and not is_required_or_defaulted(parameter):
        raise fail(key, f"{{{name}}} is optional: the path needs a value")
    if in_path and parameter.type is ParameterType.LIST:
        raise fail(key, f"{{{name}}} is a list: the path takes one value")


def _check_pagination(fail: Fail, read: HttpReadDecl, pagination: PaginationDecl) -> None:
    needed = _STYLE_KEYS[pagination.style]
    for key in needed:
        if getattr(pagination, key) is None:
            raise fail(f"http.pagination.{key}", f"is needed with style = {pagination.style.value!r}")
    for style, keys in _STYLE_KEYS.items():
        for key in keys:
            if key not in needed and getattr(pagination, key) is not None:
                raise fail(f"http.pagination.{key}", f"is for style = {style.value!r}")
    param = pagination.cursor_param or pagination.page_param
    if param is not None and param in read.query:
        raise fail("http.query", f"{param!r} is the pagination's parameter: the pages set it")


def templates(read: HttpReadDecl) -> dict[str, str]:
    """The templates of an HTTP type's request, by their key in the file."""
    return {"http.path": read.path, **{f"http.query.{name}": value for name, value in read.query.items()}}
