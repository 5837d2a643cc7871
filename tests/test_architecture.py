"""The structure a newcomer relies on: the library's layers, the build as one plugin, tests that stand alone.

Each test parses the files (``ast``, ``tomllib``, the YAML of ``mkdocs.yml``); none imports the code it
checks, so a broken import shows as that module's own failure, not here.
"""

from __future__ import annotations

import ast
import functools
import re
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "netcl_lite"
TESTS = ROOT / "tests"


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


LIBRARY = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _absolute(node: ast.ImportFrom, module: str, path: Path) -> str:
    """The absolute module an ``ImportFrom`` reads from (relative levels resolved)."""
    if not node.level:
        return node.module or ""
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    parts = package.split(".")
    base = parts[: len(parts) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


@functools.lru_cache(maxsize=None)
def _parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def imports(path: Path, module: str, top_level_only: bool = False) -> list[tuple[str, str | None, int]]:
    """``(module imported, name imported from it or None, line)`` for every import in ``path``,
    relative and absolute alike; ``top_level_only``: those that run when the module is imported
    (module body, and the bodies of ``if``/``try`` there), not the ones inside functions."""
    tree = _parsed(path)
    if top_level_only:
        nodes, stack = [], list(reversed(tree.body))
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.If, ast.Try)):
                inner = node.body + node.orelse + getattr(node, "finalbody", []) + \
                    [n for h in getattr(node, "handlers", []) for n in h.body]
                stack += reversed(inner)
            else:
                nodes.append(node)
    else:
        nodes = sorted((n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))),
                       key=lambda n: (n.lineno, n.col_offset))
    found = []
    for node in nodes:
        if isinstance(node, ast.Import):
            found += [(alias.name, None, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, module, path)
            found += [(base, alias.name, node.lineno) for alias in node.names]
    return found


def library_edges(top_level_only: bool) -> dict[str, set[str]]:
    """Which netcl_lite modules each netcl_lite module imports (``from .x import y`` counts ``.x.y``
    when that is a module, else ``.x``)."""
    edges = {}
    for module, path in LIBRARY.items():
        targets = set()
        for base, name, _ in imports(path, module, top_level_only):
            if name and f"{base}.{name}" in LIBRARY:
                targets.add(f"{base}.{name}")
            elif base in LIBRARY:
                targets.add(base)
        targets.discard(module)
        edges[module] = targets
    return edges


def test_the_import_parser_reads_relative_and_absolute_imports(tmp_path):
    pkg = tmp_path / "netcl_lite" / "ops"
    pkg.mkdir(parents=True)
    source = pkg / "thing.py"
    source.write_text("import netcl_lite.core.kernels\nfrom netcl_lite.text import bpe\nfrom ..reduce import sum_\n"
                      "from . import matmul\ndef f():\n    from .norm import rms\n", encoding="utf-8")
    found = imports(source, "netcl_lite.ops.thing")
    assert [(m, n) for m, n, _ in found] == [("netcl_lite.core.kernels", None), ("netcl_lite.text", "bpe"),
                                             ("netcl_lite.reduce", "sum_"), ("netcl_lite.ops", "matmul"),
                                             ("netcl_lite.ops.norm", "rms")]
    assert [m for m, _, _ in imports(source, "netcl_lite.ops.thing", top_level_only=True)][-1] == "netcl_lite.ops"


def test_no_two_library_modules_import_each_other():
    """Anywhere in the file, function bodies too, relative or absolute."""
    edges = library_edges(top_level_only=False)
    loops = sorted(f"{a} <-> {b}" for a in edges for b in edges[a] if a < b and a in edges[b])
    assert not loops, f"modules that import each other: {loops}"


def test_no_import_cycle_when_the_library_loads():
    """No cycle of any length among the imports that run at import time (a cycle there is an
    import-order bug waiting for a new import line)."""
    edges = library_edges(top_level_only=True)
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        path.append(module)
        for target in sorted(edges[module]):
            if state.get(target) == 1:
                return path[path.index(target):] + [target]
            if target not in state and (cycle := visit(target)):
                return cycle
        state[module] = 2
        path.pop()
        return None

    for module in sorted(edges):
        if module not in state and (cycle := visit(module)):
            pytest.fail("import cycle: " + " -> ".join(cycle))


def test_no_private_name_is_imported_across_modules():
    """``from .x import _y`` (or ``netcl_lite.x._y``) reaches into another module's internals; a
    collaborator gets a public name instead."""
    found = []
    for module, path in LIBRARY.items():
        for base, name, line in imports(path, module):
            if not base.startswith("netcl_lite"):
                continue
            private = [part for part in base.split(".") + ([name] if name else [])
                       if part.startswith("_") and not part.startswith("__")]
            if private:
                found.append(f"{path.relative_to(ROOT)}:{line}: {base}{'.' + name if name else ''}")
    assert not found, "private names imported across modules:\n" + "\n".join(found)


def _build_package() -> tuple[str, str]:
    """(plugin name, ``module:Class``) of the one ``mkdocs.plugins`` entry point in pyproject.toml."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    plugins = project.get("entry-points", {}).get("mkdocs.plugins", {})
    assert len(plugins) == 1, f"pyproject.toml registers {len(plugins)} MkDocs plugins; the build is one"
    return next(iter(plugins.items()))


def test_the_build_is_one_plugin_registered_by_entry_point_and_no_loose_hooks():
    name, target = _build_package()
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert not re.search(r"^hooks:", config, re.M), "mkdocs.yml still lists loose hooks"
    assert not (ROOT / "docs" / ".hooks").exists(), "docs/.hooks/ still exists"
    plugins = config[config.index("\nplugins:"):]
    assert re.search(rf"^  - {re.escape(name)}\b", plugins, re.M), f"mkdocs.yml does not use the plugin {name!r}"
    module, _, cls = target.partition(":")
    source = ROOT / (module.replace(".", "/") + ".py")
    assert source.is_file(), f"the entry point names {module}, which is not a file of this repository"
    tree = ast.parse(source.read_text(encoding="utf-8"))
    assert any(isinstance(n, ast.ClassDef) and n.name == cls for n in tree.body), f"{module} defines no {cls}"


def test_the_library_imports_nothing_of_the_build_or_of_mkdocs():
    build = _build_package()[1].split(".")[0]
    forbidden = (build, "mkdocs", "markdown", "pymdownx", "mkdocstrings", "griffe", "pytest")
    found = [f"{path.relative_to(ROOT)}:{line}: {base}"
             for module, path in LIBRARY.items() for base, _, line in imports(path, module)
             if base.split(".")[0] in forbidden]
    assert not found, "netcl_lite reaches into docs tooling:\n" + "\n".join(found)


def test_every_op_kernel_is_launched_from_ops_and_adamw_by_its_own_module():
    """``optim`` asks ``ops.adamw`` for the update, as every layer above ``ops`` asks an op."""
    launches = {path.relative_to(ROOT).as_posix(): set(re.findall(r"""launch\(\s*["'](\w+)\.cl["']""",
                                                                  path.read_text(encoding="utf-8")))
                for path in LIBRARY.values()}
    outside = {f: k for f, k in launches.items() if k and not f.startswith(("netcl_lite/ops/", "netcl_lite/core/"))}
    assert not outside, f"kernels launched outside ops/: {outside}"
    assert [f for f, k in launches.items() if "adamw" in k] == ["netcl_lite/ops/adamw.py"]


def test_the_tokenizer_module_stays_readable():
    lines = len((PACKAGE / "text" / "bpe.py").read_text(encoding="utf-8").splitlines())
    assert lines <= 500, f"netcl_lite/text/bpe.py has {lines} lines; device dispatch belongs beside device_merge.py"


def test_no_test_module_imports_another():
    """Shared fixtures live in conftest.py, shared helpers in modules not named test_*."""
    found = []
    for path in sorted(TESTS.glob("*.py")):
        for base, name, line in imports(path, path.stem):
            names = [base.split(".")[-1]] + ([name] if name else [])
            if any(n.startswith("test_") for n in names):
                found.append(f"tests/{path.name}:{line}: {base} {name or ''}")
    assert not found, "\n".join(found)


def test_the_readme_shows_the_quick_loop_beside_the_full_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert re.search(r'pytest\b[^\n]*-m "not slow"', readme), "README.md does not show the quick loop"
    full = re.search(r"<!-- test-command -->\s*```bash\n(.*?)```", readme, re.S)
    assert full and "not slow" not in full.group(1), "the full test command must run everything"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))


def test_every_python_file_compiles_without_a_warning():
    """An invalid escape such as ``"\\w"`` in a docstring is a DeprecationWarning now and a
    SyntaxWarning in later Pythons: every file of the project compiles with warnings as errors."""
    import warnings

    found = []
    for folder in ("netcl_lite", "site_build", "tests", "snippets", "benchmarks"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                try:
                    compile(path.read_text(encoding="utf-8"), str(path), "exec")
                except (SyntaxError, SyntaxWarning, DeprecationWarning) as exc:
                    found.append(f"{path.relative_to(ROOT)}: {exc}")
    assert not found, "\n".join(found)
