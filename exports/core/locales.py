"""The language a file's labels are in (docs/formats.md, "Headers in the reader's language"): a
locale tag such as ``en``, ``de``, ``zh-CN`` or ``ja``, and which of a table's labels it picks."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final, TypeVar

T = TypeVar("T")
# What an export type offers when it declares no locale of its own.
DEFAULT_LOCALE: Final = "en"
# BCP 47's language, script and region subtags (no variants, extensions or private use).
_TAG = re.compile(r"^(?P<language>[A-Za-z]{2,3})(?:-(?P<script>[A-Za-z]{4}))?(?:-(?P<region>[A-Za-z]{2}|\d{3}))?$")
# The same tags as the OpenAPI document states them (a pattern, not the check: canonical_locale
# refuses with a message that says what a tag is).
LOCALE_PATTERN: Final = r"^[A-Za-z]{2,3}(?:[-_][A-Za-z]{4})?(?:[-_](?:[A-Za-z]{2}|[0-9]{3}))?$"
ACCEPTED: Final = "a locale tag: a language, then optionally a script and a region, such as en, de, zh-CN or ja"


class UnknownLocale(ValueError):
    """A text that is no locale tag."""

    def __init__(self, tag: str) -> None:
        shown = tag if len(tag) <= 32 else tag[:32] + "…"
        super().__init__(f"{shown!r} is not a locale: expected {ACCEPTED}")


def canonical_locale(tag: str) -> str:
    """``tag`` in BCP 47's case: ``zh-cn`` is ``zh-CN``, ``ZH-hant-tw`` is ``zh-Hant-TW``;
    ``_`` separators (``de_DE``) are taken too."""
    found = _TAG.match(tag.replace("_", "-"))
    if found is None:
        raise UnknownLocale(tag)
    language, script, region = found.group("language", "script", "region")
    parts = [language.lower(), *([script.title()] if script else []), *([region.upper()] if region else [])]
    return "-".join(parts)


def pick(labels: Mapping[str, T], locale: str) -> T | None:
    """The label of ``labels`` for ``locale``: its own, else that of a shorter tag (``zh-Hant-TW``,
    then ``zh-Hant``, then ``zh``); None when the table has none of them."""
    parts = locale.split("-")
    while parts:
        found = labels.get("-".join(parts))
        if found is not None:
            return found
        parts.pop()
    return None
