"""Every pointer into the docs names a file and a heading that exist: ``docs/<file>.md``,
``docs/<file>.md#<anchor>`` and ``docs/<file>.md, "<Heading>"`` anywhere in the code, the docs and
the README, and every Markdown link to a ``.md`` file (relative to the linking file) or to an
anchor of one. Anchors follow GitHub's rules (:func:`anchor`)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Where pointers may be written (beside README.md and the top-level files below).
SCANNED_DIRS = (
    "bench",
    "client",
    "clients",
    "docs",
    "examples",
    "exports",
    "functions",
    "infra",
    "local_stack",
    "scripts",
    "tests",
)
SCANNED_FILES = ("README.md", "Makefile", "pyproject.toml", "exports.toml", "app.py")
SUFFIXES = {".py", ".md", ".ts", ".tsx", ".js", ".toml", ".html", ".json", ".yml", ".yaml", ".txt", ".cfg"}
# Generated or installed trees: not ours to point from.
SKIPPED_DIRS = {"node_modules", "dist", "build", "cdk.out", "__pycache__", ".venv"}
# docs/<path>.md, then an optional #anchor, or `, "Heading"` right after it.
DOC_POINTER = re.compile(r"(?<![\w./-])docs/((?:[\w-]+/)*[\w.-]+\.md)(?:#([\w-]+)|,\s+\"([^\"\n]+)\")?")
# A Markdown link's target: a .md file (with an anchor or not), or an anchor of this file.
MARKDOWN_LINK = re.compile(r"\]\((?!https?:|mailto:)([^)\s#]*\.md)?(?:#([^)\s]+))?\)")
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation (backticks included) dropped except
    hyphens and underscores, each space a hyphen."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@cache
def headings(path: Path) -> tuple[frozenset[str], frozenset[str]]:
    """The headings of a Markdown file (outside code blocks) and their anchors, a repeated
    heading's numbered as GitHub numbers them (``-1``, ``-2``)."""
    texts: list[str] = []
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced and (match := HEADING.match(line)):
            texts.append(match.group(1))
    anchors: list[str] = []
    seen: dict[str, int] = {}
    for text in texts:
        base = anchor(text)
        anchors.append(f"{base}-{seen[base]}" if base in seen else base)
        seen[base] = seen.get(base, 0) + 1
    return frozenset(texts), frozenset(anchors)


def scanned() -> Iterator[Path]:
    """Every file pointers may be written in."""
    yield from (ROOT / name for name in SCANNED_FILES if (ROOT / name).is_file())
    for directory in SCANNED_DIRS:
        for path in sorted((ROOT / directory).rglob("*")):
            if path.suffix in SUFFIXES and path.is_file() and not SKIPPED_DIRS & set(path.parts):
                yield path


def broken(target: Path, anchor_name: str | None, heading: str | None) -> str | None:
    """Why a pointer to ``target`` (at ``anchor_name`` or ``heading``) leads nowhere, or None."""
    if not target.is_file():
        return "no such file"
    texts, anchors = headings(target)
    if anchor_name is not None and anchor_name.lower() not in anchors:
        return f"no heading with the anchor #{anchor_name}"
    if heading is not None and heading not in texts:
        return f'no heading "{heading}"'
    return None


def pointers(path: Path) -> Iterator[tuple[int, Path, str | None, str | None]]:
    """(line, target, anchor, heading) of every pointer in ``path``."""
    text = path.read_text(encoding="utf-8", errors="replace")
    for match in DOC_POINTER.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        yield line, ROOT / "docs" / match.group(1), match.group(2), match.group(3)
    if path.suffix == ".md":
        for match in MARKDOWN_LINK.finditer(text):
            file, anchor_name = match.groups()
            if file is None and anchor_name is None:
                continue
            line = text.count("\n", 0, match.start()) + 1
            yield line, (path.parent / file).resolve() if file else path, anchor_name, None


def test_every_pointer_into_the_docs_names_a_file_and_heading_that_exist():
    # A set: the README's links are both a path and a Markdown link.
    problems = {
        f"{path.relative_to(ROOT)}:{line}: {target.relative_to(ROOT)} {anchor_name or heading or ''}: {reason}"
        for path in scanned()
        for line, target, anchor_name, heading in pointers(path)
        if (reason := broken(target, anchor_name, heading))
    }

    assert sorted(problems) == []


def test_anchors_follow_githubs_rules():
    assert anchor("Protocol (`exports.v1`)") == "protocol-exportsv1"
    assert anchor("XLSX cannot continue (XLSX_TOO_LARGE)") == "xlsx-cannot-continue-xlsx_too_large"
    assert anchor("Schedules: `exportctl schedules …`") == "schedules-exportctl-schedules-"
