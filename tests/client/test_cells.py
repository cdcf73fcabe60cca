"""Notebook cells as Python: IPython syntax dropped line for line, and reported."""

from __future__ import annotations

import ast

import pytest

from notebook_format.cells import Cell, to_python


def test_magics_shell_escapes_and_help_are_dropped_without_moving_lines() -> None:
    source = (
        "%matplotlib inline\n"
        "import torch\n"
        "!pip install einops\n"
        "files = !ls\n"
        "def f(x):\n"
        "    %who\n"
        "    return x\n"
        "f?\n"
        "??f\n"
    )
    python = to_python(Cell(source, position=2, execution_count=7))
    lines = python.text.splitlines()
    assert lines[1] == "import torch" and lines[4] == "def f(x):" and lines[6] == "    return x"
    assert lines[5] == "    pass"  # an indented magic keeps its block valid
    assert [d.line for d in python.dropped] == [1, 3, 4, 6, 8, 9]
    assert python.dropped[0].describe() == "cell 7, line 1: %matplotlib inline"
    ast.parse(python.text)


def test_percent_and_bang_inside_strings_and_brackets_are_python() -> None:
    source = 'doc = """\n%not a magic\n!nor this\n"""\ns = ("%d"\n     % 3)\nok = x != 3\n'
    python = to_python(Cell(source, position=1))
    assert python.dropped == [] and python.text == source


@pytest.mark.parametrize(("magic", "kept"), [("%%time", True), ("%%capture out", True), ("%%bash", False),
                                             ("%%writefile helpers.py", False)])
def test_cell_magics_keep_a_python_body_only(magic: str, kept: bool) -> None:
    python = to_python(Cell(f"{magic}\nx = 1\n", position=3))
    assert ("x = 1" in python.text) is kept
    assert len(python.dropped) == 1 and python.dropped[0].whole_cell is not kept
    assert python.dropped[0].describe().startswith("code cell 3, line 1: %%")


def test_a_cell_that_is_not_python_stays_as_it_is() -> None:
    python = to_python(Cell("def f(:\n    !ls\n", position=1))
    assert python.text.startswith("def f(:") and [d.line for d in python.dropped] == [2]


def test_labels_use_the_execution_count_where_known() -> None:
    assert Cell("", position=3, execution_count=12).label == "cell 12"
    assert Cell("", position=3).label == "code cell 3"


def test_time_keeps_the_statement_it_times() -> None:
    python = to_python(Cell("%time import torch\nx = 1\n", position=1, execution_count=2))
    assert python.text == "import torch\nx = 1\n"
    assert python.dropped[0].describe() == "cell 2, line 1: %time import torch (its statement is kept)"
