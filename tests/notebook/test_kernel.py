"""Issue 26's acceptance, in a real Jupyter kernel against a real server and the real jail.

Each test runs a notebook top to bottom with nbclient, as a learner would in Jupyter, and
reads what its cells showed.
"""

from __future__ import annotations

import json
import subprocess

import nbformat
import pytest

from exercises.registry import get_exercise

from .conftest import BIN, Kernel, reference_function

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

SUBMIT = "from ppo_submit import notebook\nresult = notebook.submit(compute_gae)\nresult"


def test_a_starter_notebook_filled_in_correctly_scores_100(kernel: Kernel) -> None:
    made = subprocess.run([str(BIN / "ppo-submit"), "starter", "gae", "--notebook"], env=kernel.env(),
                          capture_output=True, text=True, timeout=60, check=True)
    notebook = nbformat.reads(made.stdout, as_version=4)
    [function_cell] = [c for c in notebook.cells if c.cell_type == "code" and c.source.startswith("def compute_gae")]
    function_cell.source = reference_function("gae")
    run = kernel.run(notebook)
    assert run.errors() == []
    codes = [i for i, c in enumerate(notebook.cells) if c.cell_type == "code"]
    assert "self-tests passed" in run.text(codes[-2])
    shown = run.text(codes[-1])
    assert "Verdict: graded · Score: 100 / 100" in shown, shown
    assert "graded · 100 / 100>" in shown  # the cell's value: the result, in one line
    assert "Score: 100 / 100" in run.html(codes[-1])


def test_a_function_redefined_in_a_later_cell_sends_the_later_version(kernel: Kernel) -> None:
    gae = get_exercise("gae")
    wrong = next(m for m in gae.mistakes if m.key == "discount-matrix").source(gae.function_name)
    run = kernel.cells(
        wrong,
        "import torch\nprint(compute_gae(torch.ones(1, 3), torch.zeros(1, 3))[0])",
        reference_function("gae"),
        "from ppo_submit import notebook\nprint(notebook.source(compute_gae))",
        SUBMIT,
    )
    assert run.errors() == []
    sent = run.text(4)
    assert sent.count("def compute_gae") == 1 and reference_function("gae").strip().splitlines()[-1] in sent
    assert "# cell 3, line " in sent and "# cell 1," not in sent and "# cell 2," not in sent
    assert "Score: 100 / 100" in run.text(5)

    # the same notebook, saved, from the terminal: the later definition too
    path = kernel.write(run, "redefined.ipynb")
    done = subprocess.run([str(BIN / "ppo-submit"), str(path), "--json"], env=kernel.env(), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["score"] == 100


def test_magics_plots_and_a_training_loop_send_only_the_function_and_its_helpers(kernel: Kernel) -> None:
    run = kernel.cells(
        "%env PPO_DEMO=1\n!echo installing\n%time import torch\nimport math",
        "from IPython.display import SVG, display\n\n"
        "def plot(values, width=200, height=60):\n"
        "    lo, hi = min(values), max(values)\n"
        "    points = ' '.join(f'{i * width / (len(values) - 1):.1f},{height - (v - lo) / ((hi - lo) or 1) * height:.1f}'\n"
        "                      for i, v in enumerate(values))\n"
        "    display(SVG(f'<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\">'\n"
        "                f'<polyline fill=\"none\" stroke=\"black\" points=\"{points}\"/></svg>'))",
        "LAM = 0.95\n\n"
        "def valid_of(rewards, mask):\n"
        "    return torch.ones_like(rewards, dtype=torch.bool) if mask is None else mask != 0\n\n"
        "def compute_gae(rewards, values, mask=None, gamma=1.0, lam=LAM):\n"
        + reference_function("gae").split("def compute_gae(rewards, values, mask=None, gamma=1.0, lam=0.95):\n", 1)[1],
        "history = []\nfor step in range(20):\n"
        "    adv, ret = compute_gae(torch.randn(2, 5), torch.randn(2, 5))\n"
        "    history.append(float(adv.mean()))\nplot(history)",
        "%%capture scratch\nprint('scratch test')\nassert compute_gae(torch.zeros(1, 2), torch.zeros(1, 2))[0].sum() == 0",
        "from ppo_submit import notebook\nprint(notebook.source(compute_gae))",
        SUBMIT,
    )
    assert run.errors() == []
    assert any("image/svg+xml" in o.get("data", {}) for o in run.cell(4)["outputs"]), "the plot was drawn"
    sent = run.text(6)
    assert "def compute_gae" in sent and "import torch" in sent and "LAM = 0.95" in sent
    for absent in ("def plot", "SVG", "history", "for step", "scratch", "%", "!echo", "PPO_DEMO", "valid_of",
                   "import math"):
        assert absent not in sent, (absent, sent)
    compile(sent, "sent.py", "exec")
    assert "Score: 100 / 100" in run.text(7)

    # from the terminal, the saved notebook sends the same statements; each magic is reported
    path = kernel.write(run, "busy.ipynb")
    shown = subprocess.run([str(BIN / "ppo-submit"), str(path), "--show-source"], env=kernel.env(),
                           capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert [line for line in shown.stdout.strip().splitlines() if not line.startswith("#")] == [
        line for line in sent.strip().splitlines() if not line.startswith("#")]
    assert "not sent (IPython syntax): cell 1, line 1: %env PPO_DEMO=1" in shown.stderr
    assert "cell 1, line 3: %time import torch (its statement is kept)" in shown.stderr
    assert "cell 5, line 1: %%capture scratch" in shown.stderr


def test_a_missing_helper_gives_one_clear_sentence_and_sends_nothing(kernel: Kernel) -> None:
    before = len(kernel.submissions())
    run = kernel.cells(
        "import torch",
        "def compute_gae(rewards, values, mask=None, gamma=1.0, lam=0.95):\n"
        "    deltas = rewards - values\n"
        "    return discount_cumsum(deltas, gamma * lam), values",
        SUBMIT,
        "%load_ext ppo_submit\n%ppo_submit compute_gae",
    )
    assert run.errors() == []
    for cell in (3, 4):
        shown = run.text(cell).strip()
        assert shown.startswith("error: compute_gae uses `discount_cumsum` (cell 2, line 3)"), shown
        assert "the kernel has no `discount_cumsum`" in shown and shown.count("\n") == 0
    assert len(kernel.submissions()) == before


def test_a_helper_a_later_cell_rebinds_and_a_computed_variable_are_named(kernel: Kernel) -> None:
    run = kernel.cells(
        "import torch",
        "def discount(x, factor):\n    return x * factor",
        "def compute_gae(rewards, values, mask=None, gamma=1.0, lam=0.95):\n"
        "    return discount(rewards, gamma) * SCALE, values",
        "discount = 0.99\nSCALE = torch.randn(3)",
        SUBMIT,
    )
    shown = run.text(5)
    assert "`discount`" in shown and "cell 2, line 1" in shown and "cell 4, line 1" in shown, shown
    assert "also missing: `SCALE`" in shown


def test_feedback_names_the_cell_and_the_line_and_shows_progress(kernel: Kernel) -> None:
    run = kernel.cells(
        "import torch",
        "# md: The function:",
        "def compute_gae(rewards, values, mask=None, gamma=1.0, lam=0.95):\n"
        "    advantages = torch.zeros_like(rewards)\n"
        "    return advantages.not_a_method(), values",
        SUBMIT,
    )
    counts = [c.get("execution_count") for c in run.notebook.cells]
    function_count = counts[3]
    shown = run.text(4)
    assert f"notebook.ipynb: cell {function_count}, line 3, column" in shown, shown
    assert "3 |     return advantages.not_a_method(), values" in shown
    assert f"cell {function_count}, line 3" in run.html(4)
    progress = [text for index, kind, text in run.displays
                if index == 4 and any(word in text for word in ("queued", "running", "waiting for the verdict"))]
    assert progress and progress[0].startswith("Submission "), run.displays


def test_login_by_argument_environment_and_stored_login(kernel: Kernel) -> None:
    stored = kernel.home / "stored-config"
    login = subprocess.run([str(BIN / "ppo-submit"), "login", "--server", kernel.server.url, "--token", kernel.token],
                           env=kernel.env(XDG_CONFIG_HOME=str(stored), PPO_GRADER_URL="", PPO_GRADER_TOKEN=""),
                           capture_output=True, text=True, timeout=60)
    assert login.returncode == 0, login.stderr
    before = len(kernel.submissions())
    no_login = kernel.env(PPO_GRADER_URL="", PPO_GRADER_TOKEN="", XDG_CONFIG_HOME=str(kernel.home / "nobody"))
    run = kernel.cells(
        reference_function("gae"),
        "import os\nfrom ppo_submit import notebook\n"
        f"print(notebook.submit(compute_gae, server={kernel.server.url!r}, token={kernel.token!r}))",
        f"os.environ['PPO_GRADER_URL'] = {kernel.server.url!r}\nos.environ['PPO_GRADER_TOKEN'] = {kernel.token!r}\n"
        "print(notebook.submit(compute_gae))",
        "del os.environ['PPO_GRADER_URL'], os.environ['PPO_GRADER_TOKEN']\nprint(notebook.submit(compute_gae))",
        f"os.environ['XDG_CONFIG_HOME'] = {str(stored)!r}\nprint(notebook.submit(compute_gae))",
        env=no_login,
    )
    assert run.errors() == []
    for cell in (2, 3, 5):
        assert "graded · 100 / 100>" in run.text(cell), (cell, run.text(cell))
    assert "error: not logged in" in run.text(4) and "None" in run.text(4)
    assert len(kernel.submissions()) == before + 3
