"""The make run banner's CLI line works when copied, whatever the port."""

from local_stack.__main__ import cli_environment


def test_the_default_port_needs_only_the_token() -> None:
    assert cli_environment("http://127.0.0.1:8000", "dev-x") == "export EXPORTS_TOKEN=dev-x"


def test_another_port_also_sets_the_api_url() -> None:
    line = cli_environment("http://127.0.0.1:8123", "dev-x")
    assert line == "export EXPORTS_TOKEN=dev-x EXPORTS_API_URL=http://127.0.0.1:8123"
