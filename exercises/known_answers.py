"""Verify's known-answer criterion: the reference against the answers worked out by hand.

Two sources, both written by the course author before any learner submits: the starter's own
self-tests (its ``if __name__ == "__main__":`` block, run with the reference's function in
place of the learner's) and the spec's :class:`~exercises.framework.KnownAnswer` examples. A
reference that disagrees with either is wrong (or the spec is): issue 32's planted ``+coef*H``
passed every check it was graded by, because the checks compare with that same reference.

They run in a child Python process with a time limit: this is instructor code, trusted like
the reference and the checks, but a self-test that loops must not hang the gate.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import asdict, dataclass

from exercises.framework import Exercise

#: Seconds the child may take (it imports torch first).
TIMEOUT_SECONDS = 120.0
#: Characters of an error message kept in a problem.
_ERROR_CHARS = 200


@dataclass(frozen=True)
class Disagreement:
    """One known answer the reference does not give: which one, and what happened."""

    example: str
    detail: str


def check_known_answers(exercise: Exercise) -> list[Disagreement]:
    """Every disagreement of the reference with the starter's self-tests and the spec's examples."""
    payload = json.dumps(
        {
            "reference": exercise.reference_source,
            "starter": exercise.starter,
            "function": exercise.function_name,
            "examples": [asdict(e) for e in exercise.spec.examples],
        }
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", _CHILD],
            input=payload,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_SECONDS,
        )
    except subprocess.TimeoutExpired:
        return [Disagreement("the starter's self-tests", f"did not finish within {TIMEOUT_SECONDS:g} s")]
    lines = done.stdout.strip().splitlines()
    try:
        found = json.loads(lines[-1]) if lines else None
    except ValueError:
        found = None
    if not isinstance(found, list):
        tail = " ".join(done.stderr.split())[-_ERROR_CHARS:]
        return [Disagreement("the starter's self-tests", f"could not be run: {tail or 'no output'}")]
    return [Disagreement(str(d["example"]), str(d["detail"])) for d in found]


#: The child: reference first, then the starter's imports and helpers (not its function), then
#: each self-test block and each example; prints a JSON list of disagreements as its last line.
_CHILD = (
    r"""
import ast, contextlib, io, json, sys, traceback

data = json.loads(sys.stdin.read())
ns = {"__name__": "__known_answers__"}
found = []
CHARS = __CHARS__


def error(exc):
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:CHARS]


def agree(got, want):
    import torch
    if isinstance(want, torch.Tensor):
        return (isinstance(got, torch.Tensor) and got.shape == want.shape
                and bool(torch.allclose(got.detach().to(torch.float64), want.to(torch.float64), rtol=1e-5, atol=1e-6)))
    if isinstance(want, (tuple, list)):
        return isinstance(got, (tuple, list)) and len(got) == len(want) and all(agree(g, w) for g, w in zip(got, want))
    if isinstance(want, float):
        return isinstance(got, (int, float)) and abs(got - want) <= 1e-6 + 1e-5 * abs(want)
    return got == want


def is_main(test):
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and len(test.comparators) == 1 and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "__main__")


with contextlib.redirect_stdout(io.StringIO()):
    exec(compile(data["reference"], "reference.py", "exec"), ns)
    tree = ast.parse(data["starter"])
    lines = data["starter"].splitlines()
    blocks = [n for n in tree.body if isinstance(n, ast.If) and is_main(n.test)]
    helpers = [n for n in tree.body if n not in blocks and not (
        isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == data["function"])]
    exec(compile(ast.Module(body=helpers, type_ignores=[]), "starter.py", "exec"), ns)
    for block in blocks:
        try:
            exec(compile(ast.Module(body=block.body, type_ignores=[]), "starter.py", "exec"), ns)
        except BaseException as exc:
            frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == "starter.py"]
            line = frames[-1].lineno if frames else block.lineno
            text = lines[line - 1].strip() if 0 < line <= len(lines) else ""
            found.append({"example": f"the starter's self-test at starter.py line {line} ({text[:120]})",
                          "detail": error(exc)})
    for ex in data["examples"]:
        name = f"the spec's known answer {ex['name']!r}"
        try:
            got = eval(ex["call"], ns)
            want = eval(ex["expect"], ns)
        except BaseException as exc:
            found.append({"example": name, "detail": error(exc)})
            continue
        if not agree(got, want):
            found.append({"example": name, "detail": f"{ex['call']} gave {str(got)[:80]}, not {ex['expect']}"})
print(json.dumps(found))
"""
).replace("__CHARS__", str(_ERROR_CHARS))
