"""The module the learner meant, from cells: the function and what it needs, nothing else."""

from __future__ import annotations

import ast

import pytest

from notebook_format.cells import Cell, to_python
from notebook_format.closure import CellResolver, MissingName, build, free_names, scan


def module(*sources: str, function: str = "compute_gae", counts: bool = True) -> str:
    return built(*sources, function=function, counts=counts).source


def built(*sources: str, function: str = "compute_gae", counts: bool = True):  # type: ignore[no-untyped-def]
    cells = [Cell(s, i, i if counts else None) for i, s in enumerate(sources, 1)]
    scanned = scan(to_python(c) for c in cells)
    return build(function, CellResolver(scanned, "gae.ipynb"), always=scanned.futures)


def code_of(source: str) -> str:
    """The module without its comments and blank lines."""
    return "\n".join(line for line in source.splitlines() if line.strip() and not line.startswith("#"))


GAE = "def compute_gae(rewards, values, mask=None, gamma=1.0, lam=0.95):\n    return {body}\n"


def test_only_the_function_and_what_it_reads_are_sent() -> None:
    source = module(
        "import torch\nimport numpy as np, math\nimport matplotlib.pyplot as plt",
        "GAMMA = 0.99\nEPS = torch.finfo(torch.float32).eps\ndata = torch.randn(100)\n",
        "def helper(x):\n    return x * GAMMA\n\ndef plot_it():\n    plt.plot([1])\n",
        GAE.format(body="helper(rewards) + math.pi + EPS"),
        "for step in range(10):\n    loss = compute_gae(data, data)\nplot_it()\nassert True\n",
    )
    assert code_of(source) == (
        "import torch\nimport math\nGAMMA = 0.99\nEPS = torch.finfo(torch.float32).eps\n"
        "def helper(x):\n    return x * GAMMA\n" + GAE.format(body="helper(rewards) + math.pi + EPS").rstrip("\n")
    )
    ast.parse(source)


def test_the_last_definition_wins_as_in_a_kernel_run_top_to_bottom() -> None:
    source = module(GAE.format(body="1"), "def helper():\n    return 2\n", GAE.format(body="helper()"),
                    "def helper():\n    return 3\n")
    assert code_of(source) == GAE.format(body="helper()") + "def helper():\n    return 3"
    assert source.index("# cell 3") < source.index("# cell 4")  # in run order


def test_a_missing_helper_is_one_sentence_naming_it_and_where_it_is_used() -> None:
    with pytest.raises(MissingName) as caught:
        module("import torch", GAE.format(body="discounted(rewards, gamma)"))
    message = caught.value.message
    assert "`discounted`" in message and "(cell 2, line 2)" in message and "no cell of gae.ipynb" in message
    assert message.count(". ") == 0 and message.endswith(".")
    assert caught.value.names == ["discounted"]


def test_a_typo_suggests_the_name_close_by() -> None:
    with pytest.raises(MissingName, match=r"did you mean `values`\?"):
        module(GAE.format(body="value * 2"))


def test_a_variable_rather_than_a_definition_is_named() -> None:
    with pytest.raises(MissingName) as caught:
        module("import torch\nscale = torch.randn(3).std()", GAE.format(body="rewards * scale"))
    assert "`scale`" in caught.value.message and "cell 1, line 2" in caught.value.message
    assert "rather than a definition" in caught.value.message


@pytest.mark.parametrize("value", ["torch.randn(4)", "torch.load('ckpt.pt')", "torch.randn(4).std()", "len(x)"])
def test_computed_data_is_a_variable_but_constants_from_imports_are_sent(value: str) -> None:
    with pytest.raises(MissingName, match="rather than a definition"):
        module(f"import torch\nx = [1]\ndata = {value}", GAE.format(body="rewards * data"))
    assert "EPS = torch.finfo(torch.float32).eps" in module(
        "import torch\nEPS = torch.finfo(torch.float32).eps", GAE.format(body="rewards + EPS"))


def test_a_helper_rebound_by_a_later_cell_is_named_with_both_cells() -> None:
    with pytest.raises(MissingName) as caught:
        module("def helper(x):\n    return x\n", GAE.format(body="helper(rewards)"), "helper = 3\n")
    message = caught.value.message
    assert "`helper`" in message and "cell 1, line 1" in message and "cell 3, line 1" in message


def test_a_deleted_helper_is_named() -> None:
    with pytest.raises(MissingName, match="deletes it"):
        module("def helper(x):\n    return x\n", GAE.format(body="helper(rewards)"), "del helper\n")


def test_several_missing_names_are_all_listed() -> None:
    with pytest.raises(MissingName) as caught:
        module(GAE.format(body="alpha(beta)"))
    assert caught.value.names == ["alpha", "beta"] and "also missing: `beta`" in caught.value.message


def test_imports_are_narrowed_and_submodule_imports_kept() -> None:
    source = module("import torch\nimport torch.nn.functional\nfrom math import pi, tau as TAU\nimport os, sys",
                    GAE.format(body="torch.nn.functional.relu(rewards) * pi + os.sep.count('x')"))
    assert code_of(source).splitlines()[:4] == [
        "import torch", "import torch.nn.functional", "from math import pi", "import os"]


def test_decorators_defaults_and_classes_bring_what_they_read() -> None:
    source = module(
        "import functools\nimport torch\nLAM = 0.95\nclass Base:\n    pass\nclass Acc(Base):\n    scale = LAM\n",
        "@functools.lru_cache\ndef compute_gae(rewards, values, mask=None, gamma=1.0, lam=LAM):\n    return Acc()\n",
    )
    code = code_of(source)
    assert "import functools" in code and "class Base:" in code and "class Acc(Base):" in code
    assert "LAM = 0.95" in code and "import torch" not in code


def test_star_imports_are_sent_when_a_name_is_not_otherwise_defined() -> None:
    source = module("from torch import *", GAE.format(body="zeros_like(rewards)"))
    assert "from torch import *" in source


def test_future_imports_come_first() -> None:
    source = module("import torch", "from __future__ import annotations\n" + GAE.format(body="torch.zeros(1)"))
    assert source.startswith("from __future__ import annotations\n")
    ast.parse(source)


def test_an_if_block_that_only_defines_is_sent_whole() -> None:
    source = module("try:\n    import torch\nexcept ImportError:\n    torch = None\n", GAE.format(body="torch"))
    assert "try:\n    import torch\nexcept ImportError:\n    torch = None" in source


def test_the_functions_cell_that_does_not_parse_is_sent_as_it_is() -> None:
    broken = "def compute_gae(rewards, values, mask=None, gamma=1.0, lam=0.95):\n    return (rewards +\n"
    result = built("import torch", broken)
    assert broken.rstrip("\n") in result.source
    assert result.line_map.locate(result.source.splitlines().index("    return (rewards +") + 1)[:2] == ("cell 2", 2)


def test_the_line_map_points_back_at_cell_and_line() -> None:
    result = built("import torch\n\n\nx = 1", "\n\n" + GAE.format(body="torch.zeros(1)"), counts=False)
    lines = result.source.splitlines()
    assert result.line_map.locate(lines.index("import torch") + 1) == ("code cell 1", 1, None)
    body = lines.index("    return torch.zeros(1)") + 1
    assert result.line_map.locate(body, 5) == ("code cell 2", 4, 5)
    assert result.line_map.locate(1) is None  # the header ppo-submit wrote


def test_a_statement_after_a_semicolon_keeps_its_column() -> None:
    result = built("import torch; import math", GAE.format(body="math.pi"))
    line = result.source.splitlines().index("import math") + 1
    assert result.line_map.locate(line, 1) == ("cell 1", 1, 15)


def test_free_names_are_globals_only() -> None:
    names = free_names("def f(a, b=C):\n    x = a\n    def g():\n        return x + D\n    return g() + E\n")
    assert sorted(names) == ["C", "D", "E"]


def test_build_refuses_past_its_bounds_in_one_sentence() -> None:
    """What is followed is bounded (names resolved, statements brought in); past it, one
    sentence says what to do, never a long wait."""
    from notebook_format.closure import Bounds, TooMuchToFollow

    helpers = "\n".join(f"def h{i}():\n    return h{i + 1}()" for i in range(50)) + "\ndef h50():\n    return 1\n"
    scanned = scan([to_python(Cell(helpers, 1)), to_python(Cell("def f():\n    return h0()\n", 2))])
    assert "h50" in build("f", CellResolver(scanned, "nb.ipynb")).source
    with pytest.raises(TooMuchToFollow, match=r"f needs more than 10 names from the notebook's cells"):
        build("f", CellResolver(scanned, "nb.ipynb"), bounds=Bounds(names=10))
    with pytest.raises(TooMuchToFollow, match=r"more than 5 statements"):
        build("f", CellResolver(scanned, "nb.ipynb"), bounds=Bounds(pieces=5))


def test_a_deep_constant_is_judged_without_recursion() -> None:
    """990 chained additions parse, and used to make ``is_static`` recurse past the limit
    (RecursionError): now the constant is sent like any other (review 5)."""
    deep = "X = " + "+".join(["1"] * 990)
    assert "X = 1+1" in module(deep, GAE.format(body="rewards * X"))


def test_the_typo_search_skips_long_names() -> None:
    """A name over 64 characters gets no "did you mean" (the search is quadratic in length)."""
    long = "v" * 80
    with pytest.raises(MissingName) as caught:
        module(f"{long}x = 1", GAE.format(body=f"rewards * {long}"))
    assert "did you mean" not in caught.value.message
