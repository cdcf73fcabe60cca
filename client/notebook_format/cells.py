"""Notebook code cells as Python: IPython's magics and shell escapes taken out, each one reported.

A cell is Python plus IPython's own syntax: ``%line`` and ``%%cell`` magics, ``!shell``
escapes (also as ``files = !ls``) and ``obj?`` help. None of it exists in the grader's jail,
so it is dropped here, line by line, and every dropped line is reported to the learner.
Line numbers never move: a dropped line becomes an empty line (``pass`` inside an indented
block, so the block stays valid Python), because feedback points at "cell 7, line 3".

A cell magic whose body is Python (``%%time``, ``%%capture``...) loses its first line only;
any other (``%%bash``, ``%%writefile``...) drops the whole cell.

Standard library only: a notebook file's cells (``notebook_format.reader``, for the CLI and the
server's upload form) and the client's kernel helper's own history (``ppo_submit.kernel``)
both come through here.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field

#: Cell magics whose body is ordinary Python that runs in the kernel's namespace.
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})

#: ``%magic``, ``!cmd``, ``files = !ls``, ``x = %sx ...``, ``?obj``, ``obj?``, ``obj??``.
_LINE_MAGIC = re.compile(r"^[ \t]*(?:[%!]|\?|[\w.]+[ \t]*=[ \t]*[%!])")
_HELP = re.compile(r"^[ \t]*[\w.]+\?{1,2}[ \t]*$")
_CELL_MAGIC = re.compile(r"^[ \t]*%%(\w+)")
#: ``%time STATEMENT`` runs the statement in the kernel's namespace: the statement is kept.
_TIME = re.compile(r"^(?P<indent>[ \t]*)%time[ \t]+(?P<statement>\S.*)$")


@dataclass(frozen=True)
class Cell:
    """One code cell: its text, where it sits, and when it ran.

    ``position`` is the cell's 1-based place among the notebook's code cells;
    ``execution_count`` is the kernel's ``In [n]`` when the cell has run (None otherwise).
    """

    source: str
    position: int
    execution_count: int | None = None

    @property
    def label(self) -> str:
        """How feedback names the cell: ``cell 7`` (its ``In [7]``), else ``code cell 3``."""
        if self.execution_count is not None:
            return f"cell {self.execution_count}"
        return f"code cell {self.position}"


@dataclass(frozen=True)
class Dropped:
    """A line (or a whole cell) of IPython syntax that is not sent."""

    cell: Cell
    line: int
    text: str
    whole_cell: bool = False
    #: The magic ran a Python statement (``%time import torch``), which is kept.
    kept_statement: bool = False

    def describe(self) -> str:
        """``cell 3, line 1: %matplotlib inline`` (the text cut to one short line)."""
        shown = self.text.strip()
        shown = shown if len(shown) <= 60 else shown[:59] + "…"
        what = " (the whole cell)" if self.whole_cell else " (its statement is kept)" if self.kept_statement else ""
        return f"{self.cell.label}, line {self.line}: {shown}{what}"


@dataclass(frozen=True)
class PythonCell:
    """A cell's text with its IPython syntax blanked out, line for line."""

    cell: Cell
    text: str
    dropped: list[Dropped] = field(default_factory=list)


def _continuation_lines(text: str, last: int) -> set[int]:
    """1-based lines that continue a statement begun above (inside brackets or a multi-line
    string, or after a backslash): a ``%`` or ``!`` there is Python, not a magic. Lines after
    ``last`` are not looked at.

    The tokenizer reads IPython syntax as stray operators; when it gives up on a cell, every
    line counts as the start of a statement (the cell would not run as Python anyway).
    """
    skipped = (tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING, tokenize.ENDMARKER)
    continued: set[int] = set()
    first: int | None = None
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.start[0] > last and first is None:
                break  # past the last line in question
            if token.type in skipped:
                continue
            if token.type == tokenize.NEWLINE:
                if first is not None:
                    continued.update(range(first + 1, token.start[0] + 1))
                first = None
            elif first is None:
                first = token.start[0]
    except (tokenize.TokenError, SyntaxError):
        pass
    return continued


def to_python(cell: Cell) -> PythonCell:
    """``cell`` without its magics, shell escapes and help lines, and the list of what went."""
    lines = cell.source.splitlines()
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None:
        magic = _CELL_MAGIC.match(lines[first])
        if magic:
            dropped = Dropped(cell, first + 1, lines[first], whole_cell=magic.group(1) not in PYTHON_CELL_MAGICS)
            if dropped.whole_cell:
                return PythonCell(cell, "\n" * len(lines), [dropped])
            lines[first] = ""
            return _drop_lines(cell, lines, [dropped])
    return _drop_lines(cell, lines, [])


def _drop_lines(cell: Cell, lines: list[str], dropped: list[Dropped]) -> PythonCell:
    candidates = [i for i, line in enumerate(lines) if _LINE_MAGIC.match(line) or _HELP.match(line)]
    # tokenizing tells a magic from a `%` inside brackets or a string; most cells have none to tell
    continued = _continuation_lines("\n".join(lines), candidates[-1] + 1) if candidates else set()
    for i in candidates:
        line = lines[i]
        if i + 1 in continued:
            continue
        timed = _TIME.match(line)
        dropped.append(Dropped(cell, i + 1, line, kept_statement=timed is not None))
        indent = line[: len(line) - len(line.lstrip())]
        lines[i] = (indent + timed.group("statement")) if timed else f"{indent}pass" if indent else ""
    dropped.sort(key=lambda d: d.line)
    return PythonCell(cell, "\n".join(lines) + ("\n" if lines else ""), dropped)
