"""notebook_format.reader: one parser, one set of caps and one set of sentences for both sides
(``ppo-submit notebook.ipynb`` and the dashboard's upload form), and work bounded by the cells,
not by what the file carries."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from notebook_format import reader
from notebook_format.errors import OverCap, SourceError
from notebook_format.reader import MAX_CELLS, MAX_NOTEBOOK_BYTES, read_notebook
from ppo_submit.notebook_file import read_cells
from server.dashboard import upload

FUNCTION = "def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):\n    return 0\n"


def _cell(source: Any, **extra: Any) -> dict[str, Any]:
    return {"cell_type": "code", "source": source, "metadata": {}, "outputs": [], "execution_count": None, **extra}


def _notebook(*cells: dict[str, Any], **top: Any) -> bytes:
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": list(cells), **top}).encode()


def _both(tmp_path: Path, name: str, data: bytes) -> tuple[str, str]:
    """(what the CLI says, what the upload form says) of the same file, or its module's source."""
    path = tmp_path / name
    path.write_bytes(data)
    try:
        said_cli = "read: " + "".join(c.source for c in read_cells(path))
    except SourceError as exc:
        said_cli = exc.message.replace(str(path), name)
    try:
        prepared = upload.prepare(upload.Upload({}, name, data), "/", max_source_bytes=1 << 20, visible=None)
        said_form = "read: " + prepared.source
    except upload.UploadRefused as exc:
        said_form = exc.text.removesuffix(".")
    return said_cli, said_form


@pytest.mark.parametrize(("data", "expected"), [
    (b'{"cells": [', "broken.ipynb is not a notebook: it is not JSON"),
    (b"[1, 2]", "broken.ipynb is JSON but not a Jupyter notebook (it has no cells)"),
    (b'{"nbformat": 4, "cells": 3}', "broken.ipynb is JSON but not a Jupyter notebook (it has no cells)"),
    (b'{"nbformat": 99, "cells": []}', "broken.ipynb is JSON but not a Jupyter notebook (Unsupported nbformat"),
    (b"[" * 100_000 + b"]" * 100_000, "broken.ipynb is not a notebook: it is not JSON"),
    (_notebook(*[_cell("x = 1")] * (MAX_CELLS + 1)), f"broken.ipynb has {MAX_CELLS + 1} cells; notebooks of more"),
])
def test_both_sides_refuse_the_same_file_with_the_same_sentence(tmp_path: Path, data: bytes, expected: str) -> None:
    said_cli, said_form = _both(tmp_path, "broken.ipynb", data)
    assert said_cli.startswith(expected), said_cli
    assert said_form == said_cli


def test_the_one_size_cap_holds_on_both_sides_before_anything_is_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    big = _notebook(_cell(FUNCTION), metadata={"pad": "x" * MAX_NOTEBOOK_BYTES})
    monkeypatch.setattr(reader.json, "loads", lambda *a, **k: pytest.fail("a notebook over the cap was parsed"))
    with pytest.raises(OverCap, match="notebooks over 8 MiB are not read"):
        read_notebook(big, "big.ipynb")
    path = tmp_path / "big.ipynb"
    path.write_bytes(big)
    with pytest.raises(OverCap, match="notebooks over 8 MiB are not read"):
        read_cells(path)
    assert upload.MAX_UPLOAD_BYTES > MAX_NOTEBOOK_BYTES  # the form carries a notebook of the cap, and its fields


def test_nbformat_upgrades_an_old_notebook_as_jupyter_does() -> None:
    v3 = {"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": [{"cells": [
        {"cell_type": "code", "input": ["import torch\n", "x = 1\n"], "outputs": [], "language": "python",
         "prompt_number": 4}]}]}
    (cell,) = read_notebook(json.dumps(v3), "old.ipynb")
    assert (cell.source, cell.label) == ("import torch\nx = 1\n", "cell 4")


def test_nbformat_is_given_the_cells_and_nothing_else(monkeypatch: pytest.MonkeyPatch) -> None:
    """Outputs, attachments and metadata (most of a notebook's bytes, and any a hostile file
    adds) never reach nbformat: its work is bounded by the cells' code, counted here."""
    given: list[int] = []
    real = nbformat.reads
    monkeypatch.setattr(nbformat, "reads", lambda text, **kw: given.append(len(text)) or real(text, **kw))
    outputs = [{"output_type": "stream", "name": "stdout", "text": ["out\n"] * 200}] * 10
    heavy = {"k%d" % i: {"deep": [1, 2, 3]} for i in range(200)}
    cells = [_cell(FUNCTION, outputs=outputs, metadata=heavy, attachments={"a.png": {"image/png": "A" * 4000}})] * 100
    data = _notebook(*cells, metadata=heavy, extra={"junk": "x" * 100_000})
    assert len(data) > 2 << 20
    found = read_notebook(data, "heavy.ipynb")
    assert [c.source for c in found] == [FUNCTION] * 100
    assert given and given[0] < 30_000, f"nbformat read {given[0]} bytes of a {len(data)}-byte file"


def test_a_notebook_written_by_jupyter_reads_the_same_on_both_sides(tmp_path: Path) -> None:
    data = nbformat.writes(new_notebook(cells=[new_markdown_cell("# Actor loss"), new_code_cell("import torch"),
                                               new_code_cell(FUNCTION, execution_count=3)])).encode()
    said_cli, said_form = _both(tmp_path, "mine.ipynb", data)
    assert said_cli == "read: import torch" + FUNCTION
    assert "def compute_actor_loss" in said_form and "# cell 3, line 1" in said_form
