"""Every benchmark in bench/ runs at a tiny size and prints its table, so none rots unnoticed.

Each bench is started as its docs/benchmarks.md command starts it (``python bench/NAME.py``,
a process of its own) with the options that make it small, and must exit 0 and print its
table's header and a row of it. The figures of a tiny run mean nothing and are not looked at;
whether the bench still runs against the tree as it is now (its imports, the schema it fills,
the endpoints and commands it drives) is the point. ``bench/leaderboard.py`` once went
unmeasured for this reason: it dropped an index that migration 0007 had renamed.

The commands written in docs/benchmarks.md are checked too, against the options each bench's
parser defines (read from its source, without running it).
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
DOC = ROOT / "docs" / "benchmarks.md"
#: Benches with a tiny test of their own elsewhere (bench/admin.py is another branch's, with its test).
TESTED_ELSEWHERE = {"admin.py"}


@dataclass(frozen=True)
class Bench:
    """One bench's tiny run: its options, a header it prints and a row that must follow it."""

    script: str
    args: tuple[str, ...]
    header: str
    row: str
    postgres: bool = False

    def __str__(self) -> str:
        return self.script.removesuffix(".py")


BENCHES = [
    Bench("bench_upload_parsers.py", ("--smallest",), "| case | bytes | of the cap |", "| multipart | "),
    Bench("dashboard.py", ("--submissions", "200", "--learners", "10", "--repeats", "1"), "| page |", "| ",
          postgres=True),
    Bench("diagnosis.py", ("--exercises", "actor-loss", "--corpus", "dev"), "| exercise (dev) |", "| actor-loss | "),
    Bench("gpu_proof.py", ("--device", "cpu", "--exercises", "actor-loss"), "actor-loss", "GPU PROOF (cpu) PASSED"),
    Bench("grading.py", ("--n", "1", "--exercises", "actor-loss", "--ways", "a"), "| exercise | way | median ms |",
          "| actor-loss | a: warm pool | "),
    Bench("jail_compare.py", ("--baseline", "HEAD", "--rounds", "1", "--n", "1", "--fresh", "1"),
          "| actor-loss: correct submissions | median ms |", "| this tree, warm pool | "),
    Bench("leaderboard.py", ("--submissions", "200", "--learners", "10", "--repeats", "1"),
          "| endpoint | with 0002 indexes (ms) | without them (ms) |", "| GET /gradebook.csv | "),
    Bench("load.py", ("--submissions", "3", "--workers", "1", "--clients", "2", "--timeout", "120"),
          "| workers | verdicts/s |", "| 1 | ", postgres=True),
    Bench("queue_claims.py", ("--clients", "2", "--jobs", "10", "--seconds", "1", "--simulated-workers", "2"),
          "| simulated procrastinate workers", "| 2 | ", postgres=True),
    Bench("regrade.py", ("--n", "2", "--live", "1", "--workers", "1"), "| phase | regrades/s |", "| no regrade | "),
    Bench("similarity.py", ("--learners", "18", "--processes", "1"), "| database | processes |", "| SQLite | 1 | 18 x "),
    Bench("similarity_engines.py", ("--learners", "18", "--engines", "ours"), "| corpus | engine |",
          "| synthetic: 18 learners x "),
    Bench("submit_requests.py", ("--n", "1"), "| case | client | requests per submit", "| on time, warm cache | this tree | "),
    Bench("submit_latency.py", ("--n", "1", "--cli-runs", "1"), "| part | median ms | p95 ms |",
          "| ppo-submit FILE (start-up included) | "),
]


def _postgres_reachable() -> bool:
    from tests.pg import _connect

    try:
        _connect().close()
    except Exception:  # any failure to connect means "unreachable"
        return False
    return True


def _runnable(path: Path) -> bool:
    return path.suffix == ".py" and 'if __name__ == "__main__":' in path.read_text()


def test_every_bench_has_a_tiny_run() -> None:
    """A new bench gets a line in BENCHES (modules without a ``__main__``, such as
    ``similarity_corpus.py`` and ``report.py``, are libraries of the benches)."""
    runnable = {p.name for p in BENCH.iterdir() if _runnable(p)} - TESTED_ELSEWHERE
    assert runnable == {b.script for b in BENCHES}


@pytest.mark.slow
@pytest.mark.timeout(330)
@pytest.mark.parametrize("bench", BENCHES, ids=str)
def test_bench_runs_at_a_tiny_size(bench: Bench) -> None:
    if bench.postgres and not _postgres_reachable():
        pytest.skip("PostgreSQL unreachable")
    path = os.pathsep.join([str(ROOT), str(ROOT / "client"), os.environ.get("PYTHONPATH", "")])
    run = subprocess.run([sys.executable, str(BENCH / bench.script), *bench.args], cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": path}, capture_output=True, text=True, timeout=300)
    said = f"exit {run.returncode}\n--- stdout\n{run.stdout[-4000:]}\n--- stderr\n{run.stderr[-4000:]}"
    assert run.returncode == 0, said
    lines = run.stdout.splitlines()
    headers = [i for i, line in enumerate(lines) if bench.header in line]
    assert headers, said
    assert any(line.startswith(bench.row) for line in lines[headers[0] + 1 :]), said


def _options(script: Path) -> set[str]:
    """The ``--options`` a bench's argparse parser defines, read from its source."""
    calls = (n for n in ast.walk(ast.parse(script.read_text())) if isinstance(n, ast.Call))
    return {
        arg.value
        for call in calls
        if isinstance(call.func, ast.Attribute) and call.func.attr == "add_argument"
        for arg in call.args
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.startswith("--")
    }


def test_the_commands_in_the_docs_use_the_benches_real_options() -> None:
    """Each ``bench/NAME.py ...`` command in docs/benchmarks.md (up to the closing backtick, a
    comment or the line's end) names a bench that exists and only options it defines."""
    wrong = []
    for match in re.finditer(r"(?<![\w/])bench/(\w+\.py)([^`#\n]*)", DOC.read_text()):
        script, rest = BENCH / match[1], match[2]
        if not script.exists():
            wrong.append(f"{match[0].strip()}: no such bench")
            continue
        unknown = set(re.findall(r"(?<![\w-])--[\w-]+", rest)) - _options(script)
        if unknown:
            wrong.append(f"{match[0].strip()}: {script.name} has no {', '.join(sorted(unknown))}")
    assert not wrong, "\n".join(wrong)
