"""No import circle among the modules of gateway/ and protocol_adapters/: a static graph over every `import` in every module's AST (those in
functions and under `if TYPE_CHECKING:` too, since a reader must hold both ends in mind either way).

Shared pieces move down to a module both sides use; a registry of formats or commands is handed in, never
imported back (DESIGN.md: dependencies point one way)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "gateway"  # the fixtures' package
PACKAGES = (PACKAGE, "protocol_adapters")


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package (a package is its __init__)."""
    found = {}
    for path in sorted(path for package in PACKAGES if (root / package).is_dir()
                       for path in (root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _target(name: str, known: dict[str, Path]) -> str | None:
    """The module `name` loads: itself when it is one, else the nearest enclosing module (`from a.b import c`
    where c is a name in a.b)."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            # `from pkg import sub` loads pkg.sub when sub is a module, else a name of pkg
            names = [f"{base}.{alias.name}" for alias in node.names] or [base]
        for name in names:
            if name.partition(".")[0] in PACKAGES:
                target = _target(name, known)
                if target is not None and target != module:
                    out.add(target)
                    out.update(_packages_entered(target, module, known))
    return out


def _packages_entered(target: str, importer: str, known: dict[str, Path]) -> set[str]:
    """The packages Python runs (their __init__) before `target`: importing `a.b.c` runs `a.b` first. Those
    the importer sits in are already running, so they add nothing."""
    entered = set()
    package = target.rpartition(".")[0]
    while package and package not in PACKAGES:
        if package in known and not (importer == package or importer.startswith(package + ".")):
            entered.add(package)
        package = package.rpartition(".")[0]
    return entered


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    known = modules(root)
    return {module: imports_of(module, path, known) for module, path in known.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph.get(node, ())):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_checker_finds_a_circle_through_a_lazy_import(tmp_path: Path) -> None:
    package = tmp_path / PACKAGE
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "a.py").write_text("from gateway.sub import b\n")
    (package / "sub" / "b.py").write_text("def f():\n    from ..a import x\n")
    (package / "c.py").write_text("from gateway import a\n")
    assert cycles(import_graph(tmp_path)) == [["gateway.a", "gateway.sub.b"]]


def test_the_checker_finds_a_circle_through_a_package_init(tmp_path: Path) -> None:
    """`import gateway.x` failed in a fresh interpreter this way: loader/__init__ imported loader.snapshot,
    which imported x, which imported loader.decode, whose package loader was still half made."""
    package = tmp_path / PACKAGE
    (package / "loader").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "loader" / "__init__.py").write_text("from gateway.loader.snapshot import load\n")
    (package / "loader" / "snapshot.py").write_text("from gateway.x import settings\n")
    (package / "loader" / "decode.py").write_text("")
    (package / "x.py").write_text("from gateway.loader.decode import decode\n")
    assert cycles(import_graph(tmp_path)) == [["gateway.loader", "gateway.loader.snapshot", "gateway.x"]]


def test_no_import_circle_among_the_project_modules() -> None:
    assert cycles(import_graph()) == []
