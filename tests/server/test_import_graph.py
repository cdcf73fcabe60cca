"""The order of imports, as ``docs/architecture.md`` writes it down, held on every import.

Every import counts: at module level, inside functions, and under ``if TYPE_CHECKING:`` (a type
named from above is still a dependency on above). The checker is plain functions over plain
data (:func:`layer_table`, :func:`imports_of`, :func:`violations`, :func:`find_cycle`), so the
tests at the top feed it synthetic tables and imports and see it refuse an upward one.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ARCHITECTURE = ROOT / "docs" / "architecture.md"
#: Third-party packages that only the http layer and above may use.
HTTP_PACKAGES = ("fastapi", "starlette")
#: Layers that may not import ``HTTP_PACKAGES``.
NO_HTTP_LAYERS = {"rules", "services", "runtime"}


@dataclass(frozen=True)
class Row:
    """One row of the modules table: a package's modules in one layer."""

    layer: str
    package: str
    patterns: tuple[str, ...]


@dataclass(frozen=True)
class Import:
    """One import statement's target, as a dotted name, and where it is."""

    target: str
    line: int
    in_function: bool


@dataclass(frozen=True)
class Table:
    """The layers (each with the layers it may import) and the rows, in the document's order."""

    layers: dict[str, frozenset[str]]
    rows: tuple[Row, ...]

    def row_of(self, module: str) -> int | None:
        """The index of the one row whose patterns name ``module`` (``server.`` left off)."""
        short = module.removeprefix("server.") if module != "server" else "server"
        found = [i for i, row in enumerate(self.rows) if any(fnmatchcase(short, p) for p in row.patterns)]
        return found[0] if len(found) == 1 else None

    def rows_naming(self, module: str) -> list[Row]:
        short = module.removeprefix("server.") if module != "server" else "server"
        return [row for row in self.rows if any(fnmatchcase(short, p) for p in row.patterns)]


# --- reading the document ------------------------------------------------------------------


def _table_after(text: str, heading: str) -> list[list[str]]:
    """The cells of the first markdown table after ``heading`` (header and rule left off)."""
    lines = text.split("\n")
    start = lines.index(heading)
    rows: list[list[str]] = []
    for line in lines[start + 1 :]:
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
        elif rows:
            break
    return rows[2:]


def layer_table(text: str) -> Table:
    """The layers and module rows of an architecture document (``## Layers``, ``## Modules by layer``)."""
    layers = {
        cells[0]: frozenset(
            name.strip()
            for name in cells[1].replace("every layer but cli", "base, rules, services, runtime, http, interface, app").split(",")
        )
        for cells in _table_after(text, "## Layers")
    }
    rows = tuple(
        Row(cells[0], cells[1], tuple(re.findall(r"`([^`]+)`", cells[2]))) for cells in _table_after(text, "## Modules by layer")
    )
    return Table(layers, rows)


# --- reading the code ----------------------------------------------------------------------


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(source: str, module: str, is_package: bool = False) -> list[Import]:
    """Every import in ``source`` (the module ``module``), wherever it stands, relative ones
    resolved; ``from a import b`` yields ``a.b`` (a module or a name in ``a``)."""
    tree = ast.parse(source)
    package = module if is_package else module.rpartition(".")[0]
    found: list[Import] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inside = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            if isinstance(child, ast.Import):
                found.extend(Import(alias.name, child.lineno, inside) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    parent = package.split(".")[: len(package.split(".")) - (child.level - 1)]
                    base = ".".join(parent + ([base] if base else []))
                found.extend(Import(f"{base}.{alias.name}", child.lineno, inside) for alias in child.names)
            visit(child, inside)

    visit(tree, False)
    return found


def resolve(target: str, modules: Iterable[str]) -> str | None:
    """The longest module of ``modules`` that ``target`` names or lies in."""
    known = set(modules)
    name = target
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def server_modules(root: Path = ROOT) -> dict[str, Path]:
    """Every module of ``server/`` (the frozen migration scripts left off)."""
    return {
        module_name(p, root): p
        for p in sorted((root / "server").rglob("*.py"))
        if "migrations/versions" not in p.as_posix()
    }


def server_imports(root: Path = ROOT) -> dict[str, list[Import]]:
    """Module -> every import it makes (of anything)."""
    return {
        name: imports_of(path.read_text(), name, path.name == "__init__.py")
        for name, path in server_modules(root).items()
    }


# --- the rules -----------------------------------------------------------------------------


def violations(table: Table, imports: Mapping[str, list[Import]]) -> list[str]:
    """Every way ``imports`` break ``table``, one sentence each (empty: none)."""
    problems: list[str] = []
    modules = set(imports)
    for module in sorted(modules):
        named = table.rows_naming(module)
        if len(named) > 1 or (not named and not _bare_package(module, imports)):
            problems.append(f"{module} is in {len(named)} rows of the table (it must be in one)")
    for module, found in sorted(imports.items()):
        source_row = table.row_of(module)
        for item in found:
            top = item.target.split(".")[0]
            if top in HTTP_PACKAGES and source_row is not None and table.rows[source_row].layer in NO_HTTP_LAYERS:
                problems.append(
                    f"{module}:{item.line} imports {item.target}, but a {table.rows[source_row].layer} module takes no HTTP"
                )
            target = resolve(item.target, modules)
            if target is None or target == module or source_row is None:
                continue
            target_row = table.row_of(target)
            if target_row is None:
                continue
            problem = _refused(table, source_row, target_row)
            if problem:
                where = " (inside a function)" if item.in_function else ""
                problems.append(f"{module}:{item.line} imports {target}{where}: {problem}")
    return list(dict.fromkeys(problems))  # ``from a import b, c``: one sentence, not two


def _bare_package(module: str, imports: Mapping[str, list[Import]]) -> bool:
    """A package ``__init__`` that imports nothing of the server needs no row."""
    if not any(other.startswith(module + ".") for other in imports):
        return False
    return not any(item.target.split(".")[0] == "server" for item in imports[module])


def _refused(table: Table, source: int, target: int) -> str | None:
    """Why the module in row ``source`` may not import the one in row ``target`` (None: it may)."""
    have, want = table.rows[source], table.rows[target]
    if want.layer not in table.layers.get(have.layer, frozenset()):
        return f"{have.layer} may not import {want.layer}"
    if want.layer == have.layer and target > source:
        return f"{want.package} comes after {have.package} among the {have.layer}"
    return None


def module_graph(imports: Mapping[str, list[Import]]) -> dict[str, set[str]]:
    """Module -> the server modules it imports (any import)."""
    modules = set(imports)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, found in imports.items():
        for item in found:
            target = resolve(item.target, modules)
            if target is not None and target != name and not _is_parent(target, name):
                graph[name].add(target)
    return graph


def _is_parent(package: str, module: str) -> bool:
    # importing a submodule runs its package's __init__ first: not an edge a cycle can use
    return module.startswith(package + ".")


def find_cycle(graph: Mapping[str, set[str]]) -> list[str] | None:
    """One cycle as a path that ends where it starts, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            return cycle
    return None


# --- the checker refuses what it should (synthetic input) ------------------------------------

_SYNTHETIC = """
## Layers

| Layer | May import | What |
|---|---|---|
| base | base | |
| services | base, services | |
| interface | base, services, interface | |

## Modules by layer

| Layer | Package | Modules | What |
|---|---|---|---|
| base | (base) | `models` | |
| services | courses | `courses.service` | |
| services | submissions | `submissions.service` | |
| interface | courses | `courses.router` | |
"""


def _synthetic(imports: dict[str, list[str]]) -> dict[str, list[Import]]:
    return {module: [Import(t, 1, False) for t in targets] for module, targets in imports.items()}


def test_the_checker_accepts_imports_that_go_down() -> None:
    table = layer_table(_SYNTHETIC)
    assert [r.package for r in table.rows] == ["(base)", "courses", "submissions", "courses"]
    imports = _synthetic({
        "server.models": [],
        "server.courses.service": ["server.models.Course"],
        "server.submissions.service": ["server.courses.service.find", "server.models"],
        "server.courses.router": ["server.submissions.service", "server.courses.service", "fastapi"],
    })
    assert violations(table, imports) == []


def test_the_checker_refuses_an_upward_import() -> None:
    table = layer_table(_SYNTHETIC)
    imports = _synthetic({
        "server.models": [],
        "server.courses.service": ["server.courses.router.helper"],  # services -> interface
        "server.submissions.service": [],
        "server.courses.router": [],
    })
    assert violations(table, imports) == [
        "server.courses.service:1 imports server.courses.router: services may not import interface"
    ]
    # a type named from above, for the type checker only, is still an import from above
    typed = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from server.courses.router import Page\n"
    imports["server.courses.service"] = imports_of(typed, "server.courses.service")
    assert violations(table, imports) == [
        "server.courses.service:3 imports server.courses.router: services may not import interface"
    ]


def test_the_checker_refuses_a_later_package_of_the_same_layer_even_inside_a_function(tmp_path: Path) -> None:
    """A real module tree: the import hidden in a function is found, and named as such."""
    for name, text in {
        "models/__init__.py": "",
        "courses/__init__.py": "",
        "courses/service.py": "def f():\n    from server.submissions.service import g\n    return g\n",
        "submissions/__init__.py": "",
        "submissions/service.py": "from server.courses.service import f\n",
        "courses/router.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from server.models import X\n",
    }.items():
        (tmp_path / "server" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "server" / name).write_text(text)
    (tmp_path / "server" / "__init__.py").write_text("")
    imports = server_imports(tmp_path)
    assert imports["server.courses.service"] == [Import("server.submissions.service.g", 2, True)]
    found = violations(layer_table(_SYNTHETIC), imports)
    assert found == [
        "server.courses.service:2 imports server.submissions.service (inside a function): "
        "submissions comes after courses among the services"
    ]
    assert find_cycle(module_graph(imports)) == [
        "server.courses.service", "server.submissions.service", "server.courses.service"
    ]


def test_the_checker_refuses_http_below_http_and_a_module_without_a_row() -> None:
    table = layer_table(_SYNTHETIC)
    imports = _synthetic({
        "server.models": [],
        "server.courses.service": ["fastapi.Depends"],
        "server.submissions.service": [],
        "server.courses.router": [],
        "server.courses.stray": [],
    })
    assert violations(table, imports) == [
        "server.courses.stray is in 0 rows of the table (it must be in one)",
        "server.courses.service:1 imports fastapi.Depends, but a services module takes no HTTP",
    ]


def test_the_finder_sees_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


# --- the server as it is --------------------------------------------------------------------


def test_every_server_import_follows_the_documented_order() -> None:
    table = layer_table(ARCHITECTURE.read_text())
    assert {"base", "rules", "services", "runtime", "http", "interface", "app", "cli"} == set(table.layers)
    imports = server_imports()
    assert "server.grading.worker" in imports and len(imports) > 140
    assert violations(table, imports) == []


def test_every_row_names_a_module_that_exists() -> None:
    table = layer_table(ARCHITECTURE.read_text())
    modules = [m.removeprefix("server.") if m != "server" else "server" for m in server_modules()]
    empty = [p for row in table.rows for p in row.patterns if not any(fnmatchcase(m, p) for m in modules)]
    assert empty == []
    by_layer: dict[str, list[str]] = {}
    for row in table.rows:
        by_layer.setdefault(row.layer, []).append(row.package)
    assert {layer: names for layer, names in by_layer.items() if len(set(names)) != len(names)} == {}


def test_server_imports_have_no_cycle() -> None:
    """Every import counted, those inside functions too."""
    assert find_cycle(module_graph(server_imports())) is None


def test_the_package_cycles_issue_33_named_are_gone() -> None:
    """courses<->submissions, courses<->leaderboard, leaderboard<->dashboard, grading<->regrades and
    grading<->submissions: no longer does either import the other both ways, in any layer
    (imports of the bottom two layers, tables and wire types, tie no package to another)."""
    table = layer_table(ARCHITECTURE.read_text())
    graph = module_graph(server_imports())

    def package(module: str) -> str:
        return module.split(".")[1]

    uses: set[tuple[str, str]] = set()
    for module, targets in graph.items():
        for target in targets:
            row = table.row_of(target)
            if row is not None and table.rows[row].layer not in {"base", "rules"} and "." in module:
                uses.add((package(module), package(target)))
    named = [("courses", "submissions"), ("courses", "leaderboard"), ("leaderboard", "dashboard"),
             ("grading", "regrades"), ("grading", "submissions")]
    assert all((a, b) in uses or (b, a) in uses for a, b in named)  # they still work together
    assert [(a, b) for a, b in named if (a, b) in uses and (b, a) in uses] == []


def test_the_services_never_load_the_worker_pool() -> None:
    """``server/deps.py`` (every route's) and ``server/state.py`` reach no runtime module, by any path."""
    graph = module_graph(server_imports())
    table = layer_table(ARCHITECTURE.read_text())
    runtime = {m for m in graph if (row := table.row_of(m)) is not None and table.rows[row].layer == "runtime"}
    assert "server.grading.worker" in runtime

    def reached(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for nxt in graph[todo.pop()] - seen:
                seen.add(nxt)
                todo.append(nxt)
        return seen

    assert {name: sorted(reached(name) & runtime) for name in ("server.deps", "server.state")} == {
        "server.deps": [],
        "server.state": [],
    }


def test_the_html_kit_imports_no_domain() -> None:
    """``server/web`` is the shared HTML kit (shell, charts, responses, session, login, page
    authorization): the domains' pages import it, never the other way round."""
    graph = module_graph(server_imports())
    kit = {name for name in graph if name == "server.web" or name.startswith("server.web.")}
    assert {"server.web.html", "server.web.deps", "server.web.errors"} <= kit
    domains = tuple(
        f"server.{p.name}" for p in (ROOT / "server").iterdir()
        if p.is_dir() and (p / "__init__.py").exists() and p.name not in {"web", "models", "migrations"}
    )
    assert "server.dashboard" in domains and "server.leaderboard" in domains and "server.submissions" in domains
    reached = {name: sorted(t for t in graph[name] if t.startswith(domains)) for name in sorted(kit)}
    assert {name: found for name, found in reached.items() if found} == {}


# --- the four top-level packages ----------------------------------------------------------

#: Which of the four packages each may import (server -> exercises -> sandbox; the client apart).
PACKAGE_ORDER = {
    "server": {"server", "exercises", "sandbox"},
    "exercises": {"exercises", "sandbox"},
    "sandbox": {"sandbox"},
    "ppo_submit": {"ppo_submit"},
}
#: The server's one import of the client, until the notebook parser is a shared package (issue 33).
CLIENT_IN_SERVER = {"server.dashboard.upload"}


def _package_imports() -> dict[str, list[Import]]:
    found: dict[str, list[Import]] = {}
    for top, folder in (("server", ROOT / "server"), ("exercises", ROOT / "exercises"),
                        ("sandbox", ROOT / "sandbox"), ("ppo_submit", ROOT / "client" / "ppo_submit")):
        base = folder.parent
        for path in sorted(folder.rglob("*.py")):
            if "migrations/versions" in path.as_posix():
                continue
            name = module_name(path, base)
            assert name.split(".")[0] == top
            found[name] = imports_of(path.read_text(), name, path.name == "__init__.py")
    return found


def test_server_exercises_sandbox_in_that_order_and_the_client_apart() -> None:
    wrong = []
    for module, found in _package_imports().items():
        allowed = PACKAGE_ORDER[module.split(".")[0]]
        for item in found:
            top = item.target.split(".")[0]
            if top in PACKAGE_ORDER and top not in allowed and not (top == "ppo_submit" and module in CLIENT_IN_SERVER):
                wrong.append(f"{module}:{item.line} imports {item.target}")
    assert wrong == []
