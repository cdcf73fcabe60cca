"""``ppo-submit notebook.ipynb``: the module a notebook file's learner meant, and its line map.

The notebook is read with nbformat (``pip install 'ppo-submit[notebook]'``), imported here
only, when a ``.ipynb`` is given. Its code cells lose their magics and shell escapes
(``cells``), then only the exercise's function and what it reads are kept (``closure``).
Nothing in the notebook is executed.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .api import ExerciseSummary, UsageError
from .cells import Cell, Dropped, to_python
from .closure import CellResolver, LineMap, build, scan
from .source import CHOOSE_ON_COMMAND_LINE, match_functions, read_source

#: Largest notebook file read at all. Outputs (plots, images) make notebooks far larger than
#: their code; what is sent is only the code it needs, which the server's own cap bounds.
MAX_NOTEBOOK_BYTES = 64 * 1024 * 1024
INSTALL_HINT = "reading notebooks needs nbformat: pip install 'ppo-submit[notebook]'"


@dataclass(frozen=True)
class NotebookModule:
    """What ``ppo-submit`` sends for a notebook, and what it needs to say where lines are."""

    exercise: str
    function: str
    source: str
    line_map: LineMap
    dropped: tuple[Dropped, ...]
    #: Cells left out because they do not parse (the function's own cell is sent as it is).
    unparsable: tuple[tuple[Cell, int], ...]


def load_nbformat() -> Any:
    """The nbformat module; ``UsageError`` saying how to install it when it is missing."""
    try:
        import nbformat
    except ImportError as exc:
        raise UsageError(INSTALL_HINT) from exc
    return nbformat


def read_cells(path: Path, *, commands: Sequence[str] = ()) -> list[Cell]:
    """The code cells of the notebook at ``path``; ``UsageError`` when it cannot be read as one."""
    try:
        size = path.stat().st_size
    except OSError:
        size = 0  # read_source says what is wrong (no such file, a directory...)
    if size > MAX_NOTEBOOK_BYTES:
        raise UsageError(
            f"{path} is {size / 2**20:.0f} MiB; notebooks over {MAX_NOTEBOOK_BYTES // 2**20} MiB "
            "are not read (clear its outputs: Edit > Clear Outputs of All Cells, then save)"
        )
    text = read_source(path, commands=commands)
    nbformat = load_nbformat()
    logging.getLogger("nbformat").setLevel(logging.CRITICAL)  # schema warnings are not the learner's concern
    try:
        notebook = nbformat.reads(text, as_version=4)
    except nbformat.reader.NotJSONError:
        raise UsageError(
            f"{path} is not a notebook: it is not JSON (is it a .py file renamed? "
            "save it from Jupyter with File > Save)"
        ) from None
    except Exception as exc:  # nbformat raises many types for JSON that is not a notebook
        reason = " ".join(str(exc).split())[:120] or type(exc).__name__
        raise UsageError(f"{path} is JSON but not a Jupyter notebook ({reason})") from None
    return code_cells(notebook)


def code_cells(notebook: Mapping[str, Any]) -> list[Cell]:
    """The code cells of a notebook's JSON (as nbformat or ``json`` reads it), in order."""
    cells: list[Cell] = []
    listed = notebook.get("cells")
    for cell in listed if isinstance(listed, list) else []:
        if not isinstance(cell, Mapping) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source") or ""
        source = "".join(str(s) for s in source) if isinstance(source, list) else str(source)
        count = cell.get("execution_count")
        cells.append(Cell(source, len(cells) + 1, count if type(count) is int and count > 0 else None))
    return cells


def notebook_module(
    path: Path, exercises: Sequence[ExerciseSummary], *, exercise: str | None = None, commands: Sequence[str] = ()
) -> NotebookModule:
    """The module to send for the notebook at ``path``: the exercise's function (found as for
    ``.py`` files, or ``exercise``'s) and what it reads.

    Raises ``UsageError`` for a file that is not a notebook, no or several exercise functions,
    and ``closure.MissingName`` (one sentence) when a name it needs is not defined by a cell.
    """
    return module_of(read_cells(path, commands=commands), exercises, exercise=exercise, name=path.name, shown=str(path))


def module_of(
    cells: Sequence[Cell],
    exercises: Sequence[ExerciseSummary],
    *,
    exercise: str | None = None,
    name: str,
    shown: str | None = None,
    choose: tuple[str, str] = CHOOSE_ON_COMMAND_LINE,
) -> NotebookModule:
    """The module to send for a notebook's code ``cells`` (see :func:`notebook_module`);
    ``name`` is the notebook's file name, ``shown`` how messages name it (its path),
    ``choose`` how they say to name the exercise (``source.match_functions``)."""
    python = [to_python(cell) for cell in cells]
    scanned = scan(python)
    shown = shown or name
    if exercise is None:
        error = next((f"{cell.label}, line {line}" for cell, line in scanned.unparsable), None)
        exercise = match_functions(scanned.functions, exercises, filename=shown, syntax_error=error, choose=choose)
    function = next((str(e.get("function")) for e in exercises if e.get("slug") == exercise), None)
    if function is None:
        known = ", ".join(sorted(str(e.get("slug")) for e in exercises))
        raise UsageError(f"no exercise {exercise!r} on this server ({known}); see `ppo-submit exercises`")
    if function not in scanned.functions:
        raise UsageError(f"{shown} defines no {function}() (the function of {exercise}) in any code cell")
    header = f"Built by ppo-submit from {name}: {function} and what it uses, cell by cell."
    built = build(function, CellResolver(scanned, name), header=header, always=scanned.futures)
    dropped = tuple(d for p in python for d in p.dropped)
    sent = {piece.cell for piece in built.pieces}
    left_out = tuple((cell, line) for cell, line in scanned.unparsable if cell not in sent)
    return NotebookModule(exercise, function, built.source, built.line_map, dropped, left_out)
