"""What the trusted side knows of a submitted file from its stored source (never from the jail):
the names it defines and the lines that hold code. The report view's cut builds tracebacks and
locations from these facts, so a name or a line the learner's code made up at run time (a code
object renamed or moved after the inputs) is not shown."""

from __future__ import annotations

import ast
from functools import cached_property

from exercises.feedback import JAIL_FILENAME, MAX_SOURCE_LINE, safe_filename

#: Frame names Python gives code that has no name of its own in the source.
_PYTHON_FRAME_NAMES = frozenset({"<module>", "<lambda>", "<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>"})


class SourceFacts:
    """The stored source of one submission, read lazily (a list of rows never parses it)."""

    def __init__(self, source: str, filename: str | None) -> None:
        self.source = source
        self.filename = safe_filename(filename) or JAIL_FILENAME

    @cached_property
    def lines(self) -> list[str]:
        """The file's lines, as stored."""
        return self.source.splitlines()

    @cached_property
    def _tree(self) -> ast.Module | None:
        try:
            return ast.parse(self.source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None

    @cached_property
    def names(self) -> frozenset[str]:
        """Functions and classes the source defines (and Python's own frame names)."""
        tree = self._tree
        if tree is None:
            return _PYTHON_FRAME_NAMES
        defined = {
            node.name
            for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        }
        return _PYTHON_FRAME_NAMES | defined

    @cached_property
    def code_lines(self) -> frozenset[int]:
        """Lines on which a statement or an expression of the source starts: the only lines an
        exception of this file's own code can be raised on (a comment or a blank line cannot)."""
        tree = self._tree
        if tree is None:
            return frozenset()
        return frozenset(node.lineno for node in ast.walk(tree) if isinstance(node, (ast.stmt, ast.expr)))

    def shown_line(self, line: int) -> bool:
        """Whether ``line`` may be named: inside the file and on its code."""
        return 1 <= line <= len(self.lines) and line in self.code_lines

    def shown_function(self, name: str | None) -> str | None:
        """``name`` when the source defines it; a name made at run time is not shown."""
        return name if name is not None and name in self.names else None

    def line_text(self, line: int) -> str:
        """The stored source's line ``line``, stripped and capped (never the jail's text)."""
        return self.lines[line - 1].strip()[:MAX_SOURCE_LINE]
