"""The local gateway's console files: served without a token, nothing outside their folder."""

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from local_stack.gateway import CONSOLE_PATH, FAVICON_PATH, Gateway
from local_stack.local_users import LocalUser

CALLS: list[str] = []


def _api(event: dict[str, Any], context: Any) -> dict[str, Any]:
    CALLS.append(event["rawPath"])
    return {"statusCode": 200, "headers": {"content-type": "application/json"}, "body": "{}"}


@pytest.fixture
def console(tmp_path: Path) -> Iterator[str]:
    """A gateway serving a console folder of one page, beside a secret file outside it."""
    folder = tmp_path / "dist"
    folder.mkdir()
    (folder / "index.html").write_text("<title>console</title>", encoding="utf-8")
    (folder / "console.js").write_text("export {};", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("not for you", encoding="utf-8")
    served = Gateway(_api, {"t": LocalUser("alice", {})}, port=0, console_dir=folder)
    thread = threading.Thread(target=served.serve_forever, daemon=True)
    thread.start()
    CALLS.clear()
    yield served.url
    served.shutdown()
    thread.join(5)


def test_the_page_and_its_files_need_no_token(console: str) -> None:
    page = requests.get(f"{console}{CONSOLE_PATH}", timeout=5)
    assert page.status_code == 200 and "<title>console</title>" in page.text
    assert page.url.endswith(f"{CONSOLE_PATH}/"), "redirected to the folder, so relative links resolve"
    script = requests.get(f"{console}{CONSOLE_PATH}/console.js", timeout=5)
    assert script.status_code == 200 and script.headers["content-type"].startswith("text/javascript")
    assert CALLS == [], "the API function saw none of them"


def test_the_icon_every_browser_asks_for_is_no_content_without_a_token(console: str) -> None:
    answer = requests.get(f"{console}{FAVICON_PATH}", timeout=5)
    assert answer.status_code == 204 and answer.content == b""
    assert CALLS == [], "the API function never saw it"


@pytest.mark.parametrize("target", ["/../secret.txt", "/%2e%2e/secret.txt", "/..%2fsecret.txt", "/missing.js"])
def test_nothing_outside_the_folder_is_served(console: str, target: str) -> None:
    answer = requests.get(f"{console}{CONSOLE_PATH}{target}", timeout=5)
    assert "not for you" not in answer.text
    assert answer.status_code in (401, 404)


def test_the_api_still_needs_its_token(console: str) -> None:
    assert requests.get(f"{console}/v1/exports", timeout=5).status_code == 401
    assert requests.get(f"{console}/consoles", timeout=5).status_code == 401
