"""CSV dialects read back by a reader we do not write with: LibreOffice Calc (Debian's
libreoffice-calc, installed when missing, as bench/compat.py does) opens each file with the
import settings a user of that language has (the file's code page, the German locale) and saves
it as a workbook, which openpyxl reads: GB18030 and Shift_JIS files give back their characters,
and a `;` / decimal-comma file gives numbers, not text."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from bench.compat import soffice
from exports.core.csv_dialect import CsvDialect, CsvEncoding
from exports.core.task import ExportFormat
from tests.unit.core.test_locales_and_csv_dialect import exported

# LibreOffice's text encodings (rtl_TextEncoding) for its CSV import's third token.
CHARSETS = {CsvEncoding.GB18030: 85, CsvEncoding.SHIFT_JIS: 60, CsvEncoding.WINDOWS_1252: 1, CsvEncoding.UTF_8: 76}
# Locale ids (LCID) for the sixth token: how numbers are read.
ENGLISH_US, GERMAN = 1033, 1031


@pytest.fixture(scope="module")
def calc() -> str:
    return soffice()


def opened(calc: str, body: bytes, dialect: CsvDialect, language: int, folder: Path) -> list[tuple[Any, ...]]:
    """The rows LibreOffice reads from the CSV ``body`` with the dialect's delimiter and encoding
    in ``language``, as saved in a workbook."""
    source = folder / "file.csv"
    source.write_bytes(body)
    separator = "9" if dialect.delimiter == "\t" else str(ord(dialect.delimiter))
    subprocess.run(
        [
            calc,
            f"-env:UserInstallation={(folder / 'profile').as_uri()}",
            "--headless",
            f"--infilter=CSV:{separator},34,{CHARSETS[dialect.encoding]},1,,{language}",
            "--convert-to",
            "xlsx",
            "--outdir",
            str(folder),
            str(source),
        ],
        check=True,
        capture_output=True,
        timeout=180,
    )
    sheet = openpyxl.load_workbook(folder / "file.xlsx").active
    assert sheet is not None
    return [tuple(row) for row in sheet.iter_rows(values_only=True)]


def texts(rows: Sequence[tuple[Any, ...]], column: int) -> list[Any]:
    return [row[column] for row in rows]


@pytest.mark.parametrize(
    ("encoding", "locale", "header"),
    [(CsvEncoding.GB18030, "zh-CN", ("编号", "日期", "金额", "文本")), (CsvEncoding.SHIFT_JIS, "ja", ("番号",))],
)
def test_gb18030_and_shift_jis_files_open_in_libreoffice_with_their_characters(
    calc: str, tmp_path: Path, encoding: CsvEncoding, locale: str, header: tuple[str, ...]
) -> None:
    dialect = CsvDialect(encoding=encoding)
    _, body = exported(ExportFormat.CSV, rows_total=10, csv_dialect=dialect, locale=locale)

    rows = opened(calc, body, dialect, ENGLISH_US, tmp_path)

    assert rows[0][: len(header)] == header
    assert rows[2][3] == "row 1 王芳 =x"
    assert len(rows) == 11


def test_a_german_semicolon_file_with_decimal_commas_reads_back_as_numbers_in_a_german_locale(
    calc: str, tmp_path: Path
) -> None:
    dialect = CsvDialect(delimiter=";", decimal_separator=",")
    _, body = exported(ExportFormat.CSV, rows_total=150, csv_dialect=dialect, locale="de")
    assert b";1,49;" in body

    rows = opened(calc, body, dialect, GERMAN, tmp_path)

    assert rows[0] == ("Nr.", "Tag", "Betrag", "Text")
    amounts = texts(rows[1:], 2)
    # Numbers, not text: LibreOffice in German read the decimal comma.
    assert all(isinstance(amount, int | float) for amount in amounts)
    assert [Decimal(str(amount)) for amount in amounts] == [Decimal(n) / 100 for n in range(150)]
