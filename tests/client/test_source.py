"""Finding the exercise from the functions a file defines, without running it."""

from __future__ import annotations

from pathlib import Path

import pytest

from notebook_format.errors import SourceError
from notebook_format.functions import defined_functions
from ppo_submit.api import UsageError
from ppo_submit.source import match_exercise, read_source

from .fakes import EXERCISES


def test_one_matching_function_names_the_exercise() -> None:
    source = "import torch\n\ndef helper(x):\n    return x\n\ndef compute_actor_loss(a, b, c):\n    return helper(a)\n"
    assert match_exercise(source, EXERCISES) == "actor-loss"


def test_only_top_level_functions_count() -> None:
    source = "class Loss:\n    def compute_actor_loss(self):\n        pass\n\ndef main():\n    def compute_value_loss():\n        pass\n"
    assert defined_functions(source) == (["main"], None)
    with pytest.raises(SourceError, match="defines none of the exercise functions"):
        match_exercise(source, EXERCISES)


def test_no_matching_function_asks_for_exercise() -> None:
    with pytest.raises(SourceError, match="--exercise"):
        match_exercise("def something_else():\n    pass\n", EXERCISES, filename="x.py")


def test_two_matching_functions_ask_for_exercise() -> None:
    source = "def compute_actor_loss():\n    pass\n\nasync def compute_value_loss():\n    pass\n"
    with pytest.raises(SourceError, match=r"several exercises.*--exercise"):
        match_exercise(source, EXERCISES)


def test_syntax_error_falls_back_to_def_lines() -> None:
    source = "def compute_actor_loss(a, b, c):\n    return (a +\n"
    names, error_line = defined_functions(source)
    assert names == ["compute_actor_loss"]
    assert error_line is not None
    assert match_exercise(source, EXERCISES) == "actor-loss"


def test_syntax_error_without_any_def_asks_for_exercise() -> None:
    with pytest.raises(SourceError, match=r"syntax error \(line \d+\).*--exercise"):
        match_exercise("x = (\n", EXERCISES)


def test_the_file_is_never_executed(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    source = f"open({str(marker)!r}, 'w').close()\n\ndef compute_actor_loss():\n    pass\n"
    assert match_exercise(source, EXERCISES) == "actor-loss"
    assert not marker.exists()


def test_missing_file_hints_at_commands(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such file: exercize .*did you mean `ppo-submit exercises`"):
        read_source(Path("exercize"), commands=["exercises", "history"])
    with pytest.raises(UsageError, match="no such file: zzz .*not a command: exercises, history"):
        read_source(Path("zzz"), commands=["exercises", "history"])
    with pytest.raises(UsageError, match="is a directory"):
        read_source(tmp_path)


def test_a_near_miss_function_name_gets_a_suggestion() -> None:
    source = "def compute_actor_los(a, b, c, clip_range=0.2):\n    return 0\n"
    with pytest.raises(SourceError, match=r"defines compute_actor_los\(\), not compute_actor_loss\(\): "
                                         r"did you mean compute_actor_loss\?.*--exercise actor-loss"):
        match_exercise(source, EXERCISES, filename="mine.py")


def test_a_source_too_deep_to_parse_is_recognised_by_its_def_lines() -> None:
    """A 3,000-term sum makes ``ast.parse`` raise RecursionError; the ``def`` lines still say
    which exercise it is (the jail's run says what is wrong), never a traceback (review 5)."""
    source = "x = " + "+".join(["1"] * 3000) + "\ndef compute_actor_loss(a, b, c):\n    return {}\n"
    names, error_line = defined_functions(source)
    assert names == ["compute_actor_loss"] and error_line == 0
