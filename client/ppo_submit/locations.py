"""Where a line of the feedback points, in the learner's own terms.

The server names the file the learner sent (``submissions.filename``) in locations and
tracebacks, with the line numbers of the module it graded. For a ``.py`` file that is the
learner's file: only the path is swapped for the one typed on the command line. For a
notebook the module was built from cells (``closure``); the client kept its line map, and
rewrites each place as ``gae.ipynb: cell 7, line 3`` when it renders. The server needs no
notebook knowledge at all.

Both renderers (the terminal's ``feedback`` and the notebook's ``html``) ask a ``Locator``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from notebook_format.closure import LineMap


class Locator(Protocol):
    """Turns the server's places (built-module lines) into the learner's."""

    #: The name shown in the header (``Submission 42 · gae · typo.py``).
    name: str | None

    def where(self, location: Mapping[str, Any]) -> str:
        """``typo.py:11:28`` or ``gae.ipynb: cell 7, line 3, column 28``."""
        ...

    def line(self, location: Mapping[str, Any]) -> int:
        """The line number shown beside the source line."""
        ...

    def text(self, text: str) -> str:
        """A message or traceback with its ``File "...", line N`` places rewritten."""
        ...


class FileLocator:
    """A ``.py`` file: the sent base name becomes the path the learner typed."""

    def __init__(self, filename: str | None, local_path: str | None = None) -> None:
        self.filename = filename
        self.local_path = local_path
        self.name = local_path or filename

    def where(self, location: Mapping[str, Any]) -> str:
        file = str(location.get("file") or "")
        if self.local_path and (file == self.filename or not self.filename):
            file = self.local_path
        return f"{file}:{location.get('line')}:{location.get('column')}"

    def line(self, location: Mapping[str, Any]) -> int:
        return int(location.get("line") or 0)

    def text(self, text: str) -> str:
        if not self.filename or not self.local_path or self.filename == self.local_path:
            return text
        return text.replace(f'File "{self.filename}"', f'File "{self.local_path}"')


class CellLocator:
    """A module built from notebook cells: each line goes back to its cell."""

    def __init__(self, filename: str | None, line_map: LineMap, described: str | None = None) -> None:
        self.filename = filename
        self.line_map = line_map
        self.name = described or filename
        self._frame = re.compile(rf'File "{re.escape(filename or "submission.py")}", line (\d+)')

    def _place(self, line: int, column: int | None = None) -> str:
        found = self.line_map.locate(line, column)
        if found is None:
            return f"line {line} of what was sent" + (f", column {column}" if column is not None else "")
        label, cell_line, cell_column = found
        return f"{label}, line {cell_line}" + (f", column {cell_column}" if cell_column is not None else "")

    def where(self, location: Mapping[str, Any]) -> str:
        line = int(location.get("line") or 0)
        column = location.get("column")
        place = self._place(line, int(column) if isinstance(column, int) else None)
        return f"{self.name}: {place}" if self.name else place

    def line(self, location: Mapping[str, Any]) -> int:
        line = int(location.get("line") or 0)
        found = self.line_map.locate(line)
        return found[1] if found is not None else line

    def text(self, text: str) -> str:
        prefix = f'File "{self.name}", ' if self.name else "File "
        return self._frame.sub(lambda m: prefix + self._place(int(m.group(1))), text)
