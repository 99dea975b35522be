"""Formula-injection rule shared by the writers."""

from datetime import date
from decimal import Decimal

import pytest

from exports.running.writers.cells import neutralise


@pytest.mark.parametrize(
    "text",
    ["=1+2", '=HYPERLINK("http://x")', "+86 138 0000 0000", "-10% coupon applied", "@home", "\t=1", "\rcmd", "="],
)
def test_text_a_spreadsheet_would_run_gets_a_leading_apostrophe(text):
    assert neutralise(text) == "'" + text


@pytest.mark.parametrize("text", ["hello", "", "a=b", "1-2", "王芳", "'=1", " =1", "\n=1"])
def test_other_text_is_left_alone(text):
    assert neutralise(text) == text


@pytest.mark.parametrize("value", [42, -5, -2.5, Decimal("-1.50"), date(2025, 3, 1), None, True])
def test_non_text_values_pass_through_unchanged(value):
    assert neutralise(value) is value
