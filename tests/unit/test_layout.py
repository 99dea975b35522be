"""A module's unit tests are found by its name (docs/how-to/README.md, "The fast loop"): the
folders of tests/unit mirror the packages of exports, and a test file in one is named after the
module it tests (``test_<module>.py``, or ``test_<module>_<topic>.py``), unless it tests what
several modules of its package do together (listed below)."""

from __future__ import annotations

from pathlib import Path
from typing import Final

REPO_ROOT = Path(__file__).resolve().parents[2]
UNIT = REPO_ROOT / "tests" / "unit"
# Tests of a package's modules together: what every writer does with the same values, a
# source's flavours across its modules, every format's user-caused failures.
ACROSS_MODULES: Final = frozenset(
    {
        "running/formats/test_user_caused_failures.py",
        "running/writers/test_fast_paths.py",
        "running/writers/test_files_as_the_data_is.py",
        "running/writers/test_float_columns.py",
        "running/writers/xlsx_engine/test_properties.py",
        "sources/mysql/test_flavours.py",
    }
)


def _area_tests() -> list[Path]:
    return sorted(path for path in UNIT.glob("*/**/test_*.py"))


def test_every_folder_of_unit_tests_mirrors_a_package_of_exports() -> None:
    folders = {path.parent.relative_to(UNIT) for path in _area_tests()}

    assert folders
    assert [str(folder) for folder in folders if not (REPO_ROOT / "exports" / folder / "__init__.py").exists()] == []


def test_a_unit_test_is_named_after_the_module_it_tests() -> None:
    misnamed = []
    for path in _area_tests():
        relative = path.relative_to(UNIT).as_posix()
        package = REPO_ROOT / "exports" / path.parent.relative_to(UNIT)
        modules = {module.stem for module in package.glob("*.py")} | {child.name for child in package.iterdir()}
        name = path.stem.removeprefix("test_")
        if relative not in ACROSS_MODULES and not any(name == m or name.startswith(f"{m}_") for m in modules):
            misnamed.append(relative)

    assert misnamed == []
