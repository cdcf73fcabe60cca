"""Style, types and dead code are part of the tests: ruff (lint and format), mypy and vulture
on the packages.

The configuration lives in pyproject.toml (``[tool.ruff]``, ``[tool.mypy]``, ``[tool.vulture]``).
A failure prints what the tool said, file and line, so fixing it needs no second run.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ["server", "exercises", "sandbox", "client"]


def _tool(name: str) -> str:
    """The tool installed beside this interpreter (the project's .venv), else on PATH."""
    beside = Path(sys.executable).with_name(name)
    found = str(beside) if beside.exists() else shutil.which(name)
    assert found, f"{name} is not installed: it comes with the dev extra (pip install -e '.[dev]')"
    return found


def test_ruff_finds_nothing() -> None:
    run = subprocess.run([_tool("ruff"), "check", "--no-cache", *PACKAGES], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr


def test_ruff_format_changes_nothing() -> None:
    run = subprocess.run([_tool("ruff"), "format", "--check", "--no-cache", *PACKAGES], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, "run `ruff format server exercises sandbox client`:\n" + run.stdout + run.stderr


@pytest.mark.timeout(900)
def test_mypy_finds_nothing() -> None:
    # no arguments: the packages, the overrides and the strictness come from [tool.mypy]
    run = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout + run.stderr


def test_nothing_is_dead_code() -> None:
    """No function, method, class or import that nothing uses (vulture; what frameworks call is
    in tests/dead_code_whitelist.py). Fields are left out: pydantic, SQLAlchemy and dataclasses
    read them by reflection, so "unused" is vulture's guess there, never a fact."""
    run = subprocess.run([sys.executable, "-m", "vulture"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert "No module named vulture" not in run.stderr, "vulture comes with the dev extra (pip install -e '.[dev]')"
    fields = ("unused variable", "unused attribute")
    dead = [line for line in run.stdout.splitlines() if not (any(f in line for f in fields) and "(60% confidence)" in line)]
    assert run.returncode in (0, 3) and not dead, "\n".join(dead) + run.stderr
