"""A notebook file's bytes to its code cells, read as Jupyter reads it, with one set of caps.

The steps, each bounded by the one before (the file is the learner's, maybe hostile):

1. at most :data:`MAX_NOTEBOOK_BYTES` (outputs make notebooks large: the sentence says to
   clear them);
2. JSON (``json.loads``; nested too deep for it is not JSON either);
3. at most :data:`MAX_CELLS` cells, counted before anything is built;
4. only what a module is built from is kept (each cell's kind, source and run count; no
   outputs, attachments or metadata), so nbformat's work below is bounded by the cells, not by
   what the file carries;
5. nbformat upgrades it to version 4 and checks it, as Jupyter does when it opens a file
   (its schema warnings are not the learner's concern);
6. its code cells, in order (:func:`code_cells`).

Every refusal is a :class:`~notebook_format.errors.SourceError` whose sentence names the file
as the caller does (its path on the command line, its name in the upload form). nbformat is
imported on the first read (``pip install 'ppo-submit[notebook]'`` on a learner's machine; the
server depends on it).
"""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Mapping
from typing import Any

from .cells import Cell
from .errors import OverCap, SourceError

#: Largest notebook file read at all, on both sides (the upload form's body has a little more,
#: for its other fields). Outputs (plots, images) make a notebook far larger than its code;
#: what is sent is only the code it needs, which the server's source cap bounds.
MAX_NOTEBOOK_BYTES = 8 * 1024 * 1024
#: Most cells (of every kind) read: a long notebook has a few hundred.
MAX_CELLS = 2000
INSTALL_HINT = "reading notebooks needs nbformat: pip install 'ppo-submit[notebook]'"

#: What is kept of a cell and of the notebook for nbformat (version 4, and 3's worksheets).
_CELL_KEYS = frozenset({"cell_type", "source", "input", "execution_count", "prompt_number", "id", "language", "level"})
_TOP_KEYS = frozenset({"nbformat", "nbformat_minor", "cells", "worksheets"})


def load_nbformat() -> Any:
    """The nbformat module; ``SourceError`` saying how to install it when it is missing."""
    try:
        import nbformat
    except ImportError:
        raise SourceError(INSTALL_HINT) from None
    return nbformat


def too_large(name: str, size: int | None = None) -> OverCap:
    """The refusal of a notebook over :data:`MAX_NOTEBOOK_BYTES` (``size``: its size, when known)."""
    what = f"is {size / 2**20:.0f} MiB" if size is not None else "is larger than that"
    return OverCap(
        f"{name} {what}; notebooks over {MAX_NOTEBOOK_BYTES // 2**20} MiB are not read "
        "(clear its outputs: Edit > Clear Outputs of All Cells, then save)"
    )


def not_json(name: str) -> SourceError:
    """The refusal of a file that is not JSON at all."""
    return SourceError(
        f"{name} is not a notebook: it is not JSON (is it a .py file renamed? save it from Jupyter with File > Save)"
    )


def not_a_notebook(name: str, reason: str) -> SourceError:
    """The refusal of JSON that is not a Jupyter notebook."""
    return SourceError(f"{name} is JSON but not a Jupyter notebook ({reason})")


def read_notebook(data: bytes | str, name: str) -> list[Cell]:
    """The code cells of the notebook file ``data`` (its bytes, or its text), by the steps
    above; ``SourceError`` with one sentence naming ``name`` when it is not one, or over a cap."""
    size = len(data) if isinstance(data, bytes) else len(data.encode(errors="replace"))
    if size > MAX_NOTEBOOK_BYTES:
        raise too_large(name, size)
    try:
        parsed = json.loads(data)
    except (ValueError, RecursionError):
        raise not_json(name) from None
    lists = _cell_lists(parsed)
    if lists is None:
        raise not_a_notebook(name, "it has no cells")
    count = sum(len(cells) for cells in lists)
    if count > MAX_CELLS:
        raise OverCap(
            f"{name} has {count} cells; notebooks of more than {MAX_CELLS} cells are not read "
            "(keep the exercise's work in a smaller notebook, or send the function as a .py file)"
        )
    nbformat = load_nbformat()
    logging.getLogger("nbformat").setLevel(logging.CRITICAL)  # schema warnings are not the learner's concern
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            notebook = nbformat.reads(json.dumps(_kept(parsed)), as_version=4)
    except Exception as exc:  # nbformat raises many types for JSON that is not a notebook
        raise not_a_notebook(name, " ".join(str(exc).split())[:120] or type(exc).__name__) from None
    return code_cells(notebook)


def _cell_lists(parsed: Any) -> list[list[Any]] | None:
    """The notebook's lists of cells (version 4's ``cells``; version 3's, per worksheet), or
    None when it has none."""
    if not isinstance(parsed, dict):
        return None
    lists = [parsed["cells"]] if isinstance(parsed.get("cells"), list) else []
    worksheets = parsed.get("worksheets")
    if isinstance(worksheets, list):
        lists += [w["cells"] for w in worksheets if isinstance(w, dict) and isinstance(w.get("cells"), list)]
    return lists or None


def _kept(parsed: dict[str, Any]) -> dict[str, Any]:
    """What nbformat is given: the notebook without what no module is built from (outputs,
    attachments, metadata, unknown keys), each cell's source one string, empty metadata where
    the format wants some."""
    kept: dict[str, Any] = {k: v for k, v in parsed.items() if k in _TOP_KEYS}
    kept["metadata"] = {}
    if isinstance(kept.get("cells"), list):
        kept["cells"] = [_kept_cell(c) for c in kept["cells"]]
    if isinstance(kept.get("worksheets"), list):
        kept["worksheets"] = [
            {"metadata": {}, "cells": [_kept_cell(c) for c in w["cells"]]}
            for w in kept["worksheets"]
            if isinstance(w, dict) and isinstance(w.get("cells"), list)
        ]
    return kept


def _kept_cell(cell: Any) -> Any:
    if not isinstance(cell, dict):
        return cell  # nbformat says what is wrong with it
    kept = {k: v for k, v in cell.items() if k in _CELL_KEYS}
    for key in ("source", "input"):
        text = kept.get(key)
        if isinstance(text, list) and all(isinstance(line, str) for line in text):
            kept[key] = "".join(text)
    kept["metadata"] = {}
    if cell.get("cell_type") == "code":
        kept["outputs"] = []
    return kept


def code_cells(notebook: Mapping[str, Any]) -> list[Cell]:
    """The code cells of a version-4 notebook (as nbformat gives it), in order."""
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
