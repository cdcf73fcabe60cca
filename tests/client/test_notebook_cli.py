"""``ppo-submit notebook.ipynb`` against the in-memory grader: what is sent, what is said.

The real server, the real jail and a real kernel run the same paths in tests/notebook.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from ppo_submit import notebook_file

from .conftest import Invoke
from .fakes import FakeGrader, graded

FUNCTION = "def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):\n"


def write(path: Path, *cells: str, counts: bool = True) -> Path:
    code = [new_code_cell(c, execution_count=i if counts else None) for i, c in enumerate(cells, 1)]
    nbformat.write(new_notebook(cells=[new_markdown_cell("# Actor loss"), *code]), path)
    return path


@pytest.fixture
def notebook(tmp_path: Path) -> Path:
    return write(
        tmp_path / "actor.ipynb",
        "%matplotlib inline\nimport torch\nimport matplotlib.pyplot as plt\n!nvidia-smi",
        "CLIP = 0.2\nlosses = []",
        FUNCTION + "    ratio = (log_probs_new - log_probs_old).exp()\n    return -(ratio * advantages).mean() * CLIP\n",
        "for step in range(100):\n    losses.append(compute_actor_loss(torch.zeros(3), torch.zeros(3), torch.ones(3)))\n"
        "plt.plot(losses)",
    )


EXPECTED = (
    "# Built by ppo-submit from actor.ipynb: compute_actor_loss and what it uses, cell by cell.\n"
    "\n# cell 2, line 1\nCLIP = 0.2\n"
    "\n# cell 3, line 1\n" + FUNCTION
    + "    ratio = (log_probs_new - log_probs_old).exp()\n    return -(ratio * advantages).mean() * CLIP\n"
)


def test_a_notebook_sends_only_the_function_and_what_it_uses(invoke: Invoke, grader: FakeGrader,
                                                              notebook: Path) -> None:
    result = invoke(str(notebook))
    assert result.exit_code == 0, result.output
    [posted] = grader.posted()
    body = json.loads(posted.content)
    assert body == {"exercise": "actor-loss", "source": EXPECTED, "filename": "actor.ipynb"}
    assert "not sent (IPython syntax): cell 1, line 1: %matplotlib inline" in result.stderr
    assert "cell 1, line 4: !nvidia-smi" in result.stderr


def test_show_source_prints_exactly_what_would_be_sent_and_sends_nothing(invoke: Invoke, grader: FakeGrader,
                                                                         notebook: Path) -> None:
    result = invoke(str(notebook), "--show-source")
    assert result.exit_code == 0 and result.stdout == EXPECTED
    assert grader.posted() == []


def test_show_source_of_a_python_file_is_the_file(invoke: Invoke, grader: FakeGrader, solution: Path) -> None:
    result = invoke(str(solution), "--show-source")
    assert result.exit_code == 0 and result.stdout == solution.read_text()
    assert grader.posted() == []


def test_feedback_names_the_cell_and_its_line(invoke: Invoke, grader: FakeGrader, notebook: Path) -> None:
    line = EXPECTED.splitlines().index("    ratio = (log_probs_new - log_probs_old).exp()") + 1
    location = {"file": "actor.ipynb", "line": line, "column": 31, "end_column": 44, "function": "compute_actor_loss",
                "source": "    ratio = (log_probs_new - log_probs_old).exp()"}
    cause = {"exception": "NameError", "message": "name 'x' is not defined", "location": location,
             "headline": "Your function raised NameError on every call (2 checks)", "phase": "call",
             "checks": ["value"], "checks_line": "value", "count": 2,
             "traceback": f'Traceback:\n  File "actor.ipynb", line {line}, in compute_actor_loss\n'}
    grader.final = {**graded(0.0), "filename": "actor.ipynb", "feedback": {
        "root_causes": [cause], "diagnosis": [],
        "summary": {"checks_passed": 0, "checks_total": 2, "headline": "", "next_step": "Fix it.",
                    "details": [{"check": "value", "cause": 1, "text": ""}]}}}
    result = invoke(str(notebook), "--verbose")
    assert result.exit_code == 1
    assert f"--> {notebook}: cell 3, line 2, column 31" in result.stdout, result.stdout
    assert "2 |     ratio = (log_probs_new - log_probs_old).exp()" in result.stdout
    # The console wraps at its width, inside a long path too (a parallel worker's tmp path is longer).
    flat = "".join(result.stdout.split())
    assert "".join(f'File "{notebook}", cell 3, line 2, in compute_actor_loss'.split()) in flat, result.stdout


def test_without_execution_counts_cells_are_numbered_by_position(invoke: Invoke, tmp_path: Path) -> None:
    path = write(tmp_path / "fresh.ipynb", "import torch", FUNCTION + "    return torch.zeros(())\n", counts=False)
    result = invoke(str(path), "--show-source")
    assert "# code cell 1, line 1\nimport torch\n" in result.stdout
    assert "# code cell 2, line 1\ndef compute_actor_loss" in result.stdout


# --------------------------------------------------------------------------- bad inputs: exit 2, one line


def one_line_error(result) -> str:  # type: ignore[no-untyped-def]
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def test_a_notebook_that_is_not_json(invoke: Invoke, grader: FakeGrader, tmp_path: Path) -> None:
    path = tmp_path / "broken.ipynb"
    path.write_text('{"cells": [ {"cell_type": "code", "source": "def compute_actor_loss(')
    assert "is not a notebook: it is not JSON" in one_line_error(invoke(str(path)))
    assert grader.posted() == []


@pytest.mark.parametrize("text", ["[1, 2]", "{}", '{"nbformat": 4, "cells": 3}'])
def test_json_that_is_not_a_notebook(invoke: Invoke, tmp_path: Path, text: str) -> None:
    path = tmp_path / "data.ipynb"
    path.write_text(text)
    message = one_line_error(invoke(str(path)))
    assert "not a Jupyter notebook" in message or "not a notebook" in message


def test_a_notebook_with_no_exercise_function(invoke: Invoke, tmp_path: Path) -> None:
    path = write(tmp_path / "empty.ipynb", "import torch\nx = 1", "def train():\n    pass")
    message = one_line_error(invoke(str(path)))
    assert "defines none of the exercise functions" in message and "--exercise SLUG" in message


def test_a_notebook_with_two_exercise_functions(invoke: Invoke, tmp_path: Path) -> None:
    path = write(tmp_path / "two.ipynb", FUNCTION + "    return 0\n",
                 "def compute_value_loss(values, returns):\n    return 0\n")
    assert "defines functions of several exercises" in one_line_error(invoke(str(path)))


def test_a_near_miss_function_name_gets_did_you_mean(invoke: Invoke, tmp_path: Path) -> None:
    path = write(tmp_path / "typo.ipynb", "def compute_actor_los(a, b, c):\n    return 0\n")
    assert "did you mean compute_actor_loss?" in one_line_error(invoke(str(path)))


def test_a_missing_helper_is_one_sentence_and_nothing_is_sent(invoke: Invoke, grader: FakeGrader,
                                                              tmp_path: Path) -> None:
    path = write(tmp_path / "helper.ipynb", FUNCTION + "    return clipped_ratio(log_probs_new)\n")
    message = one_line_error(invoke(str(path)))
    assert "`clipped_ratio`" in message and "(cell 1, line 2)" in message
    assert grader.posted() == []


def test_a_notebook_file_over_the_reading_cap(invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path / "huge.ipynb", FUNCTION + "    return 0\n")
    monkeypatch.setattr(notebook_file, "MAX_NOTEBOOK_BYTES", 100)
    assert "are not read" in one_line_error(invoke(str(path)))


def test_the_exercise_option_picks_the_function(invoke: Invoke, grader: FakeGrader, tmp_path: Path) -> None:
    path = write(tmp_path / "two.ipynb", FUNCTION + "    return 0\n", "def compute_value_loss(v, r):\n    return 1\n")
    result = invoke(str(path), "--exercise", "value-loss", "--show-source")
    assert result.exit_code == 0 and "def compute_value_loss" in result.stdout
    assert "compute_actor_loss" not in result.stdout.split("\n", 1)[1]


def test_a_missing_file_is_the_same_error_as_for_python_files(invoke: Invoke, tmp_path: Path) -> None:
    assert "no such file" in one_line_error(invoke(str(tmp_path / "nope.ipynb")))


def test_starter_notebook_holds_the_contract_the_function_the_tests_and_submit(invoke: Invoke) -> None:
    result = invoke("starter", "actor-loss", "--notebook")
    assert result.exit_code == 0, result.output
    nb = nbformat.reads(result.stdout, as_version=4)
    nbformat.validate(nb)
    kinds = [(c.cell_type, c.source.splitlines()[0] if c.source else "") for c in nb.cells]
    assert kinds[-1] == ("code", "from ppo_submit import notebook")
    assert "notebook.submit(compute_actor_loss)" in nb.cells[-1].source
    assert any(kind == "code" and first.startswith("def compute_actor_loss") for kind, first in kinds)
