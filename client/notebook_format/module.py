"""A notebook's code cells to the module its learner meant: the exercise's function and what it reads.

Both sides call :func:`module_of` on the cells :func:`notebook_format.reader.read_notebook`
gave them: ``ppo-submit notebook.ipynb`` and the dashboard's upload form, so the same notebook
is sent as the same module, or refused with the same sentence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .cells import Cell, Dropped, to_python
from .closure import CellResolver, LineMap, build, scan
from .errors import SourceError
from .functions import CHOOSE_ON_COMMAND_LINE, Exercises, match_functions


@dataclass(frozen=True)
class NotebookModule:
    """What is sent for a notebook, and what is needed to say where its lines are."""

    exercise: str
    function: str
    source: str
    line_map: LineMap
    dropped: tuple[Dropped, ...]
    #: Cells left out because they do not parse (the function's own cell is sent as it is).
    unparsable: tuple[tuple[Cell, int], ...]


def module_of(
    cells: Sequence[Cell],
    exercises: Exercises,
    *,
    exercise: str | None = None,
    name: str,
    described: str | None = None,
    choose: tuple[str, str] = CHOOSE_ON_COMMAND_LINE,
) -> NotebookModule:
    """The module to send for a notebook's code ``cells``: the exercise's function (found by
    the functions the cells define, or ``exercise``'s) and what it reads. ``name`` is the
    notebook's file name, ``described`` how messages name it (its path), ``choose`` how they say
    to name the exercise (``functions.match_functions``).

    Raises ``SourceError`` for no or several exercise functions, and ``closure.MissingName``
    (one sentence) when a name it needs is not defined by a cell.
    """
    python = [to_python(cell) for cell in cells]
    scanned = scan(python)
    described = described or name
    if exercise is None:
        error = next((f"{cell.label}, line {line}" for cell, line in scanned.unparsable), None)
        exercise = match_functions(scanned.functions, exercises, filename=described, syntax_error=error, choose=choose)
    function = next((str(e.get("function")) for e in exercises if e.get("slug") == exercise), None)
    if function is None:
        known = ", ".join(sorted(str(e.get("slug")) for e in exercises))
        raise SourceError(f"no exercise {exercise!r} on this server ({known}); see `ppo-submit exercises`")
    if function not in scanned.functions:
        raise SourceError(f"{described} defines no {function}() (the function of {exercise}) in any code cell")
    header = f"Built by ppo-submit from {name}: {function} and what it uses, cell by cell."
    built = build(function, CellResolver(scanned, name), header=header, always=scanned.futures)
    dropped = tuple(d for p in python for d in p.dropped)
    sent = {piece.cell for piece in built.pieces}
    left_out = tuple((cell, line) for cell, line in scanned.unparsable if cell not in sent)
    return NotebookModule(exercise, function, built.source, built.line_map, dropped, left_out)
