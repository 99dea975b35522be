"""A declared date or date-time parameter's schema states the years the service takes, so a
value the schema allows is never refused for its year."""

from __future__ import annotations

import re

import pytest

from exports.core.config.limits import Limits
from exports.declared.model import ParameterDecl, ParameterType
from exports.declared.parameters import parameter_schema, value_checker


@pytest.mark.parametrize(
    ("kind", "inside", "outside"),
    [
        (ParameterType.DATE, ["1900-01-01", "2999-12-31"], ["1899-12-31", "3000-01-01", "0240-09-22"]),
        (
            ParameterType.DATETIME,
            ["1900-01-01T00:00:00Z", "2999-12-31T12:00:00Z"],
            ["1899-12-31T23:00:00Z", "7342-01-09T15:07:26-15:40"],
        ),
    ],
)
def test_the_schema_pattern_and_the_check_take_the_same_years(
    kind: ParameterType, inside: list[str], outside: list[str]
) -> None:
    declared = ParameterDecl(type=kind)
    pattern = re.compile(parameter_schema(declared)["pattern"])
    check = value_checker(declared)
    for value in inside:
        assert pattern.search(value) and check(value) is not None
    for value in outside:
        assert not pattern.search(value)
        with pytest.raises(ValueError, match=str(Limits.EARLIEST_DATE)):
            check(value)
