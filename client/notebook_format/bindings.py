"""What a notebook's cells leave bound, replayed from their syntax trees without running them.

A kernel run top to bottom leaves one binding per name, the last one. :func:`scan` replays
that statement by statement and records, for each name, the last statement that bound it
and what kind of binding it is, which decides what can be sent for it (``closure``):

``function`` / ``class``   its ``def`` / ``class`` statement, decorators included
``import``                 the import, narrowed to the names needed (``import a.b`` statements
                           that bind ``a`` accumulate, as submodules do in a kernel)
``constant``               ``NAME = <static expression>``: literals, operators, other sendable
                           names, and calls only on something imported (``math.log(2)``), but
                           not random draws or reads (``torch.randn``, ``torch.load``)
``block``                  an ``if`` / ``try`` at top level that only defines and imports
``unparsable``             a function in a cell that does not parse: the cell is sent whole,
                           so the grader shows the syntax error in it
``variable``               anything else (``data = load()``, ``for`` loops, ``x += 1``): never
                           sent; a function that reads one gets one sentence naming it
``deleted``                ``del NAME``

A variable that rebinds a function's name (``helper = 3`` after ``def helper``) remembers the
definition it replaced, so the sentence can name both cells. Standard library only (``ast``).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from .cells import Cell, PythonCell

#: What a statement made of a name (see the module's docstring).
Kind = Literal["function", "class", "import", "constant", "block", "unparsable", "variable", "deleted"]


#: Calls that make data rather than constants (random draws, files, downloads): what they
#: assign is a variable, even when the callee is imported (``data = torch.randn(100)``).
_DYNAMIC_CALL = re.compile(
    r"rand|random|normal|uniform|seed|load|open|read|fetch|download|pretrained|input", re.IGNORECASE
)

_DEF_LINE = re.compile(r"^(?:async[ \t]+)?def[ \t]+(\w+)", re.MULTILINE)


# --------------------------------------------------------------------------- pieces


@dataclass(frozen=True)
class Piece:
    """One top-level statement of the built module and where it came from.

    ``cell`` is None for text ppo-submit wrote itself (a kernel value, an import it could not
    see). ``line`` and ``column`` are where ``text`` starts in the cell; ``order`` is the
    statement's place in the run (cell, line), which the module keeps.
    """

    text: str
    cell: Cell | None
    line: int = 1
    column: int = 0
    order: tuple[int, int] = (0, 0)
    future: bool = False


@dataclass(frozen=True)
class Binding:
    """The last statement that bound a name, as a kernel run top to bottom would leave it."""

    name: str
    kind: Kind
    pieces: tuple[Piece, ...]
    cell: Cell
    line: int
    statement: str
    replaced: Binding | None = None

    @property
    def where(self) -> str:
        return f"{self.cell.label}, line {self.line}"


@dataclass
class Scan:
    """What the cells bind, in order: the last binding per name, future and star imports, the
    cells that do not parse, and every top-level function name (for exercise detection)."""

    bindings: dict[str, Binding] = field(default_factory=dict)
    futures: list[Piece] = field(default_factory=list)
    stars: list[Piece] = field(default_factory=list)
    unparsable: list[tuple[Cell, int]] = field(default_factory=list)
    functions: list[str] = field(default_factory=list)


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= 60 else line[:59] + "…"


def _segment(lines: list[str], node: ast.stmt) -> tuple[str, int, int]:
    """The statement's text (decorators included), its first line and the column it starts at.

    ``ast`` counts columns in UTF-8 bytes; the text is cut on bytes and decoded back.
    """
    decorators = getattr(node, "decorator_list", None) or []
    first = min(d.lineno for d in decorators) if decorators else node.lineno
    start = 0 if decorators else node.col_offset
    last, end = node.end_lineno or node.lineno, node.end_col_offset
    chunk = [line.encode() for line in lines[first - 1 : last]]
    if not chunk:
        return "", first, 0
    if end is not None:
        chunk[-1] = chunk[-1][:end]
    head = chunk[0][:start].decode(errors="replace")
    chunk[0] = chunk[0][start:]
    return "\n".join(c.decode(errors="replace") for c in chunk), first, len(head)


def _stored_names(node: ast.AST) -> list[str]:
    """Names a top-level statement binds, outside the functions, classes and lambdas it defines."""
    found: list[str] = []

    def visit(item: ast.AST) -> None:
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.append(item.name)  # its body binds its own locals
            return
        if isinstance(item, ast.Lambda):
            return
        if isinstance(item, ast.Name) and isinstance(item.ctx, ast.Store | ast.Del):
            found.append(item.id)
        elif isinstance(item, ast.Import | ast.ImportFrom):
            found.extend((a.asname or a.name).split(".")[0] for a in item.names if a.name != "*")
        elif isinstance(item, ast.ExceptHandler) and item.name:
            found.append(item.name)
        for child in ast.iter_child_nodes(item):
            visit(child)

    visit(node)
    return list(dict.fromkeys(found))


_DEFINING = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom, ast.Pass, ast.Raise)


class _Scanner:
    """Replays the cells' top-level statements in order (see :func:`scan`)."""

    def __init__(self) -> None:
        self.result = Scan()
        self.position = 0  # the cell being read: its place in the run (order of statements)
        #: ``import a.b`` statements that bind ``a`` accumulate: per name, the binding they make,
        #: its pieces by text (the same statement twice: once) and whether all are plain
        #: ``import a.sub``; the binding's tuple is made once, at the end (:meth:`finish`), so
        #: each statement costs the same however many came before.
        self.grown: dict[str, tuple[Binding, dict[str, Piece], bool]] = {}

    # -- static expressions -----------------------------------------------------------------

    def _is_definition(self, name: str) -> bool:
        """Whether ``name`` is bound by an import or a class (calling it is not the learner's run)."""
        binding = self.result.bindings.get(name)
        return binding is not None and binding.kind in ("import", "class")

    def is_static(self, node: ast.AST) -> bool:
        """Whether ``node`` can be sent as it is: it computes nothing of the learner's run.

        Walked with a stack, not by recursion: a learner's expression may nest thousands
        deep (``1+1+...+1``), and a recursive walk would die of ``RecursionError``."""
        stack: list[ast.AST | None] = [node]
        while stack:
            current = stack.pop()
            if current is None:
                continue
            children = self._static_children(current)
            if children is None:
                return False
            stack.extend(children)
        return True

    def _static_children(self, node: ast.AST) -> list[ast.AST | None] | None:
        """The parts of ``node`` that must be static too (None entries: absent, fine), or None
        when ``node`` itself computes something."""
        if isinstance(node, ast.Constant | ast.Name | ast.Lambda):
            return []  # a lambda is a definition; what its body reads is followed like a function's
        if isinstance(node, ast.Attribute | ast.FormattedValue):
            return [node.value]
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            return list(node.elts)
        if isinstance(node, ast.Dict):
            if any(k is None for k in node.keys):
                return None
            return [*node.keys, *node.values]
        if isinstance(node, ast.UnaryOp):
            return [node.operand]
        if isinstance(node, ast.BinOp):
            return [node.left, node.right]
        if isinstance(node, ast.BoolOp | ast.JoinedStr):
            return list(node.values)
        if isinstance(node, ast.Compare):
            return [node.left, *node.comparators]
        if isinstance(node, ast.IfExp):
            return [node.test, node.body, node.orelse]
        if isinstance(node, ast.Subscript):
            return [node.value, node.slice]
        if isinstance(node, ast.Slice):
            return [node.lower, node.upper, node.step]
        if isinstance(node, ast.Call):
            root = node.func
            while isinstance(root, ast.Attribute):
                root = root.value
            called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if isinstance(root, ast.Name) and self._is_definition(root.id) and not _DYNAMIC_CALL.search(called):
                return [*node.args, *(k.value for k in node.keywords)]
        return None

    def only_defines(self, statements: Sequence[ast.stmt]) -> bool:
        """Whether a block (an ``if`` or ``try`` at top level) only defines, imports and assigns
        constants, so it can be sent whole."""
        for node in statements:
            if isinstance(node, _DEFINING):
                continue
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
                continue
            if (
                isinstance(node, ast.Assign | ast.AnnAssign)
                and node.value is not None
                and self.is_static(node.value)
                and all(isinstance(t, ast.Name) for t in _targets(node))
            ):
                continue
            if (
                isinstance(node, ast.If)
                and self.is_static(node.test)
                and self.only_defines(node.body)
                and self.only_defines(node.orelse)
            ):
                continue
            if isinstance(node, ast.Try) and all(
                self.only_defines(body)
                for body in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers))
            ):
                continue
            return False
        return True

    # -- binding ---------------------------------------------------------------------------

    def bind(self, name: str, kind: Kind, pieces: tuple[Piece, ...], cell: Cell, line: int, statement: str) -> None:
        """Record the last binding of ``name``; a variable that replaces a definition remembers it."""
        before = self.result.bindings.get(name)
        replaced = None
        if kind in ("variable", "deleted") and before is not None:
            replaced = before if before.kind in ("function", "class") else before.replaced
        self.result.bindings[name] = Binding(name, kind, pieces, cell, line, statement, replaced)

    def cell(self, python: PythonCell) -> None:
        cell = python.cell
        self.position = cell.position
        try:
            tree = ast.parse(python.text)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            line = getattr(exc, "lineno", None) or 1
            self.result.unparsable.append((cell, line))
            piece = Piece(python.text.rstrip("\n"), cell, 1, 0, (self.position, 1))
            for name in dict.fromkeys(_DEF_LINE.findall(python.text)):
                self.result.functions.append(name)
                # the function's own cell does not parse: send it whole, the grader shows where
                self.bind(name, "unparsable", (piece,), cell, line, _first_line(python.text))
            return
        lines = python.text.splitlines()
        for node in tree.body:
            self.statement(node, lines, cell)

    def statement(self, node: ast.stmt, lines: list[str], cell: Cell) -> None:
        text, line, column = _segment(lines, node)
        piece = Piece(text, cell, line, column, (self.position, line))
        shown = _first_line(text)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if not isinstance(node, ast.ClassDef):
                self.result.functions.append(node.name)
            self.bind(node.name, "class" if isinstance(node, ast.ClassDef) else "function", (piece,), cell, line, shown)
        elif isinstance(node, ast.ImportFrom) and node.module == "__future__":
            self.result.futures.append(Piece(text, cell, line, column, (0, len(self.result.futures)), future=True))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            self.imports(node, piece)
        elif (
            isinstance(node, ast.Assign | ast.AnnAssign)
            and node.value is not None
            and all(isinstance(t, ast.Name | ast.Tuple) for t in _targets(node))
        ):
            kind: Kind = "constant" if self.is_static(node.value) else "variable"
            for name in _target_names(_targets(node)):
                before = self.result.bindings.get(name)
                if (
                    kind == "constant"
                    and before is not None
                    and before.kind in ("function", "class")
                    and _literal(node.value)
                ):
                    # `helper = 3` after `def helper`: a call to helper() can only fail
                    self.bind(name, "variable", (), cell, line, shown)
                else:
                    self.bind(name, kind, (piece,), cell, line, shown)
        elif isinstance(node, ast.If | ast.Try) and self.only_defines([node]):
            for name in _stored_names(node):
                self.bind(name, "block", (piece,), cell, line, shown)
        elif isinstance(node, ast.AnnAssign) and node.value is None:
            pass  # `x: int` binds nothing
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    self.bind(target.id, "deleted", (), cell, line, shown)
        else:
            for name in _stored_names(node):
                self.bind(name, "variable", (), cell, line, shown)

    def imports(self, node: ast.Import | ast.ImportFrom, piece: Piece) -> None:
        assert piece.cell is not None
        for alias in node.names:
            if alias.name == "*":
                self.result.stars.append(piece)
                continue
            one = (
                ast.Import(names=[alias])
                if isinstance(node, ast.Import)
                else ast.ImportFrom(module=node.module, names=[alias], level=node.level)
            )
            text = piece.text if len(node.names) == 1 else ast.unparse(one)
            narrowed = Piece(text, piece.cell, piece.line, piece.column, piece.order)
            name = (alias.asname or alias.name).split(".")[0]
            before = self.result.bindings.get(name)
            shown = _first_line(piece.text)
            if isinstance(node, ast.Import) and alias.asname is None and before is not None and before.kind == "import":
                grown = self.grown.get(name)
                if grown is not None and grown[0] is before:
                    _, pieces, plain = grown
                else:
                    pieces, plain = {p.text.strip(): p for p in before.pieces}, _plain_imports(before.pieces, name)
                if plain:
                    # `import a` then `import a.b`: a kernel has both (the same statement twice: once)
                    key = text.strip()
                    pieces.pop(key, None)
                    pieces[key] = narrowed
                    self.bind(name, "import", (), piece.cell, piece.line, shown)  # pieces: at the end
                    self.grown[name] = (self.result.bindings[name], pieces, _plain_imports((narrowed,), name))
                    continue
            self.bind(name, "import", (narrowed,), piece.cell, piece.line, shown)

    def finish(self) -> Scan:
        """The scan, with the pieces of the imports that accumulated."""
        bindings = self.result.bindings
        for name, (binding, pieces, _) in self.grown.items():
            if bindings.get(name) is binding:
                bindings[name] = replace(binding, pieces=tuple(pieces.values()))
        self.result.functions = list(dict.fromkeys(self.result.functions))
        return self.result


def _literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _target_names(targets: Iterable[ast.expr]) -> list[str]:
    """The names assignment targets bind (``a``, ``a, (b, *c)``), in order."""
    found: list[str] = []
    for target in targets:
        if isinstance(target, ast.Name):
            found.append(target.id)
        elif isinstance(target, ast.Tuple | ast.List):
            found.extend(_target_names(target.elts))
        elif isinstance(target, ast.Starred):
            found.extend(_target_names([target.value]))
    return list(dict.fromkeys(found))


def _targets(node: ast.Assign | ast.AnnAssign) -> list[ast.expr]:
    return list(node.targets) if isinstance(node, ast.Assign) else [node.target]


def _plain_imports(pieces: Iterable[Piece], name: str) -> bool:
    """Whether every piece is ``import name`` or ``import name.sub`` (no alias)."""
    pattern = re.compile(rf"^import\s+{re.escape(name)}(\.\w+)*\s*$")
    return all(pattern.match(p.text.strip()) for p in pieces)


def scan(cells: Iterable[PythonCell]) -> Scan:
    """Replay ``cells`` in order; the last statement that binds a name wins."""
    scanner = _Scanner()
    for cell in cells:
        scanner.cell(cell)
    return scanner.finish()
