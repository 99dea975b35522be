"""download(): streams to disk, checks the sha256 the service reported, never leaves a partial file."""

import hashlib
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from exports_client import ConflictError, ExportsClient, IntegrityError, NetworkError, UnexpectedResponseError
from tests.client.fake_api import BASE_URL, TOKEN, FakeApi, error_response, json_response, task_json

CONTENT = b"order_id,amount\n" + b"ORD-0000001,19.99\n" * 20_000
PRESIGNED = "http://files.test/exports-results/exp_1/orders.csv?Signature=abc"


def completed(sha256: str = hashlib.sha256(CONTENT).hexdigest(), file_name: str = "orders.csv") -> httpx.Response:
    return json_response(
        200,
        task_json(
            status="COMPLETED", progress=100, sha256=sha256, file_name=file_name, size_bytes=len(CONTENT), rows=20_000
        ),
    )


def api_serving(file: httpx.Response, task: httpx.Response | None = None) -> FakeApi:
    return (
        FakeApi()
        .on("GET", "/v1/exports/exp_1", task or completed())
        .on("GET", "/v1/exports/exp_1/download", httpx.Response(302, headers={"Location": PRESIGNED}))
        .on("GET", "/exports-results/exp_1/orders.csv", file)
    )


def client_for(api: FakeApi) -> ExportsClient:
    return ExportsClient(BASE_URL, TOKEN, transport=api.transport)


def test_the_file_lands_under_the_services_name_and_the_token_stays_with_the_api(tmp_path: Path) -> None:
    api = api_serving(httpx.Response(200, content=CONTENT))

    path = client_for(api).download("exp_1", tmp_path)

    assert path == tmp_path / "orders.csv"
    assert path.read_bytes() == CONTENT
    assert list(tmp_path.iterdir()) == [path]
    file_request = api.requests[-1]
    assert file_request.url == httpx.URL(PRESIGNED)
    assert "Authorization" not in file_request.headers
    assert all(r.headers["Authorization"] == f"Bearer {TOKEN}" for r in api.requests[:-1])


def test_a_file_path_is_used_as_given(tmp_path: Path) -> None:
    api = api_serving(httpx.Response(200, content=CONTENT))

    path = client_for(api).download("exp_1", tmp_path / "march.csv")

    assert path == tmp_path / "march.csv"
    assert path.read_bytes() == CONTENT


def test_a_path_ending_in_a_slash_is_a_directory_created_if_needed(tmp_path: Path) -> None:
    api = api_serving(httpx.Response(200, content=CONTENT))

    path = client_for(api).download("exp_1", f"{tmp_path}/new/folder/")

    assert path == tmp_path / "new" / "folder" / "orders.csv"
    assert path.read_bytes() == CONTENT


def test_a_sha256_mismatch_keeps_nothing_and_leaves_an_existing_file_alone(tmp_path: Path) -> None:
    # Given a previous download at the target, and a file store that sends other bytes
    target = tmp_path / "orders.csv"
    target.write_bytes(b"the previous file")
    api = api_serving(httpx.Response(200, content=CONTENT[:-1] + b"X"))

    # When the client downloads
    with pytest.raises(IntegrityError) as raised:
        client_for(api).download("exp_1", tmp_path)

    # Then it refuses the bytes, deletes them and keeps the previous file
    assert raised.value.expected == hashlib.sha256(CONTENT).hexdigest()
    assert raised.value.actual == hashlib.sha256(CONTENT[:-1] + b"X").hexdigest()
    assert list(tmp_path.iterdir()) == [target]
    assert target.read_bytes() == b"the previous file"


class BreakingStream(httpx.SyncByteStream):
    """Sends some bytes, then the connection drops."""

    def __iter__(self) -> Iterator[bytes]:
        yield CONTENT[:50_000]
        raise httpx.ReadError("connection reset by peer")


def test_a_broken_transfer_deletes_the_partial_file(tmp_path: Path) -> None:
    api = api_serving(httpx.Response(200, stream=BreakingStream()))

    with pytest.raises(NetworkError, match="connection reset"):
        client_for(api).download("exp_1", tmp_path)

    assert list(tmp_path.iterdir()) == []


def test_a_refusing_file_store_keeps_nothing(tmp_path: Path) -> None:
    api = api_serving(httpx.Response(403, text="<Error><Code>AccessDenied</Code></Error>"))

    with pytest.raises(UnexpectedResponseError, match="403"):
        client_for(api).download("exp_1", tmp_path)

    assert list(tmp_path.iterdir()) == []


def test_a_task_that_is_not_completed_cannot_be_downloaded(tmp_path: Path) -> None:
    api = (
        FakeApi()
        .on("GET", "/v1/exports/exp_1", json_response(200, task_json(status="RUNNING")))
        .on("GET", "/v1/exports/exp_1/download", error_response(409, "TASK_NOT_READY", "export task exp_1 is RUNNING"))
    )

    with pytest.raises(ConflictError) as raised:
        client_for(api).download("exp_1", tmp_path)

    assert raised.value.code == "TASK_NOT_READY"
    assert list(tmp_path.iterdir()) == []


def test_a_file_name_cannot_send_the_file_outside_the_directory(tmp_path: Path) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    api = api_serving(httpx.Response(200, content=CONTENT), completed(file_name="../../escaped.csv"))

    path = client_for(api).download("exp_1", folder)

    assert path == folder / "escaped.csv"
    assert path.read_bytes() == CONTENT
