"""The module the learner meant: the exercise's function and what it needs, out of notebook cells.

A notebook holds far more than the function: training loops, plots, scratch tests. From what
the cells leave bound (``bindings.scan``), :func:`build` follows the names the function reads:
the helpers it calls, the imports and the constants it uses, and what those need in turn.
Nothing else is sent. A name that cannot be sent (never defined, a computed variable, a
function rebound to a value) is one sentence naming it (:class:`MissingName`).

Where names are resolved is pluggable (:class:`Resolver`): a notebook file resolves them from
its cells (:class:`CellResolver`); the kernel helper (``kernel.py``) checks them against the
live namespace first.

The built module keeps a :class:`LineMap` from its lines back to the cells, so feedback can say
"cell 7, line 3". Standard library only (``ast`` and ``symtable``).
"""

from __future__ import annotations

import ast
import builtins
import difflib
import symtable
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from .api import UsageError
from .bindings import Binding, Piece, Scan, scan

__all__ = [
    "BUILTIN_NAMES",
    "Built",
    "CellResolver",
    "LineMap",
    "MissingName",
    "Piece",
    "Resolved",
    "Resolver",
    "Scan",
    "Span",
    "Use",
    "build",
    "free_names",
    "resolved",
    "scan",
    "variable_sentence",
]

#: Names every module has without defining them.
MODULE_NAMES = frozenset(
    {
        "__name__",
        "__doc__",
        "__file__",
        "__builtins__",
        "__spec__",
        "__loader__",
        "__package__",
        "__annotations__",
        "__dict__",
    }
)
BUILTIN_NAMES = frozenset(dir(builtins)) | MODULE_NAMES

#: How close a missing name must be to one close by to be called a typo of it (``value`` for
#: ``values`` is 0.91; ``clipped_ratio`` for ``clip_range`` is 0.70 and is not one).
TYPO_CUTOFF = 0.8


class MissingName(UsageError):
    """What would be sent lacks a name the function needs; ``message`` is one sentence naming it."""

    def __init__(self, message: str, names: Sequence[str]) -> None:
        super().__init__(message)
        self.names = list(names)


# --------------------------------------------------------------------------- free names


def free_names(text: str) -> list[str]:
    """The module-level names ``text`` (complete top-level statements) reads, in order.

    A function's globals (read or declared ``global``), and what its decorators, defaults,
    annotations and base classes name; never its parameters or locals.
    """
    try:
        table = symtable.symtable(text, "<cell>", "exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
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
    except (SyntaxError, ValueError, RecursionError, MemoryError):
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
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        lines = [
            node.lineno
            for node in ast.walk(tree)
            if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)
        ]
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
                return (
                    f"{used_by.name} uses `{name}`{used_by.place}, but {binding.where} deletes it "
                    f"(`{binding.statement}`), so it "
                    "would be missing from what is sent: define it again after that cell, or remove the `del`."
                )
            return (
                f"{used_by.name} uses `{name}`{used_by.at(name, self.scan.bindings)}, but no "
                f"cell of {self.notebook} defines or imports it, so it would be "
                f"missing from what is sent: define `{name}` in a cell (or import it) and submit again."
            )
        if binding.kind == "variable":
            return variable_sentence(name, used_by, binding)
        return resolved(binding.pieces)


def variable_sentence(name: str, used_by: Use, binding: Binding, what: str = "") -> str:
    """The sentence for a name bound by something that is not sent (a computed variable)."""
    if binding.replaced is not None:
        old = binding.replaced
        kind = "function" if old.kind == "function" else "class"
        return (
            f"{used_by.name} uses `{name}`{used_by.place}, the {kind} defined at {old.where}, but {binding.where} "
            "then rebinds "
            f"`{name}` (`{binding.statement}`), so no definition of it would be sent: rename one of the two "
            "and run the cells again."
        )
    what = what or "a variable"
    return (
        f"{used_by.name} reads `{name}`{used_by.place}, {what} that {binding.where} computes "
        f"(`{binding.statement}`) rather than a definition, so it would be missing from what is sent: define it "
        f"inside {used_by.name}, pass it as an "
        f"argument, or make it a constant (`{name} = 0.5`)."
    )


# --------------------------------------------------------------------------- building


@dataclass(frozen=True)
class Span:
    """Lines ``first``..``last`` of the built module are lines ``line``.. of ``label``."""

    first: int
    last: int
    label: str | None
    line: int
    column: int = 0


#: The comment above what ppo-submit wrote from the kernel's live values.
KERNEL_MARK = "# from the kernel's namespace, as it is now"


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
    then each statement under a comment saying where it starts (``# cell 7, line 3``), which
    the server reads back for its pages (``server/submissions/places.py``)."""
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
        if label is not None:
            out.append(f"# {label}, line {piece.line}")
        elif label != last_label:
            out.append(KERNEL_MARK)
        last_label = label
        add(piece)
    return Built("\n".join(out) + "\n", LineMap(tuple(spans)), tuple(pieces))
