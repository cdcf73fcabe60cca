"""The module the learner meant: the exercise's function and what it needs, out of notebook cells.

A notebook holds far more than the function: training loops, plots, scratch tests. A kernel
run top to bottom leaves one binding per name, the last one. This module replays that on the
cells' syntax trees without running anything (:func:`scan`), then follows the names the
function reads (:func:`build`): the helpers it calls, the imports and the constants it uses,
and what those need in turn. Nothing else is sent.

What a name can be bound to, and what is sent for it:

``function`` / ``class``   its ``def`` / ``class`` statement, decorators included
``import``                 the import, narrowed to the names needed (``import a.b`` statements
                           that bind ``a`` accumulate, as submodules do in a kernel)
``constant``               ``NAME = <static expression>``: literals, operators, other sendable
                           names, and calls only on something imported (``math.log(2)``), but
                           not random draws or reads (``torch.randn``, ``torch.load``)
``block``                  an ``if`` / ``try`` at top level that only defines and imports
``variable``               anything else (``data = load()``, ``for`` loops, ``x += 1``): never
                           sent; a function that reads one gets one sentence naming it
``deleted``                ``del NAME``

Where the resolution lives is pluggable (:class:`Resolver`): a notebook file resolves names from
its cells; the kernel helper (``kernel.py``) checks them against the live namespace first.

The built module keeps a :class:`LineMap` from its lines back to the cells, so feedback can say
"cell 7, line 3". Standard library only (``ast`` and ``symtable``).
"""

from __future__ import annotations

import ast
import builtins
import difflib
import re
import symtable
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from .api import UsageError
from .cells import Cell, PythonCell

#: Names every module has without defining them.
MODULE_NAMES = frozenset({"__name__", "__doc__", "__file__", "__builtins__", "__spec__", "__loader__",
                          "__package__", "__annotations__", "__dict__"})
BUILTIN_NAMES = frozenset(dir(builtins)) | MODULE_NAMES

#: How close a missing name must be to one close by to be called a typo of it (``value`` for
#: ``values`` is 0.91; ``clipped_ratio`` for ``clip_range`` is 0.70 and is not one).
TYPO_CUTOFF = 0.8

#: Calls that make data rather than constants (random draws, files, downloads): what they
#: assign is a variable, even when the callee is imported (``data = torch.randn(100)``).
_DYNAMIC_CALL = re.compile(r"rand|random|normal|uniform|seed|load|open|read|fetch|download|pretrained|input",
                           re.IGNORECASE)

_DEF_LINE = re.compile(r"^(?:async[ \t]+)?def[ \t]+(\w+)", re.MULTILINE)


class MissingName(UsageError):
    """What would be sent lacks a name the function needs; ``message`` is one sentence naming it."""

    def __init__(self, message: str, names: Sequence[str]) -> None:
        super().__init__(message)
        self.names = list(names)


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
    kind: str
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
    chunk = [line.encode() for line in lines[first - 1:last]]
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


_DEFINING = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom, ast.Pass,
             ast.Raise)


class _Scanner:
    """Replays the cells' top-level statements in order (see :func:`scan`)."""

    def __init__(self) -> None:
        self.result = Scan()
        self.position = 0  # the cell being read: its place in the run (order of statements)

    # -- static expressions -----------------------------------------------------------------

    def _is_import(self, name: str) -> bool:
        binding = self.result.bindings.get(name)
        return binding is not None and binding.kind == "import"

    def is_static(self, node: ast.AST) -> bool:
        """Whether ``node`` can be sent as it is: it computes nothing of the learner's run."""
        if isinstance(node, ast.Constant | ast.Name):
            return True
        if isinstance(node, ast.Attribute):
            return self.is_static(node.value)
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            return all(self.is_static(e) for e in node.elts)
        if isinstance(node, ast.Dict):
            return all(k is not None and self.is_static(k) for k in node.keys) and all(
                self.is_static(v) for v in node.values)
        if isinstance(node, ast.UnaryOp):
            return self.is_static(node.operand)
        if isinstance(node, ast.BinOp):
            return self.is_static(node.left) and self.is_static(node.right)
        if isinstance(node, ast.BoolOp):
            return all(self.is_static(v) for v in node.values)
        if isinstance(node, ast.Compare):
            return self.is_static(node.left) and all(self.is_static(c) for c in node.comparators)
        if isinstance(node, ast.IfExp):
            return all(self.is_static(n) for n in (node.test, node.body, node.orelse))
        if isinstance(node, ast.Subscript):
            return self.is_static(node.value) and self.is_static(node.slice)
        if isinstance(node, ast.Slice):
            return all(n is None or self.is_static(n) for n in (node.lower, node.upper, node.step))
        if isinstance(node, ast.JoinedStr):
            return all(self.is_static(v) for v in node.values)
        if isinstance(node, ast.FormattedValue):
            return self.is_static(node.value)
        if isinstance(node, ast.Lambda):
            return True  # a definition; what its body reads is followed like a function's
        if isinstance(node, ast.Call):
            root = node.func
            while isinstance(root, ast.Attribute):
                root = root.value
            called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            return (isinstance(root, ast.Name) and self._is_import(root.id) and not _DYNAMIC_CALL.search(called)
                    and all(self.is_static(a) for a in node.args)
                    and all(self.is_static(k.value) for k in node.keywords))
        return False

    def only_defines(self, statements: Sequence[ast.stmt]) -> bool:
        """Whether a block (an ``if`` or ``try`` at top level) only defines, imports and assigns
        constants, so it can be sent whole."""
        for node in statements:
            if isinstance(node, _DEFINING):
                continue
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
                continue
            if (isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None
                    and self.is_static(node.value) and all(isinstance(t, ast.Name) for t in _targets(node))):
                continue
            if isinstance(node, ast.If) and self.is_static(node.test) and self.only_defines(
                    node.body) and self.only_defines(node.orelse):
                continue
            if isinstance(node, ast.Try) and all(self.only_defines(body) for body in (
                    node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers))):
                continue
            return False
        return True

    # -- binding ---------------------------------------------------------------------------

    def bind(self, name: str, kind: str, pieces: tuple[Piece, ...], cell: Cell, line: int, statement: str) -> None:
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
        except (SyntaxError, ValueError) as exc:
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
            self.bind(node.name, "class" if isinstance(node, ast.ClassDef) else "function", (piece,), cell, line,
                      shown)
        elif isinstance(node, ast.ImportFrom) and node.module == "__future__":
            self.result.futures.append(Piece(text, cell, line, column, (0, len(self.result.futures)), future=True))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            self.imports(node, piece)
        elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None and all(
                isinstance(t, ast.Name | ast.Tuple) for t in _targets(node)):
            kind = "constant" if self.is_static(node.value) else "variable"
            for name in _stored_names(node):
                before = self.result.bindings.get(name)
                if kind == "constant" and before is not None and before.kind in ("function", "class") and _literal(
                        node.value):
                    # `helper = 3` after `def helper`: a call to helper() can only fail
                    self.bind(name, "variable", (), cell, line, shown)
                else:
                    self.bind(name, kind, (piece,), cell, line, shown)
        elif isinstance(node, ast.If | ast.Try) and self.only_defines([node]):
            for name in _stored_names(node):
                self.bind(name, "block", (piece,), cell, line, shown)
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
            one = ast.Import(names=[alias]) if isinstance(node, ast.Import) else ast.ImportFrom(
                module=node.module, names=[alias], level=node.level)
            text = piece.text if len(node.names) == 1 else ast.unparse(one)
            narrowed = Piece(text, piece.cell, piece.line, piece.column, piece.order)
            name = (alias.asname or alias.name).split(".")[0]
            pieces: tuple[Piece, ...] = (narrowed,)
            before = self.result.bindings.get(name)
            if (isinstance(node, ast.Import) and alias.asname is None and before is not None
                    and before.kind == "import" and _plain_imports(before.pieces, name)):
                # `import a` then `import a.b`: a kernel has both (the same statement twice: once)
                pieces = tuple(p for p in before.pieces if p.text.strip() != text.strip()) + pieces
            self.bind(name, "import", pieces, piece.cell, piece.line, _first_line(piece.text))


def _literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


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
    scanner.result.functions = list(dict.fromkeys(scanner.result.functions))
    return scanner.result


# --------------------------------------------------------------------------- free names


def free_names(text: str) -> list[str]:
    """The module-level names ``text`` (complete top-level statements) reads, in order.

    A function's globals (read or declared ``global``), and what its decorators, defaults,
    annotations and base classes name; never its parameters or locals.
    """
    try:
        table = symtable.symtable(text, "<cell>", "exec")
    except (SyntaxError, ValueError):
        return []
    found: list[str] = []

    def visit(scope: symtable.SymbolTable) -> None:
        for symbol in scope.get_symbols():
            if scope.get_type() == "module":
                if symbol.is_referenced() and not symbol.is_assigned() and not symbol.is_imported():
                    found.append(symbol.get_name())
            elif symbol.is_global() and (symbol.is_referenced() or symbol.is_declared_global()):
                found.append(symbol.get_name())
        for child in scope.get_children():
            visit(child)

    visit(table)
    return list(dict.fromkeys(found))


def local_names(text: str) -> list[str]:
    """The parameters and local variables of the functions ``text`` defines."""
    try:
        table = symtable.symtable(text, "<cell>", "exec")
    except (SyntaxError, ValueError):
        return []
    found: list[str] = []

    def visit(scope: symtable.SymbolTable) -> None:
        if scope.get_type() == "function":
            found.extend(s.get_name() for s in scope.get_symbols() if s.is_local() or s.is_parameter())
        for child in scope.get_children():
            visit(child)

    visit(table)
    return list(dict.fromkeys(found))


def first_use(pieces: Iterable[Piece], name: str) -> str | None:
    """Where ``name`` is first read in ``pieces``, as ``cell 5, line 4`` (None when not found)."""
    for piece in pieces:
        if piece.cell is None:
            continue
        try:
            tree = ast.parse(piece.text)
        except (SyntaxError, ValueError):
            continue
        lines = [node.lineno for node in ast.walk(tree)
                 if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)]
        if lines:
            return f"{piece.cell.label}, line {piece.line + min(lines) - 1}"
    return None


# --------------------------------------------------------------------------- resolving


@dataclass(frozen=True)
class Use:
    """Who reads a name, and where (``cell 5, line 4``), for the sentence when it is missing."""

    name: str
    where: str | None = None
    #: The reader's own parameters and locals, for "did you mean ...?" on a typo.
    nearby: tuple[str, ...] = ()

    def at(self, name: str, candidates: Iterable[str] = ()) -> str:
        """`` (cell 5, line 4; did you mean `values`?)``: where ``name`` is read, and the name
        close by it may be a typo of."""
        pool = [n for n in dict.fromkeys([*self.nearby, *candidates]) if n != name]
        found = difflib.get_close_matches(name, pool, n=1, cutoff=TYPO_CUTOFF)
        near = found[0] if found else None
        notes = [n for n in (self.where, f"did you mean `{near}`?" if near else None) if n]
        return f" ({'; '.join(notes)})" if notes else ""

    @property
    def place(self) -> str:
        """`` (cell 5, line 4)``, or nothing when the place is not known."""
        return f" ({self.where})" if self.where else ""


@dataclass(frozen=True)
class Resolved:
    """What a name brings into the module, and the names those statements read."""

    pieces: tuple[Piece, ...]
    reads: tuple[str, ...] = ()


class Resolver(Protocol):
    """Finds what to send for a name; returns None for a name the jail has anyway (a builtin)."""

    def resolve(self, name: str, used_by: Use) -> Resolved | str | None:
        """A ``Resolved``, None (nothing to send), or the sentence naming why ``name`` is missing."""
        ...


def resolved(pieces: Sequence[Piece]) -> Resolved:
    """``pieces`` with the names they read."""
    reads: list[str] = []
    for piece in pieces:
        if piece.cell is None or not piece.text.lstrip().startswith(("import ", "from ")):
            reads.extend(free_names(piece.text))
    return Resolved(tuple(pieces), tuple(dict.fromkeys(reads)))


class CellResolver:
    """Resolves names from the cells of a notebook file (:func:`scan`)."""

    def __init__(self, scanned: Scan, notebook: str) -> None:
        self.scan = scanned
        self.notebook = notebook

    def resolve(self, name: str, used_by: Use) -> Resolved | str | None:
        binding = self.scan.bindings.get(name)
        if binding is None or binding.kind == "deleted":
            if name in BUILTIN_NAMES:
                return None
            if self.scan.stars:  # `from x import *` may bind it: send the star imports
                return Resolved(tuple(self.scan.stars))
            if binding is not None:
                return (f"{used_by.name} uses `{name}`{used_by.place}, but {binding.where} deletes it "
                        f"(`{binding.statement}`), so it "
                        "would be missing from what is sent: define it again after that cell, or remove the `del`.")
            return (f"{used_by.name} uses `{name}`{used_by.at(name, self.scan.bindings)}, but no "
                    f"cell of {self.notebook} defines or imports it, so it would be "
                    f"missing from what is sent: define `{name}` in a cell (or import it) and submit again.")
        if binding.kind == "variable":
            return variable_sentence(name, used_by, binding)
        return resolved(binding.pieces)


def variable_sentence(name: str, used_by: Use, binding: Binding, what: str = "") -> str:
    """The sentence for a name bound by something that is not sent (a computed variable)."""
    if binding.replaced is not None:
        old = binding.replaced
        kind = "function" if old.kind == "function" else "class"
        return (f"{used_by.name} uses `{name}`{used_by.place}, the {kind} defined at {old.where}, but {binding.where} "
                "then rebinds "
                f"`{name}` (`{binding.statement}`), so no definition of it would be sent: rename one of the two "
                "and run the cells again.")
    what = what or "a variable"
    return (f"{used_by.name} reads `{name}`{used_by.place}, {what} that {binding.where} computes "
            f"(`{binding.statement}`) rather than a definition, so it would be missing from what is sent: define it "
            f"inside {used_by.name}, pass it as an "
            f"argument, or make it a constant (`{name} = 0.5`).")


# --------------------------------------------------------------------------- building


@dataclass(frozen=True)
class Span:
    """Lines ``first``..``last`` of the built module are lines ``line``.. of ``label``."""

    first: int
    last: int
    label: str | None
    line: int
    column: int = 0


@dataclass(frozen=True)
class LineMap:
    """From lines of the built module back to the learner's cells."""

    spans: tuple[Span, ...] = ()

    def locate(self, line: int, column: int | None = None) -> tuple[str, int, int | None] | None:
        """``(cell label, line in the cell, column in the cell)`` for a line of the module;
        None for a line ppo-submit wrote (a header, a value from the kernel)."""
        for span in self.spans:
            if span.first <= line <= span.last and span.label is not None:
                offset = line - span.first
                shifted = column + span.column if column is not None and offset == 0 else column
                return span.label, span.line + offset, shifted
        return None


@dataclass(frozen=True)
class Built:
    """The module to send, its line map and the pieces it is made of."""

    source: str
    line_map: LineMap
    pieces: tuple[Piece, ...]


def build(function: str, resolver: Resolver, *, header: str = "", always: Sequence[Piece] = ()) -> Built:
    """The module made of ``function``'s statement and everything it needs, in run order.

    Raises :class:`MissingName`, whose message is one sentence naming the first name that
    cannot be sent (and lists any others), when something it reads would be missing.
    """
    chosen: dict[Piece, None] = dict.fromkeys(always)  # __future__ imports
    problems: dict[str, str] = {}
    seen: set[str] = set()
    queue: deque[tuple[str, Use]] = deque([(function, Use(function))])
    while queue:
        name, used_by = queue.popleft()
        if name in seen:
            continue
        seen.add(name)
        found = resolver.resolve(name, used_by)
        if found is None:
            continue
        if isinstance(found, str):
            problems.setdefault(name, found)
            continue
        chosen.update(dict.fromkeys(found.pieces))
        nearby = tuple(n for piece in found.pieces for n in local_names(piece.text))
        queue.extend((read, Use(name, first_use(found.pieces, read), nearby)) for read in found.reads)
    if problems:
        names = list(problems)
        more = f" (also missing: {', '.join(f'`{n}`' for n in names[1:])})" if len(names) > 1 else ""
        raise MissingName(problems[names[0]].rstrip(".") + more + ".", names)
    return assemble(sorted(chosen, key=lambda p: p.order), header)


def assemble(pieces: Sequence[Piece], header: str = "") -> Built:
    """The pieces as one module: ``__future__`` imports first, then the header as comments,
    then each cell's statements under a comment naming the cell."""
    out: list[str] = []
    spans: list[Span] = []

    def add(piece: Piece) -> None:
        text_lines = piece.text.splitlines() or [""]
        first = len(out) + 1
        out.extend(text_lines)
        label = piece.cell.label if piece.cell is not None else None
        spans.append(Span(first, first + len(text_lines) - 1, label, piece.line, piece.column))

    for piece in pieces:
        if piece.future:
            add(piece)
    out.extend(f"# {line}".rstrip() for line in header.splitlines())
    last_label: object = object()
    for piece in pieces:
        if piece.future:
            continue
        label = piece.cell.label if piece.cell is not None else None
        if out:
            out.append("")
        if label != last_label:
            out.append(f"# {label}" if label is not None else "# from the kernel's namespace, as it is now")
            last_label = label
        add(piece)
    return Built("\n".join(out) + "\n", LineMap(tuple(spans)), tuple(pieces))
