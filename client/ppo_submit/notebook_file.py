"""``ppo-submit notebook.ipynb``: the module a notebook file's learner meant, and its line map.

The file is read and built by ``notebook_format``, the package the server's upload form uses
too: nbformat reads it (``pip install 'ppo-submit[notebook]'``), imported only when a
``.ipynb`` is given; its code cells lose their magics and shell escapes, then only the
exercise's function and what it reads are kept. Nothing in the notebook is executed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from notebook_format.cells import Cell
from notebook_format.module import NotebookModule, module_of
from notebook_format.reader import MAX_NOTEBOOK_BYTES, read_notebook, too_large

from .api import ExerciseSummary
from .source import read_source

__all__ = ["NotebookModule", "notebook_module", "read_cells"]


def read_cells(path: Path, *, commands: Sequence[str] = ()) -> list[Cell]:
    """The code cells of the notebook at ``path``; ``SourceError`` when it cannot be read as
    one, ``UsageError`` when the file cannot be read at all."""
    try:
        size = path.stat().st_size
    except OSError:
        size = 0  # read_source says what is wrong (no such file, a directory...)
    if size > MAX_NOTEBOOK_BYTES:
        raise too_large(str(path), size)  # before reading it: the cap is what may be read
    return read_notebook(read_source(path, commands=commands), str(path))


def notebook_module(
    path: Path, exercises: Sequence[ExerciseSummary], *, exercise: str | None = None, commands: Sequence[str] = ()
) -> NotebookModule:
    """The module to send for the notebook at ``path`` (``notebook_format.module.module_of``)."""
    return module_of(
        read_cells(path, commands=commands), exercises, exercise=exercise, name=path.name, described=str(path)
    )
