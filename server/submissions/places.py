"""Where a line of a notebook submission's feedback is, in the learner's cells.

A module built from notebook cells (``ppo-submit notebook.ipynb``, ``notebook.submit`` in a
kernel, an ``.ipynb`` upload on the dashboard) names where each statement starts in a comment
above it::

    # cell 7, line 3
    def compute_gae(...):

The feedback's locations are lines of the module that ran; a page that shows one for a
submission whose ``filename`` ends in ``.ipynb`` reads these comments back and says
``gae.ipynb: cell 7, line 3, column 12``. The comments are the learner's own text like the rest
of the source: a forged one only relabels that learner's own feedback.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: The comment ``notebook_format.closure.assemble`` writes above each statement from a cell.
CELL_MARK = re.compile(r"^# ((?:code )?cell \d{1,9}), line (\d{1,9})$")
#: The comment above what the kernel helper wrote from live values (no cell to name).
KERNEL_MARK = "# from the kernel's namespace, as it is now"
NOTEBOOK_SUFFIX = ".ipynb"


@dataclass(frozen=True)
class CellPlaces:
    """Lines of the module, back to cells: ``(first, last, cell label, cell line of first)``."""

    spans: tuple[tuple[int, int, str, int], ...]

    @classmethod
    def of(cls, filename: str | None, source: str) -> CellPlaces | None:
        """The places of a notebook submission's module; None for anything else."""
        if not filename or not filename.lower().endswith(NOTEBOOK_SUFFIX):
            return None
        lines = source.splitlines()
        marks = [i for i, line in enumerate(lines) if CELL_MARK.match(line) or line == KERNEL_MARK]
        spans = []
        for n, i in enumerate(marks):
            found = CELL_MARK.match(lines[i])
            end = marks[n + 1] if n + 1 < len(marks) else len(lines)
            while end > i + 1 and not lines[end - 1].strip():
                end -= 1
            if found and end > i + 1:
                spans.append((i + 2, end, found.group(1), int(found.group(2))))
        return cls(tuple(spans)) if spans else None

    def locate(self, line: int) -> tuple[str, int] | None:
        """``("cell 7", 3)`` for a line of the module; None for a line ppo-submit wrote."""
        for first, last, label, cell_line in self.spans:
            if first <= line <= last:
                return label, cell_line + line - first
        return None

    def where(self, file: str, line: int, column: int) -> str:
        """``gae.ipynb: cell 7, line 3, column 12`` (``line 2 of what was sent`` off the cells)."""
        found = self.locate(line)
        place = f"{found[0]}, line {found[1]}" if found else f"line {line} of what was sent"
        return f"{file}: {place}, column {column}"

    def line(self, line: int) -> int:
        """The line number shown beside the source line: the cell's."""
        found = self.locate(line)
        return found[1] if found else line
