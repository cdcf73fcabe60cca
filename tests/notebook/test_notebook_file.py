"""`ppo-submit notebook.ipynb` as a subprocess against the real server: the bad inputs of
``.py`` files get the same clear errors, one line and exit code 2."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook, new_output

from .conftest import BIN, Kernel, reference_function

pytestmark = pytest.mark.slow


def ppo_submit(kernel: Kernel, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "ppo-submit"), *args], env=kernel.env(), capture_output=True, text=True,
                          timeout=300)


def notebook(path: Path, *cells: str) -> Path:
    nbformat.write(new_notebook(cells=[new_code_cell(c) for c in cells]), path)
    return path


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and done.stdout == ""
    [line] = done.stderr.strip().splitlines()
    return line


CASES = {
    "no exercise function": ("import torch\n\ndef train():\n    pass\n",),
    "two exercise functions": (reference_function("gae"), reference_function("whiten")),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_same_error_as_the_same_python_file(kernel: Kernel, tmp_path: Path, case: str) -> None:
    cells = CASES[case]
    py = tmp_path / "work.py"
    py.write_text("\n\n".join(cells))
    ipynb = notebook(tmp_path / "work.ipynb", *cells)
    from_py, from_notebook = one_line(ppo_submit(kernel, str(py))), one_line(ppo_submit(kernel, str(ipynb)))
    assert from_notebook == from_py.replace(str(py), str(ipynb))


def test_a_notebook_that_is_not_json(kernel: Kernel, tmp_path: Path) -> None:
    path = tmp_path / "gae.ipynb"
    path.write_text(reference_function("gae"))  # a .py renamed
    assert "is not a notebook: it is not JSON" in one_line(ppo_submit(kernel, str(path)))


def test_over_the_size_cap_is_the_servers_413_as_for_a_python_file(kernel: Kernel, tmp_path: Path) -> None:
    big = reference_function("gae").replace("import torch\n", "import torch\n\nNOTES = " + repr("x" * 70_000) + "\n")
    big = big.replace("    if values.shape", "    assert NOTES\n    if values.shape", 1)
    py = tmp_path / "big.py"
    py.write_text(big)
    ipynb = notebook(tmp_path / "big.ipynb", big)
    from_py, from_notebook = one_line(ppo_submit(kernel, str(py))), one_line(ppo_submit(kernel, str(ipynb)))
    assert "limit is 65536 bytes" in from_notebook and "SourceTooLarge" in from_notebook
    assert from_py.split("; the limit")[1] == from_notebook.split("; the limit")[1]


def test_outputs_do_not_count_towards_the_cap(kernel: Kernel, tmp_path: Path) -> None:
    path = tmp_path / "plots.ipynb"
    cell = new_code_cell(reference_function("gae"), outputs=[
        new_output("display_data", data={"image/png": "iVBORw0KGgo" + "A" * 500_000})])
    nbformat.write(new_notebook(cells=[cell]), path)
    assert path.stat().st_size > 500_000
    done = ppo_submit(kernel, str(path), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["score"] == 100 and json.loads(done.stdout)["filename"] == "plots.ipynb"


def test_a_syntax_error_points_at_the_cell(kernel: Kernel, tmp_path: Path) -> None:
    path = notebook(tmp_path / "syntax.ipynb", "import torch",
                    "def compute_gae(rewards, values, mask=None, gamma=1.0, lam=0.95):\n    return (rewards +\n")
    done = ppo_submit(kernel, str(path))
    assert done.returncode == 1, done.stderr
    assert f"--> {path}: code cell 2, line 2, column 12" in done.stdout, done.stdout
    assert "2 |     return (rewards +" in done.stdout
