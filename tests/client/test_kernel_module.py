"""What a kernel submission sends, in a real IPython shell run in-process (the same shell class
ipykernel drives; tests/notebook runs the whole path in a real Jupyter kernel)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config

from ppo_submit.api import UsageError
from notebook_format.closure import MissingName
from ppo_submit.kernel import kernel_module


@pytest.fixture
def shell() -> Iterator[InteractiveShell]:
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    InteractiveShell.clear_instance()
    made = InteractiveShell.instance(config=config)
    yield made
    InteractiveShell.clear_instance()


def run(shell: InteractiveShell, *cells: str) -> None:
    for cell in cells:
        result = shell.run_cell(cell, store_history=True)
        assert result.success, result.error_in_exec or result.error_before_exec


def sent(shell: InteractiveShell, name: str = "compute_gae") -> str:
    return kernel_module(shell, shell.user_ns[name])[1].source


def code_of(source: str) -> list[str]:
    return [line for line in source.splitlines() if line.strip() and not line.startswith("#")]


def test_the_live_function_and_the_helpers_it_uses(shell: InteractiveShell) -> None:
    run(shell,
        "import math\nimport json",
        "SCALE = 2.0\ndata = [math.sqrt(i) for i in range(3)]",
        "def helper(x):\n    return x * SCALE",
        "def compute_gae(rewards, values):\n    return helper(rewards) + math.pi",
        "for _ in range(3):\n    compute_gae(1, 2)")
    assert code_of(sent(shell)) == ["import math", "SCALE = 2.0", "def helper(x):", "    return x * SCALE",
                                    "def compute_gae(rewards, values):", "    return helper(rewards) + math.pi"]


def test_the_cell_run_last_wins_even_when_it_is_an_older_cell_run_again(shell: InteractiveShell) -> None:
    first = "def compute_gae(rewards, values):\n    return 1"
    run(shell, first, "def compute_gae(rewards, values):\n    return 2", first)
    source = sent(shell)
    assert "return 1" in source and "return 2" not in source and "# cell 3, line 1" in source


def test_a_value_with_no_statement_behind_it_is_written_from_its_repr(shell: InteractiveShell) -> None:
    run(shell, "exec('LIMITS = (1, 2.5, \"x\")')", "import os as system",
        "def compute_gae(rewards, values):\n    return LIMITS, system.sep")
    source = sent(shell)
    assert "LIMITS = (1, 2.5, 'x')" in source and "import os as system" in source
    assert source.index("# from the kernel's namespace") < source.index("def compute_gae")


def test_a_constant_changed_since_its_cell_ran_is_sent_as_it_is_now(shell: InteractiveShell) -> None:
    run(shell, "GAMMA = 0.9", "def bump():\n    global GAMMA\n    GAMMA = 0.5", "bump()",
        "def compute_gae(rewards, values):\n    return GAMMA")
    assert "GAMMA = 0.5" in sent(shell) and "GAMMA = 0.9" not in sent(shell)


def test_a_name_the_kernel_lost_is_one_sentence(shell: InteractiveShell) -> None:
    run(shell, "def helper():\n    return 1", "def compute_gae(rewards, values):\n    return helper()", "del helper")
    with pytest.raises(MissingName) as caught:
        sent(shell)
    assert "the kernel has no `helper`" in caught.value.message and "(cell 2, line 2)" in caught.value.message


def test_a_computed_variable_names_its_type(shell: InteractiveShell) -> None:
    run(shell, "class Table:\n    pass", "rows = [Table() for _ in range(3)]",
        "def compute_gae(rewards, values):\n    return rows")
    with pytest.raises(MissingName, match="`rows` \\(cell 3, line 2\\), a list that cell 2, line 1 computes"):
        sent(shell)


def test_magics_in_the_history_are_not_sent(shell: InteractiveShell) -> None:
    run(shell, "%time import math", "%alias_magic t time",
        "def compute_gae(rewards, values):\n    return math.pi")
    assert code_of(sent(shell)) == ["import math", "def compute_gae(rewards, values):", "    return math.pi"]


def test_a_function_defined_in_a_block_is_sent_with_its_block(shell: InteractiveShell) -> None:
    run(shell, "try:\n    import math\n    def compute_gae(rewards, values):\n        return math.pi\n"
               "except ImportError:\n    raise")
    source = sent(shell)
    assert "try:\n    import math\n    def compute_gae" in source
    compile(source, "sent.py", "exec")


def test_only_functions_defined_in_a_cell_are_submitted(shell: InteractiveShell) -> None:
    run(shell, "import math")
    with pytest.raises(UsageError, match="submit a function defined in a cell"):
        kernel_module(shell, shell.user_ns["math"])
    with pytest.raises(UsageError, match="the kernel has no `compute_gea`"):
        kernel_module(shell, "compute_gea")
