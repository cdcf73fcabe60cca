"""The module the learner meant: the exercise's function and what it needs, out of notebook cells.

A notebook holds far more than the function: training loops, plots, scratch tests. From what
the cells leave bound (``bindings.scan``), :func:`build` follows the names the function reads:
the helpers it calls, the imports and the constants it uses, and what those need in turn.
Nothing else is sent. A name that cannot be sent (never defined, a computed variable, a
function rebound to a value) is one sentence naming it (:class:`MissingName`).

Where names are resolved is pluggable (:class:`Resolver`): a notebook file resolves them from
its cells (:class:`CellResolver`); the client's kernel helper (``ppo_submit.kernel``) checks
them against the live namespace first.

The built module keeps a :class:`LineMap` from its lines back to the cells, so feedback can say
"cell 7, line 3". Standard library only (``ast`` and ``symtable``).
"""

from __future__ import annotations

import ast
import builtins
import symtable
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from .bindings import Binding, Piece, Scan, scan
from .errors import SourceError
from .functions import suggest

__all__ = [
    "BOUNDS",
    "BUILTIN_NAMES",
    "WORK",
    "Bounds",
    "Built",
    "CellResolver",
    "Facts",
    "LineMap",
    "MissingName",
    "Piece",
    "Resolved",
    "Resolver",
    "Scan",
    "Span",
    "TooMuchToFollow",
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


class MissingName(SourceError):
    """What would be sent lacks a name the function needs; ``message`` is one sentence naming it."""

    def __init__(self, message: str, names: Sequence[str]) -> None:
        super().__init__(message)
        self.names = list(names)


class TooMuchToFollow(SourceError):
    """Building the module would follow more names or statements than :data:`BOUNDS` allows."""


@dataclass(frozen=True)
class Bounds:
    """How much :func:`build` follows before it refuses (:class:`TooMuchToFollow`): every name
    is resolved once and every statement analysed once, so its work grows with these."""

    #: Distinct names resolved (the function, its helpers, what they read, in turn).
    names: int = 5000
    #: Statements brought into the module.
    pieces: int = 20000
    #: Missing names listed by name in the sentence (the rest are counted).
    listed: int = 20


BOUNDS = Bounds()


@dataclass
class Work:
    """What :func:`build` has cost this process: counted, for the tests and the benchmark."""

    tables: int = 0  # symtable runs (one per statement analysed)
    parses: int = 0  # ast parses (one per statement of a cell analysed)
    names: int = 0  # names resolved


#: This process's count.
WORK = Work()


# --------------------------------------------------------------------------- free names


def free_names(text: str) -> list[str]:
    """The module-level names ``text`` (complete top-level statements) reads, in order.

    A function's globals (read or declared ``global``), and what its decorators, defaults,
    annotations and base classes name; never its parameters or locals.
    """
    return list(_names(text)[0])


def _names(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(free names, local names) of ``text``, from one symbol table."""
    WORK.tables += 1
    try:
        table = symtable.symtable(text, "<cell>", "exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return (), ()
    free: list[str] = []
    local: list[str] = []
    stack = [table]
    while stack:  # depth first, children in order, as the names are read
        scope = stack.pop()
        kind = scope.get_type()
        for symbol in scope.get_symbols():
            if kind == "module":
                if symbol.is_referenced() and not symbol.is_assigned() and not symbol.is_imported():
                    free.append(symbol.get_name())
            elif symbol.is_global() and (symbol.is_referenced() or symbol.is_declared_global()):
                free.append(symbol.get_name())
            if kind == "function" and (symbol.is_local() or symbol.is_parameter()):
                local.append(symbol.get_name())
        stack.extend(reversed(scope.get_children()))
    return tuple(dict.fromkeys(free)), tuple(dict.fromkeys(local))


@dataclass(frozen=True)
class Facts:
    """What one piece reads and binds, worked out once per piece (one symbol table, one parse)."""

    #: Module-level names it reads, in order (none for an import of a cell).
    reads: tuple[str, ...] = ()
    #: Its functions' parameters and locals (for "did you mean ...?").
    locals: tuple[str, ...] = ()
    #: Where each name is first read, as ``cell 5, line 4`` (pieces of cells only).
    places: dict[str, str] = field(default_factory=dict)


def facts(piece: Piece) -> Facts:
    """The :class:`Facts` of ``piece``; :func:`build` asks once per piece."""
    if piece.cell is not None and piece.text.lstrip().startswith(("import ", "from ")):
        return Facts()  # an import reads nothing and has no locals
    reads, local = _names(piece.text)
    places: dict[str, str] = {}
    if piece.cell is not None and reads:
        WORK.parses += 1
        try:
            tree = ast.parse(piece.text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return Facts(reads, local)
        first: dict[str, int] = {}
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Name)
                and isinstance(node.ctx, ast.Load)
                and node.lineno < first.get(node.id, 1 << 62)
            ):
                first[node.id] = node.lineno
        label = piece.cell.label
        places = {name: f"{label}, line {piece.line + line - 1}" for name, line in first.items()}
    return Facts(reads, local, places)


# --------------------------------------------------------------------------- resolving


@dataclass(frozen=True)
class Use:
    """Who reads a name, and where (``cell 5, line 4``), for the sentence when it is missing."""

    name: str
    where: str | None = None
    #: The reader's own parameters and locals, for "did you mean ...?" on a typo.
    nearby: tuple[str, ...] = ()
    #: Whether to look for that typo (only the first missing name's sentence is shown whole).
    suggest: bool = True

    def at(self, name: str, candidates: Iterable[str] = ()) -> str:
        """`` (cell 5, line 4; did you mean `values`?)``: where ``name`` is read, and the name
        close by it may be a typo of."""
        if not self.suggest:
            return self.place
        pool = [n for n in dict.fromkeys([*self.nearby, *candidates]) if n != name]
        near = suggest(name, pool, cutoff=TYPO_CUTOFF)  # bounded: names and candidates capped
        notes = [n for n in (self.where, f"did you mean `{near}`?" if near else None) if n]
        return f" ({'; '.join(notes)})" if notes else ""

    @property
    def place(self) -> str:
        """`` (cell 5, line 4)``, or nothing when the place is not known."""
        return f" ({self.where})" if self.where else ""


@dataclass(frozen=True)
class Resolved:
    """What a name brings into the module. :func:`build` follows the names its pieces read
    (:func:`facts`), and ``reads``, names to follow besides."""

    pieces: tuple[Piece, ...]
    reads: tuple[str, ...] = ()


class Resolver(Protocol):
    """Finds what to send for a name; returns None for a name the jail has anyway (a builtin)."""

    def resolve(self, name: str, used_by: Use) -> Resolved | str | None:
        """A ``Resolved``, None (nothing to send), or the sentence naming why ``name`` is missing."""
        ...


def resolved(pieces: Sequence[Piece]) -> Resolved:
    """``pieces``, whose reads :func:`build` works out (once per piece)."""
    return Resolved(tuple(pieces))


class CellResolver:
    """Resolves names from the cells of a notebook file (:func:`scan`)."""

    def __init__(self, scanned: Scan, notebook: str) -> None:
        self.scan = scanned
        self.notebook = notebook
        self.stars = Resolved(tuple(scanned.stars))  # one object: build expands it once

    def resolve(self, name: str, used_by: Use) -> Resolved | str | None:
        binding = self.scan.bindings.get(name)
        if binding is None or binding.kind == "deleted":
            if name in BUILTIN_NAMES:
                return None
            if self.scan.stars:  # `from x import *` may bind it: send the star imports
                return self.stars
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


def build(
    function: str, resolver: Resolver, *, header: str = "", always: Sequence[Piece] = (), bounds: Bounds = BOUNDS
) -> Built:
    """The module made of ``function``'s statement and everything it needs, in run order.

    Raises :class:`MissingName`, whose message is one sentence naming the first name that
    cannot be sent (and lists any others), when something it reads would be missing, and
    :class:`TooMuchToFollow` past ``bounds``. Linear: each name is resolved once, each piece
    analysed once (:func:`facts`), only when it first enters the module.
    """
    chosen: dict[Piece, None] = dict.fromkeys(always)  # __future__ imports
    problems: dict[str, str] = {}
    seen: set[str] = set()
    expanded: dict[int, Resolved] = {}  # by id: a resolver may hand the same object for many names
    queue: deque[tuple[str, Use]] = deque([(function, Use(function))])
    while queue:
        name, used_by = queue.popleft()
        if name in seen:
            continue
        seen.add(name)
        WORK.names += 1
        if len(seen) > bounds.names:
            raise _too_much(function, f"{bounds.names} names")
        if problems and used_by.suggest:
            used_by = replace(used_by, suggest=False)  # only the first sentence is shown whole
        found = resolver.resolve(name, used_by)
        if found is None:
            continue
        if isinstance(found, str):
            problems.setdefault(name, found)
            continue
        if id(found) in expanded:
            continue
        expanded[id(found)] = found  # kept alive, so its id is not reused
        new = [piece for piece in found.pieces if piece not in chosen]
        chosen.update(dict.fromkeys(new))
        if len(chosen) > bounds.pieces:
            raise _too_much(function, f"{bounds.pieces} statements")
        known = [facts(piece) for piece in new]
        nearby = tuple(dict.fromkeys(n for fact in known for n in fact.locals))
        for fact in known:
            queue.extend((read, Use(name, fact.places.get(read), nearby)) for read in fact.reads if read not in seen)
        queue.extend((read, Use(name, None, nearby)) for read in found.reads if read not in seen)
    if problems:
        names = list(problems)
        shown = [f"`{n}`" for n in names[1 : bounds.listed + 1]]
        if len(names) > bounds.listed + 1:
            shown.append(f"and {len(names) - bounds.listed - 1} more")
        more = f" (also missing: {', '.join(shown)})" if shown else ""
        raise MissingName(problems[names[0]].rstrip(".") + more + ".", names)
    return assemble(sorted(chosen, key=lambda p: p.order), header)


def _too_much(function: str, what: str) -> TooMuchToFollow:
    return TooMuchToFollow(
        f"{function} needs more than {what} from the notebook's cells to be sent, more than ppo-submit "
        f"follows: put {function} and the helpers it uses in a .py file (or a smaller notebook) and submit that"
    )


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
