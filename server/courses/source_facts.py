"""What the trusted side knows of a submitted file from its stored source (never from the jail):
the lines that hold code and the function each line belongs to. The report view's cut builds
locations from these facts, so a name the learner's code made up at run time (a code object
renamed after the inputs) is never shown, nor a line that holds no code."""

from __future__ import annotations

import ast
from functools import cached_property

from exercises.feedback import JAIL_FILENAME, safe_filename

#: The name Python gives a frame of code outside any function or class.
MODULE_FRAME = "<module>"


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
    def _scopes(self) -> list[tuple[int, int, str]]:
        """(first line of the body, last line, name) of each function and class the source
        defines: the lines whose code runs in a frame of that name. A ``def`` line itself (its
        decorators, its defaults) runs in the enclosing scope."""
        tree = self._tree
        if tree is None:
            return []
        return [
            (node.body[0].lineno, node.end_lineno or node.body[0].lineno, node.name)
            for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        ]

    @cached_property
    def code_lines(self) -> frozenset[int]:
        """Lines on which a statement or an expression of the source starts: the only lines an
        exception of this file's own code can be raised on (a comment or a blank line cannot)."""
        tree = self._tree
        if tree is None:
            return frozenset()
        return frozenset(node.lineno for node in ast.walk(tree) if isinstance(node, (ast.stmt, ast.expr)))

    def may_name_line(self, line: int) -> bool:
        """Whether ``line`` may be named: inside the file and on its code."""
        return 1 <= line <= len(self.lines) and line in self.code_lines

    def function_at(self, line: int) -> str:
        """The function (or class) the source defines around ``line``, innermost first, else
        :data:`MODULE_FRAME`: the name an honest frame raising there has. Read from the source,
        never from the jail, so a frame named at run time (a code object renamed after the
        inputs, review 5, attack 1; review 6, attack 3) adds nothing to what its line says."""
        # scopes nest or are apart, so the innermost holding the line starts last, ends first,
        # and (a one-line method of a one-line class body) comes last in ast.walk's outer-first order
        holding = [(start, -end, i, name) for i, (start, end, name) in enumerate(self._scopes) if start <= line <= end]
        return max(holding)[3] if holding else MODULE_FRAME
