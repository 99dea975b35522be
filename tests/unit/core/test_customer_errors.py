"""What a caller reads of a failed task: the message of its code, with the task as reference;
a declared type's own message for a code is checked when the declaration is read."""

import pytest
from pydantic import ValidationError

from exports.core.customer_errors import DEFAULT_MESSAGE, MESSAGES, customer_message
from exports.declared.model import TypeDecl


def test_every_code_s_message_names_the_reference_and_nothing_of_the_database() -> None:
    for code in [*MESSAGES, "A_CODE_OF_A_PLUGIN"]:
        text = customer_message(code, "exp_1")
        assert "(reference exp_1)" in text
        assert "SQLSTATE" not in text and "relation" not in text


def test_an_unknown_code_reads_as_the_default_and_a_type_s_own_message_wins() -> None:
    assert customer_message("NEW_CODE", "exp_1") == DEFAULT_MESSAGE.format(reference="exp_1")
    own = {"SOURCE_QUERY_FAILED": "Try later, quoting {reference} ({{sic}})."}
    assert customer_message("SOURCE_QUERY_FAILED", "exp_1", own) == "Try later, quoting exp_1 ({sic})."


@pytest.mark.parametrize(
    ("messages", "problem"),
    [
        ({"NO_SUCH_CODE": "x"}, "NO_SUCH_CODE is not an error code of a task"),
        ({"SOURCE_QUERY_FAILED": "see {task_id}"}, "may use {reference} only, not {task_id}"),
        ({"SOURCE_QUERY_FAILED": "a brace { alone"}, "is not a message template"),
    ],
)
def test_a_declared_message_for_an_unknown_code_or_placeholder_is_refused(
    messages: dict[str, str], problem: str
) -> None:
    with pytest.raises(ValidationError, match=problem):
        TypeDecl.model_validate({"description": "d", "source": "db", "messages": messages})
