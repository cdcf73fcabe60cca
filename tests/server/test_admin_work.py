"""What an admin command costs, counted, not timed (bench/admin.py has the seconds):

- the commands that read the database never import torch (importing it was most of each
  command's 1.3 to 8.6 s: the catalogue was loaded to answer `users list`), nor do
  `exercises list` and `exercises versions` (they read the specs) or any `--help`;
- a command line loads its own sub-app only (`scores list` imports no other command module),
  and the long listings print no Rich table (measuring 2,000 rows cell by cell was most of
  `scores list`);
- the gradebooks, the score list and the boards run the same number of SQL statements for 20
  learners as for 5 (no query per learner or per exercise).
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import event, insert
from sqlalchemy.orm import Session

from server.config import Settings
from server.courses.score_views import scores_of
from server.courses.service import create_course, enroll, members
from server.courses.sets import publish
from server.db import make_engine, make_session_factory, transaction
from server.courses.best_scores import backfill_best_scores
from server.gradebook.service import canvas_gradebook_rows, gradebook_rows, moodle_gradebook_rows
from server.leaderboard.service import board
from server.models import Role, Submission
from server.terminal import columns
from server.users.service import create_user
from tests.server.conftest import served_database

EXERCISES = ["actor-loss", "gae", "whiten"]
PROBE = (
    "import atexit, sys; atexit.register(lambda: print('torch imported' if 'torch' in sys.modules else "
    "'no torch', file=sys.stderr)); from server.cli import app; sys.argv[0] = 'ppo-grader'; app()"
)
#: Each command line of a JSON list, in one process and in turn; after each, on stderr, a JSON
#: line: [the command, its exit code, whether torch is imported by then].
IN_TURN = """
import json, sys
from server.cli import app
for command in json.loads(sys.argv[1]):
    try:
        code = app(command, prog_name="ppo-grader", standalone_mode=False)
    except SystemExit as exc:
        code = exc.code
    print(json.dumps([command, code or 0, "torch" in sys.modules]), file=sys.stderr, flush=True)
"""
#: A command line, then what it imported of the CLI's modules and of Rich's table, as the last line.
LOADED = (
    "import atexit, sys; atexit.register(lambda: print(sorted(m for m in sys.modules if m.startswith('server.cli.') "
    "or m in ('rich.table', 'torch', 'sqlalchemy.dialects.postgresql', 'starlette')), file=sys.stderr)); "
    "from server.cli import app; sys.argv[0] = 'ppo-grader'; app()"
)


def fill(settings: Settings, learners: int) -> int:
    """A course of ``learners`` learners, three exercises, two graded submissions each; its id."""
    served_database(settings)
    engine = make_engine(settings.DATABASE_URL)
    try:
        with transaction(make_session_factory(engine)) as session:
            course = create_course(session, "work", "Work", "Europe/Paris")
            for slug in EXERCISES:
                publish(session, course, slug)
            users = [create_user(session, f"l{i:02d}@uni.edu", Role.LEARNER, settings.secret_bytes).user
                     for i in range(learners)]
            for user in users:
                enroll(session, course, user)
            session.flush()
            at = datetime(2026, 12, 1, tzinfo=UTC)
            session.execute(insert(Submission), [
                {"user_id": u.id, "course_id": course.id, "exercise": slug, "source": "x = 1\n",
                 "source_sha256": "0" * 64, "status": "done", "verdict": "graded", "score": score,
                 "counted_score": score, "created_at": at, "finished_at": at}
                for u in users for slug in EXERCISES for score in (50.0, 75.0)
            ])
            backfill_best_scores(session)
            return course.id
    finally:
        engine.dispose()


@contextmanager
def counted(session: Session) -> Iterator[list[str]]:
    statements: list[str] = []
    engine = session.get_bind()

    def seen(_conn, _cursor, statement, *_args):  # type: ignore[no-untyped-def]
        statements.append(statement)

    event.listen(engine, "before_cursor_execute", seen)
    try:
        yield statements
    finally:
        event.remove(engine, "before_cursor_execute", seen)


def work(settings: Settings, learners: int) -> dict[str, int]:
    course_id = fill(settings, learners)
    engine = make_engine(settings.DATABASE_URL)
    try:
        with make_session_factory(engine)() as session:
            from server.models import Course

            course = session.get(Course, course_id)
            assert course is not None
            people = members(session, course)
            assert len(people) == learners
            jobs = {
                "long gradebook": lambda: list(gradebook_rows(session, course)),
                "Canvas gradebook": lambda: list(canvas_gradebook_rows(session, course)),
                "Moodle gradebook": lambda: list(moodle_gradebook_rows(session, course)),
                "scores list": lambda: scores_of(session, course, people),
                "board": lambda: board(session, None, 50, 0, course_id),
            }
            counts = {}
            for name, job in jobs.items():
                job()  # the catalogue and the mappers are set up once per process, not per call
                with counted(session) as statements:
                    rows = job()
                assert rows
                counts[name] = len(statements)
            return counts
    finally:
        engine.dispose()


@pytest.mark.parametrize("settings", ["sqlite"], indirect=True)
def test_the_gradebooks_scores_and_boards_cost_the_same_queries_for_more_learners(
    settings: Settings, tmp_path_factory: pytest.TempPathFactory
) -> None:
    few = work(settings, 5)
    more = work(settings.model_copy(update={
        "DATABASE_URL": f"sqlite:///{tmp_path_factory.mktemp('more')}/more.db"}), 20)
    assert few == more, (few, more)
    assert max(few.values()) <= 8, few


def test_the_admin_commands_that_read_the_database_never_import_torch(settings: Settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    fill(settings, 3)
    env = {**os.environ, "PPO_GRADER_DATABASE_URL": settings.DATABASE_URL}
    env.pop("PPO_GRADER_TOKEN", None)
    # Comparing the submissions is work (it reads the starters: the catalogue); reading its result is not.
    subprocess.run([sys.executable, "-c", PROBE, "similarity", "work", "--refresh"], env=env, cwd=tmp_path,
                   capture_output=True, text=True, timeout=300, check=True)
    commands = [
        ["users", "list"], ["courses", "list"], ["sets", "list", "work"], ["courses", "gradebook", "work"],
        ["courses", "gradebook", "work", "--format", "canvas"], ["courses", "gradebook", "work", "--format", "moodle"],
        ["scores", "list", "work"], ["scores", "list", "work", "--learner", "l01@uni.edu"], ["regrade", "list"],
        ["similarity", "work"], ["submissions", "export", "work", "--out", str(tmp_path / "out.zip")],
        ["exercises", "list"], ["exercises", "versions", "gae"], ["--help"], ["regrade", "--help"],
    ]
    # One process runs them in turn (a Python start each was ~1 s of CPU): torch, once imported,
    # stays in sys.modules, so the first command that imports it is the one named.
    done = subprocess.run([sys.executable, "-c", IN_TURN, json.dumps(commands)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    ran = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("[[")]
    assert [command for command, _, _ in ran] == commands, done.stderr[-2000:]
    for command, code, torch in ran:
        assert code == 0, (command, done.stderr[-2000:])
        assert not torch, f"ppo-grader {' '.join(command)} imported torch"


def test_a_command_line_loads_its_own_sub_app_and_prints_no_rich_table_of_scores(settings: Settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    fill(settings, 3)
    env = {**os.environ, "PPO_GRADER_DATABASE_URL": settings.DATABASE_URL, "COLUMNS": "200"}
    env.pop("PPO_GRADER_TOKEN", None)

    def loaded(*command: str) -> tuple[str, list[str]]:
        done = subprocess.run([sys.executable, "-c", LOADED, *command], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, (command, done.stderr)
        return done.stdout, ast.literal_eval(done.stderr.strip().splitlines()[-1])

    # The one sub-app and what it shares; no torch, no HTTP. The PostgreSQL dialect's module is
    # loaded on SQLite too (44 ms): the one-open-request-per-submission index of review_requests
    # is partial on both databases, and SQLAlchemy checks an index's ``postgresql_where`` against
    # that module when the table is declared; the driver (psycopg) is still never loaded.
    dialect = ["sqlalchemy.dialects.postgresql"]
    listed, modules = loaded("scores", "list", "work")
    assert modules == ["server.cli.common", "server.cli.remote", "server.cli.scores", *dialect]
    lines = listed.splitlines()
    assert lines[0] == "work (times in Europe/Paris)" and lines[1].split() == ["learner", "exercise", "counts", "how",
                                                                                "it", "counts"]
    assert len(lines) == 3 + 3 * len(EXERCISES) and all(line.split()[2] == "75" for line in lines[3:])
    assert loaded("users", "list")[1] == ["rich.table", "server.cli.common", "server.cli.remote", "server.cli.users",
                                          *dialect]
    assert loaded("serve", "--help")[1] == ["rich.table", "server.cli.common", "server.cli.remote", "server.cli.serve",
                                            *dialect]  # typer's help
    # --help lists every command with its line of help: every module, and still no torch.
    every = loaded("--help")[1]
    assert "torch" not in every and {"server.cli.lti", "server.cli.users", "server.cli.serve"} <= set(every)


def test_columns_align_by_terminal_cells_and_show_stored_text_as_itself() -> None:
    text = columns(("who", "note"), [("李雷", "[bold]x[/bold]"), ("eve\x1b]0;pwn\x07", "ok")], title="t\x1b")
    assert text.splitlines() == [
        "t\\x1b",
        "who                note",
        "-----------------  --------------",
        "李雷               [bold]x[/bold]",  # two cells a character: 4 cells and 13 spaces make 17
        "eve\\x1b]0;pwn\\x07  ok",
    ]


@pytest.mark.slow
def test_the_admin_benchmark_runs_at_a_tiny_size() -> None:
    """``bench/admin.py`` end to end on three learners and three exercises, each command once
    and no warm-up (each command is a Python start, ~1 s of CPU): it builds the course through
    the real commands, every timed command exits 0, and the table has a row for each (the
    figures in docs/benchmarks.md come from a 200-learner run; none is asserted here)."""
    from bench.admin import commands

    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PPO_GRADER_")}
    before = (root / "docs" / "benchmarks.md").read_bytes()
    run = subprocess.run([sys.executable, str(root / "bench" / "admin.py"), "--learners", "3", "--repeats", "1",
                          "--exercises", "3", "--warm-ups", "0"],
                         cwd=root, env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout + run.stderr
    rows = [line for line in run.stdout.splitlines() if line.startswith("| `ppo-grader ")]
    assert len(rows) == len(commands(EXERCISES, root, 3)), run.stdout
    assert "scores list bench-a --learner l002@uni.edu" in run.stdout
    assert (root / "docs" / "benchmarks.md").read_bytes() == before  # only --write records figures
