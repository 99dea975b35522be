"""The modules of ``exports`` import each other along public seams and without a cycle.

The graph is read from the source (``ast``), so it holds every import: at the top, inside a
function (imported on first use) and under ``TYPE_CHECKING``. A cycle through a function's import
still ties the two modules together: neither can be read, moved or split without the other.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import exports

PACKAGE_DIR = Path(exports.__file__).parent


def _module_names() -> dict[str, Path]:
    names = {}
    for path in PACKAGE_DIR.rglob("*.py"):
        parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


MODULES = _module_names()


def _imported(module: str, path: Path) -> list[tuple[str, str | None]]:
    """(the ``exports`` module imported, the name taken from it or None) of every import in ``module``."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[str, str | None]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.extend((alias.name, None) for alias in node.names if alias.name in MODULES)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            for alias in node.names:
                if f"{base}.{alias.name}" in MODULES:  # a module of a package
                    found.append((f"{base}.{alias.name}", None))
                elif base in MODULES:
                    found.append((base, alias.name))
    return [(target, name) for target, name in found if target != module]


def test_every_module_of_the_package_imports() -> None:
    for info in pkgutil.walk_packages(exports.__path__, "exports."):
        importlib.import_module(info.name)


def test_no_module_imports_another_in_a_cycle() -> None:
    graph = {module: {target for target, _ in _imported(module, path)} for module, path in MODULES.items()}

    try:
        TopologicalSorter(graph).prepare()
    except CycleError as error:
        raise AssertionError(f"import cycle: {' -> '.join(error.args[1])}") from None


def test_no_module_imports_a_private_name_of_another() -> None:
    private = [
        f"{module} imports {target}.{name}"
        for module, path in MODULES.items()
        for target, name in _imported(module, path)
        if name is not None and name.startswith("_")
    ]

    assert private == []
