"""The module to send from a running kernel: the function as it is now, and what it uses.

The kernel's namespace decides, as the issue asks ("as they are now"); the cells the kernel
has run (its input history) say how each name came to be:

- a function defined in a cell: its live source (``inspect.getsource``, which follows
  decorators' ``__wrapped__``), placed at the cell and line its code object names, so
  feedback says "cell 7, line 3" (the cell's ``In [7]``);
- a class, a constant, an ``if``/``try`` block that only defines: its statement in the last
  cell that ran it;
- a module or an imported name: the import statement the learner wrote, else one written from
  the live object (``import torch.nn.functional as F``);
- a literal value with no statement behind it (set by ``exec``, a ``%run`` script): written
  from its ``repr``;
- anything else (a name the kernel does not have, a tensor computed in a cell, a function
  name later rebound to a value): one sentence naming the name, and nothing is sent.

IPython is the caller's (``notebook.py`` passes its shell); nothing here imports it.
"""

from __future__ import annotations

import ast
import inspect
import sys
from collections.abc import Mapping
from types import BuiltinFunctionType, FunctionType, ModuleType
from typing import Any

from notebook_format.cells import Cell, to_python
from notebook_format.closure import (
    BUILTIN_NAMES,
    Built,
    Piece,
    Resolved,
    Scan,
    Use,
    build,
    resolved,
    scan,
    variable_sentence,
)

_LITERAL_TYPES = (int, float, complex, str, bytes, bool, type(None))
#: Largest kernel value written out as a literal (items counted through its containers).
MAX_LITERAL_ITEMS = 1000
MAX_LITERAL_CHARS = 10_000


def history_cells(shell: Any) -> list[Cell]:
    """The cells the kernel has run, in order, each labelled by its execution count."""
    raw = list(
        getattr(getattr(shell, "history_manager", None), "input_hist_raw", None) or shell.user_ns.get("In") or []
    )
    return [Cell(str(text), number, number) for number, text in enumerate(raw) if number > 0 and str(text).strip()]


def _literal(value: Any) -> str | None:
    """``repr(value)`` when it reads back as the same value (numbers, strings, their containers)."""
    budget = [MAX_LITERAL_ITEMS]

    def plain(item: Any, depth: int = 0) -> bool:
        budget[0] -= 1
        if depth > 20 or budget[0] < 0:
            return False
        if isinstance(item, _LITERAL_TYPES):
            return type(item) in _LITERAL_TYPES
        if type(item) in (tuple, list, set, frozenset):
            return all(plain(x, depth + 1) for x in item)
        if type(item) is dict:
            return all(plain(k, depth + 1) and plain(v, depth + 1) for k, v in item.items())
        return False

    if not plain(value):
        return None
    if isinstance(value, str | bytes) and len(value) > MAX_LITERAL_CHARS:
        return None
    text = repr(value)
    try:
        same = len(text) <= MAX_LITERAL_CHARS and ast.literal_eval(text) == value
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    return text if same else None


def _static_value(piece: Piece) -> object:
    """The value a constant statement assigns, when it is a literal (a sentinel otherwise)."""
    try:
        node = ast.parse(piece.text).body[0]
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            return ast.literal_eval(node.value)
    except (ValueError, SyntaxError, IndexError, TypeError, MemoryError, RecursionError):
        pass
    return _UNKNOWN


_UNKNOWN = object()


class KernelResolver:
    """Resolves names against the live namespace, with the history for how they were made."""

    def __init__(self, shell: Any, scanned: Scan, cells: Mapping[int, Cell]) -> None:
        self.shell = shell
        self.namespace: dict[str, Any] = shell.user_ns
        self.scan = scanned
        self.cells = cells
        self.written = 0

    # -- helpers --------------------------------------------------------------------------

    def _write(self, text: str) -> Resolved:
        """A statement ppo-submit writes itself (placed before the cells' statements)."""
        self.written += 1
        return resolved([Piece(text, None, 1, 0, (-1, self.written))])

    def _cell_of(self, filename: str) -> Cell | None:
        number = getattr(getattr(self.shell, "compile", None), "_filename_map", {}).get(filename)
        return self.cells.get(number) if isinstance(number, int) else None

    def _live_function(self, value: Any) -> Piece | None:
        """The function's source as its code object has it: its cell and first line."""
        code = getattr(inspect.unwrap(value), "__code__", None)
        if code is None or code.co_name == "<lambda>":
            return None  # a lambda's source is the statement around it: the cells' binding has it
        try:
            text = inspect.getsource(value)
        except (OSError, TypeError):
            return None
        cell = self._cell_of(code.co_filename)
        if cell is None or text[:1].isspace():
            return None  # not from a cell, or defined inside a block: the cells' binding has it
        line = code.co_firstlineno
        return Piece(text.rstrip("\n"), cell, line, 0, (cell.position, line))

    def _imported(self, name: str, value: Any) -> Resolved | None:
        """The learner's import of ``name``, or one written from the live module or object."""
        binding = self.scan.bindings.get(name)
        if binding is not None and binding.kind in ("import", "block"):
            return resolved(binding.pieces)
        if isinstance(value, ModuleType):
            module_name = value.__name__
            return self._write(f"import {module_name}" if module_name == name else f"import {module_name} as {name}")
        module, qualname = getattr(value, "__module__", None), getattr(value, "__qualname__", None)
        if isinstance(module, str) and isinstance(qualname, str) and module != "__main__" and "." not in qualname:
            if getattr(sys.modules.get(module), qualname, None) is value:
                alias = "" if qualname == name else f" as {name}"
                return self._write(f"from {module} import {qualname}{alias}")
        return None

    # -- the resolver -----------------------------------------------------------------------

    def resolve(self, name: str, used_by: Use) -> Resolved | str | None:
        binding = self.scan.bindings.get(name)
        if name not in self.namespace:
            if name in BUILTIN_NAMES:
                return None
            ran = (
                f" ({binding.where} defines it, but the kernel does not have it now: the cell stopped "
                "before it, it was deleted, or the kernel restarted)"
                if binding is not None and binding.kind in ("function", "class", "import", "constant")
                else ""
            )
            return (
                f"{used_by.name} uses `{name}`{used_by.at(name, self.namespace)}, but the kernel has no "
                f"`{name}`{ran}, so it would be missing from what is sent: run the cell that defines it "
                "(or define it), then submit again."
            )
        value = self.namespace[name]
        if binding is not None and binding.replaced is not None:
            return variable_sentence(name, used_by, binding)
        if isinstance(value, FunctionType | type) and getattr(value, "__module__", None) == "__main__":
            live = self._live_function(value) if isinstance(value, FunctionType) else None
            if live is not None:
                return resolved([live])
            if binding is not None and binding.kind in ("function", "class", "block"):
                return resolved(binding.pieces)
            return (
                f"{used_by.name} uses `{name}`{used_by.place}, but its source is not in any cell the kernel "
                "ran (was it made with exec?), so it would be missing from what is sent: define it in a cell "
                "with `def` or `class`, run that cell, then submit again."
            )
        if isinstance(value, ModuleType | FunctionType | BuiltinFunctionType | type) or (
            binding is not None and binding.kind == "import"
        ):
            found = self._imported(name, value)
            if found is not None:
                return found
        if binding is not None and binding.kind in ("constant", "block"):
            static = _static_value(binding.pieces[0])
            literal = _literal(value)
            if static is _UNKNOWN or literal is None or static == value:
                return resolved(binding.pieces)
            return self._write(f"{name} = {literal}")  # changed since its cell ran: the value as it is now
        if binding is not None and binding.kind == "variable":
            return variable_sentence(name, used_by, binding, what=f"a {type(value).__name__}")
        literal = _literal(value)
        if literal is not None:
            return self._write(f"{name} = {literal}")
        return (
            f"{used_by.name} reads `{name}`{used_by.place}, a {type(value).__name__} in the kernel rather than "
            "a definition, so it would be missing from what is sent: define it inside "
            f"{used_by.name}, or pass it as an argument."
        )


def kernel_module(shell: Any, function: Any) -> tuple[str, Built]:
    """``(function name, module)`` for ``function`` (a function object or its name) as the
    kernel has it now. Raises ``UsageError`` (``closure.MissingName`` for a missing name)."""
    from .api import UsageError

    if isinstance(function, str):
        name = function
        if name not in shell.user_ns:
            raise UsageError(f"the kernel has no `{name}`: run the cell that defines it, then submit again")
        function = shell.user_ns[name]
    found = getattr(inspect.unwrap(function), "__name__", None) if callable(function) else None
    if not isinstance(found, str) or not isinstance(inspect.unwrap(function), FunctionType):
        raise UsageError(
            f"submit a function defined in a cell (got {type(function).__name__}): "
            "notebook.submit(compute_gae), or %ppo_submit compute_gae"
        )
    name = found
    if shell.user_ns.get(name) is not function:
        raise UsageError(
            f"`{name}` in the kernel is not the function given: run the cell that defines it last, then submit again"
        )
    cells = history_cells(shell)
    scanned = scan(to_python(cell) for cell in cells)
    resolver = KernelResolver(shell, scanned, {cell.position: cell for cell in cells})
    header = f"Built by ppo-submit from the kernel: {name} and what it uses, as they are now."
    return name, build(name, resolver, header=header, always=scanned.futures)
