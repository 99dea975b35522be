"""The SFTP adapter against a real asyncssh SFTP server on 127.0.0.1 (local_stack.sftp_server):
the host key it fetches, a probe that writes and removes its file, and each failed step in the
customer's words (TCP, host key, auth, path, permission; DNS and address by the SSRF guard)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from exports.finishing.destinations.keys import new_key_pair
from exports.finishing.destinations.kinds.sftp import SftpAuth, SftpDestinations
from exports.finishing.destinations.model import Destination
from exports.finishing.destinations.problems import DestinationProblem, ProblemStep
from exports.finishing.destinations.secrets import DestinationSecrets
from local_stack.sftp_server import LocalSftpServer, SftpUser
from tests.builders_destinations import destination, sftp_target

KEY = new_key_pair("dst_test")


def _loopback(host: str, port: int) -> list[str]:
    if host in ("localhost", "127.0.0.1"):
        return ["127.0.0.1"]
    raise socket.gaierror(host)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LocalSftpServer]:
    (tmp_path / "upload").mkdir()
    served = LocalSftpServer(tmp_path)
    served.users["acme"] = SftpUser(authorized_keys=[KEY.public_key], password="open sesame")
    served.start()
    yield served
    served.shutdown()


CONNECTOR = SftpDestinations(_loopback, allow_local=True)


def _destination(server: LocalSftpServer, **changes: object) -> Destination:
    values: dict[str, object] = {
        "host": "localhost",
        "port": server.port,
        "username": "acme",
        "path": "/upload",
        "host_key_fingerprint": server.fingerprint,
        "public_key": KEY.public_key,
        **changes,
    }
    return destination(target=sftp_target(**values))


def _probe(adapter: SftpDestinations, destination: Destination, secrets: DestinationSecrets) -> None:
    adapter.probe(destination.destination_id, destination.target, secrets)


def _probe_problem(server: LocalSftpServer, secrets: DestinationSecrets, **changes: object) -> DestinationProblem:
    with pytest.raises(DestinationProblem) as failed:
        _probe(CONNECTOR, _destination(server, **changes), secrets)
    return failed.value


WITH_KEY = DestinationSecrets(private_key=SecretStr(KEY.private_key))


def test_the_fetched_host_key_is_the_servers(server: LocalSftpServer) -> None:
    assert CONNECTOR.fetch("localhost", server.port) == server.fingerprint


def test_a_probe_writes_and_removes_its_file_with_the_key_or_the_password(server: LocalSftpServer) -> None:
    _probe(CONNECTOR, _destination(server), WITH_KEY)
    with_password = _destination(server, auth=SftpAuth.PASSWORD, public_key=None)
    _probe(CONNECTOR, with_password, DestinationSecrets(password=SecretStr("open sesame")))

    assert list((server.root / "upload").iterdir()) == []


def test_a_server_that_is_down_is_a_tcp_problem_that_may_pass(server: LocalSftpServer) -> None:
    server.stop()
    problem = _probe_problem(server, WITH_KEY)
    assert problem.step is ProblemStep.TCP and problem.transient
    assert f"port {server.port}" in problem.message
    with pytest.raises(DestinationProblem, match="nothing accepted a connection"):
        CONNECTOR.fetch("localhost", server.port)


def test_another_host_key_is_refused_before_any_login(server: LocalSftpServer) -> None:
    problem = _probe_problem(server, WITH_KEY, host_key_fingerprint="SHA256:" + "A" * 43)
    assert problem.step is ProblemStep.HOST_KEY and not problem.transient


def test_a_refused_key_or_password_is_an_auth_problem_naming_the_user(server: LocalSftpServer) -> None:
    other = DestinationSecrets(private_key=SecretStr(new_key_pair("other").private_key))
    assert _probe_problem(server, other).step is ProblemStep.AUTH
    wrong = DestinationSecrets(password=SecretStr("wrong"))
    problem = _probe_problem(server, wrong, auth=SftpAuth.PASSWORD, public_key=None)
    assert problem.step is ProblemStep.AUTH and "as acme" in problem.message


def test_a_missing_directory_is_a_path_problem(server: LocalSftpServer) -> None:
    problem = _probe_problem(server, WITH_KEY, path="/nowhere")
    assert problem.step is ProblemStep.PATH and "/nowhere" in problem.message


def test_an_account_that_may_not_write_is_a_permission_problem(server: LocalSftpServer) -> None:
    server.users["acme"].read_only = True
    problem = _probe_problem(server, WITH_KEY)
    assert problem.step is ProblemStep.PERMISSION and "/upload" in problem.message


def test_the_ssrf_guard_refuses_loopback_on_aws_and_an_unknown_host_is_a_dns_problem(server: LocalSftpServer) -> None:
    on_aws = SftpDestinations(_loopback, allow_local=False)
    with pytest.raises(DestinationProblem) as refused:
        _probe(on_aws, _destination(server), WITH_KEY)
    assert refused.value.step is ProblemStep.ADDRESS and "127.0.0.1" in refused.value.message
    assert _probe_problem(server, WITH_KEY, host="nowhere.example").step is ProblemStep.DNS
