"""``server/`` imports form no cycle, counting module-level and ``TYPE_CHECKING`` imports
(those that a reader and a type checker follow; imports inside functions are left out, as
they are the documented way to defer a heavy or optional module)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _top_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Imports at module level, including inside ``if`` blocks (``TYPE_CHECKING``), not in functions."""
    found: list[ast.Import | ast.ImportFrom] = []
    stack: list[ast.stmt] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif isinstance(node, ast.If | ast.Try):
            stack.extend(node.body + node.orelse + getattr(node, "finalbody", []))
            for handler in getattr(node, "handlers", []):
                stack.extend(handler.body)
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the ``server`` modules it imports at module level."""
    modules = {_module_name(p): p for p in (ROOT / "server").rglob("*.py") if "migrations/versions" not in str(p)}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in _top_level_imports(ast.parse(path.read_text())):
            targets = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            graph[name] |= {t for t in targets if t in modules and t != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path that ends where it starts, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            return cycle
    return None


def test_the_finder_sees_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_server_imports_have_no_cycle() -> None:
    graph = import_graph()
    assert "server.grading.worker" in graph and "server.state" in graph["server.deps"]
    assert find_cycle(graph) is None


def test_the_html_kit_imports_no_domain() -> None:
    """``server/web`` is the shared HTML kit (shell, charts, responses, session, login, page
    authorization): the domains' pages import it, never the other way round."""
    graph = import_graph()
    kit = {name for name in graph if name == "server.web" or name.startswith("server.web.")}
    assert {"server.web.html", "server.web.deps", "server.web.errors"} <= kit
    domains = tuple(
        f"server.{p.name}" for p in (ROOT / "server").iterdir()
        if p.is_dir() and (p / "__init__.py").exists() and p.name not in {"web", "models", "migrations"}
    )
    assert "server.dashboard" in domains and "server.leaderboard" in domains and "server.submissions" in domains
    reached = {name: sorted(t for t in graph[name] if t.startswith(domains)) for name in sorted(kit)}
    assert {name: found for name, found in reached.items() if found} == {}
