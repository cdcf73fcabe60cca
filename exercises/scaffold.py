"""``ppo-grader exercises new SLUG --pack DIR``: a working exercise to start from.

The scaffold is a small, complete exercise (``compute_<name>(x, y, scale=1.0) = scale * (x -
y)``) in the pack layout: a spec, a starter that announces every check, a reference, a faulty
reference with one switch, two value checks, a gradient check and the contract checks of
:mod:`exercises.common`. It passes ``exercises verify`` as written, so a course author starts
from green and changes one file at a time (docs/adding-an-exercise.md walks through it).
"""

from __future__ import annotations

import keyword
import re
from pathlib import Path

from exercises.verify import tolerance_statement

#: A slug: lower-case words joined by hyphens (it names the exercise everywhere: URLs, database).
SLUG = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
MAX_SLUG = 48


class ScaffoldError(ValueError):
    """The slug or the folder cannot be used; the message says why."""


def names(slug: str) -> tuple[str, str]:
    """The exercise folder's name and the learner's function name for ``slug``."""
    if len(slug) > MAX_SLUG or not SLUG.match(slug):
        raise ScaffoldError(
            f"slug {slug!r} must be lower-case words joined by hyphens (e.g. rloo-advantages), "
            f"at most {MAX_SLUG} characters"
        )
    folder = slug.replace("-", "_")
    if keyword.iskeyword(folder):
        raise ScaffoldError(f"slug {slug!r} is a Python keyword")
    return folder, f"compute_{folder}"


def new_exercise(slug: str, pack: Path) -> Path:
    """Write the scaffold of ``slug`` into the pack folder ``pack`` (created if needed); its folder."""
    folder_name, function = names(slug)
    folder = pack / folder_name
    if folder.exists():
        raise ScaffoldError(f"{folder} exists already; pick another slug or remove it")
    title = slug.replace("-", " ").capitalize()
    fields = {
        "slug": slug,
        "title": title,
        "function": function,
        "faulty": f"faulty_{folder_name}",
        "tolerance": tolerance_statement(),
    }
    folder.mkdir(parents=True)
    for name, template in _FILES.items():
        text = template
        for key, value in fields.items():
            text = text.replace("{{" + key + "}}", value)
        (folder / name).write_text(text, encoding="utf-8")
    return folder


_INIT = '''"""Exercise `{{slug}}`: {{title}}."""
'''

_SPEC = '''"""What the learner is asked for: with the starter, the only part of the exercise learners see."""

from exercises.framework import ExerciseSpec, KnownAnswer

SPEC = ExerciseSpec(
    slug="{{slug}}",
    title="{{title}}",
    function_name="{{function}}",
    summary="A scaled difference of two tensors of any shape (change me).",
    # Where it sits in the catalogue: the built-in exercises are 1-11.
    order=100,
    description="""\\
`{{function}}(x, y, scale=1.0)`

Returns `scale * (x - y)`, elementwise, for tensors `x` and `y` of any shape. `x` and `y`
must have equal shapes (otherwise `ValueError` naming the argument; no broadcasting). The
result is in the inputs' dtype and on their device; inputs are not modified in place.
Gradient flows to `x` (and `y`).
""",
    # Worked out by hand from the description: verify refuses a reference that answers otherwise
    # (the checks compare learners with the reference, so only an answer known in advance
    # catches a reference that contradicts the spec). Add one per rule a sign or a factor hangs on.
    examples=(
        KnownAnswer(
            "half of 3 - 1 is 1",
            call="{{function}}(torch.tensor([3.0, 1.0]), torch.tensor([1.0, 1.0]), scale=0.5)",
            expect="torch.tensor([1.0, 0.0])",
        ),
    ),
)
'''

_REFERENCE = '''"""Hidden reference solution for `{{slug}}`: the judge computes expected values with it. Learners
never see it; keep it the plain, obviously-right version."""

import torch


def {{function}}(x, y, scale=1.0):
    if not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor):
        raise ValueError("x and y must be tensors")
    if y.shape != x.shape:
        raise ValueError(f"y has shape {tuple(y.shape)}, expected {tuple(x.shape)} (the shape of x)")
    return scale * (x - y)
'''

_FAULTY = '''"""The `{{slug}}` reference with a switch per known mistake (declared in mutants.py).

`faults=()` is the reference. Self-contained (torch, math only): a mistake's file, sent through
the jail by `exercises verify`, is this module plus a wrapper with the learner's signature.
"""

import torch


def {{faulty}}(x, y, scale=1.0, *, faults=frozenset()):
    if not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor):
        raise ValueError("x and y must be tensors")
    if y.shape != x.shape:
        raise ValueError(f"y has shape {tuple(y.shape)}, expected {tuple(x.shape)} (the shape of x)")
    diff = y - x if "swapped-operands" in faults else x - y
    return scale * diff
'''

_MUTANTS = '''"""Known mistakes of `{{slug}}`: switches of the faulty reference (faulty.py).

`explains` lists the checks a mistake makes fail: verify holds every fault to it on every seed,
and feedback names the mistake on those checks.
"""

from exercises.mistakes import fault, fault_mutants

from .faulty import {{faulty}}

FAULTS = [
    fault("swapped-operands", "operands swapped: y - x instead of x - y",
          fix="Subtract y from x: scale * (x - y).",
          explains=("values", "scaled", "gradient", "dtype_device")),
]

MUTANTS = fault_mutants({{faulty}}, FAULTS)
'''

_CHECKS = '''"""Cases and weighted checks for `{{slug}}` (points add up to 100).

`cases(gen)` builds every input from the run's seeded generator (never torch's global one);
each `@check` reads the cases by tag and compares with the reference through the contract
checks of exercises.common. `core=True`: a value check on ordinary inputs; `gated=True`: a
contract detail whose points count only once every core check passes.
"""

from __future__ import annotations

import torch

from exercises.common import (
    expect_dtype_device,
    expect_grads,
    expect_inputs_unchanged,
    expect_value_error,
    expect_values,
)
from exercises.framework import Case, CaseGen, CheckContext, check

SCALES = (0.5, 2.0, -1.5)


def cases(gen: CaseGen) -> list[Case]:
    """Every input the checks read, built from the run's seed."""
    out: list[Case] = []
    for i, shape in enumerate(((3, 5), (2, 3, 4), (7,))):
        out.append(gen.case(gen.randn(*shape), gen.randn(*shape), tags=("values",), about=f"random case {i + 1}"))
    for scale in SCALES:
        out.append(gen.case(gen.randn(4, 6), gen.randn(4, 6), kwargs={"scale": scale}, tags=("scaled",),
                            about=f"scale={scale:g}"))
    out.append(gen.case(gen.randn(3, 4), gen.randn(3, 4), tags=("gradient",), grad=("0",), backward=[],
                        weights=gen.randn(3, 4), about="x requires grad"))
    x = gen.randn(3, 4)
    for y, about in ((gen.randn(4), "y [4] against x [3, 4]"), (gen.randn(4, 3), "y transposed")):
        out.append(gen.case(x, y, tags=("shape",), about=about))
    # Inputs on a 1/8 grid keep bfloat16 arithmetic exact enough to compare with the reference.
    for dtype in (torch.float32, torch.float64, torch.bfloat16):
        x, y = (torch.round(gen.randn(3, 5) * 8) / 8 for _ in range(2))
        out.append(gen.case(x.to(dtype), y.to(dtype), tags=("dtype",), about=f"{dtype} inputs"))
    out.append(gen.case(gen.randn(4, 5), gen.randn(4, 5), tags=("inplace",), return_inputs=True,
                        about="inputs checked after the call"))
    return out


@check("values on random inputs of any shape (default scale=1)", 40, core=True)
def values(ctx: CheckContext) -> None:
    expect_values(ctx, ctx.cases("values"))


@check("values with other scales (0.5, 2, -1.5)", 20, core=True)
def scaled(ctx: CheckContext) -> None:
    expect_values(ctx, ctx.cases("scaled"))


@check("gradient with respect to x", 20)
def gradient(ctx: CheckContext) -> None:
    expect_grads(ctx, ctx.cases("gradient"), "0", "x")


@check("ValueError on mismatched shapes (no broadcasting)", 8, gated=True)
def shape_errors(ctx: CheckContext) -> None:
    expect_value_error(ctx, ctx.cases("shape"))


@check("result in the inputs' dtype (float32, float64, bfloat16) and device", 6, gated=True)
def dtype_device(ctx: CheckContext) -> None:
    expect_dtype_device(ctx, ctx.cases("dtype"))


@check("inputs not modified in place", 6, gated=True)
def no_inplace(ctx: CheckContext) -> None:
    expect_inputs_unchanged(ctx, ctx.cases("inplace"))
'''

_STARTER = '''"""Exercise {{slug}}: {{title}}.

Fill in the `# YOUR CODE` blocks, run `python this_file.py` for the self-tests, then submit
with `ppo-submit this_file.py`.
"""

import torch


def {{function}}(x, y, scale=1.0):
    """A scaled difference, elementwise.

    Args:
        x: a tensor of any shape.
        y: a tensor of the shape of x.
        scale: a Python number.

    Returns:
        scale * (x - y), of the shape of x, in the inputs' dtype and on their device.
        Gradient flows to x (and y).

    Raises:
        ValueError naming the offending argument when y does not have the shape of x (no
        broadcasting).
    Must not modify its inputs in place.

    Graded (points in brackets; * counts only once the values on ordinary inputs are right):
        - values on random inputs of any shape (default scale=1) [40]
        - values with other scales (0.5, 2, -1.5) [20]
        - gradient with respect to x [20]
        - ValueError on mismatched shapes (no broadcasting) [8*]
        - result in the inputs' dtype (float32, float64, bfloat16) and device [6*]
        - inputs not modified in place [6*]

    Tolerance: values and gradients are compared with the reference per dtype: {{tolerance}}.
    """
    # YOUR CODE: check that y has the shape of x

    # YOUR CODE: return the scaled difference
    raise NotImplementedError("{{function}} is not written yet")


if __name__ == "__main__":
    got = {{function}}(torch.tensor([3.0, 1.0]), torch.tensor([1.0, 1.0]), scale=0.5)
    assert torch.allclose(got, torch.tensor([1.0, 0.0])), got
    print("self-tests passed")
'''

_FILES = {
    "__init__.py": _INIT,
    "spec.py": _SPEC,
    "reference.py": _REFERENCE,
    "faulty.py": _FAULTY,
    "mutants.py": _MUTANTS,
    "checks.py": _CHECKS,
    "starter.py": _STARTER,
}


#: What each written file is for, in the order an author edits them (every file of ``_FILES``).
_ROLES = {
    "spec.py": "what learners are asked",
    "reference.py": "the right answer",
    "faulty.py": "a wrong answer verify must catch",
    "mutants.py": "the known mistakes",
    "checks.py": "the checks and their points",
    "starter.py": "what learners start from",
    "__init__.py": "the folder's docstring",
}


def next_step(folder: Path, pack: Path) -> str:
    """The line ``exercises new`` ends with: every file it wrote, what each is for, and the gate."""
    assert set(_ROLES) == set(_FILES), "every written file is named in the Next: line"
    files = ", ".join(f"{name} ({role})" for name, role in _ROLES.items())
    return (
        f"Wrote {folder}/ (it passes verify as written). Next: edit {files}, then "
        f"`ppo-grader exercises verify --pack {pack}`."
    )
