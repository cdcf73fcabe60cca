"""``ppo-grader similarity`` on a course graded through the API, and migration 0010 up and down."""

from __future__ import annotations

import re

import pytest
from alembic import command
from sqlalchemy import inspect
from typer.testing import CliRunner

from server.cli import app
from server.config import Settings
from server.db import make_engine
from server.migrations import alembic_config
from tests.server.courses.conftest import Term
from tests.server.similarity.test_api import small_course, wait_run


def ppo_grader(*args: str, code: int = 0) -> tuple[str, str]:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == code, result.output
    return result.stdout, result.stderr


def test_the_cli_prints_the_ranked_pairs(term: Term, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PPO_GRADER_DATABASE_URL", settings.DATABASE_URL)
    small_course(term)
    # No run yet: the command computes one here, then prints it.
    out, err = ppo_grader("similarity", "rlhf-a")
    assert "Comparing the submissions" in err and "8 learners" in err and "Nothing here changes a score" in err
    ranked = re.findall(r"(l\d\d) / (l\d\d) .*? (\d\.\d\d) ", out)
    assert {ranked[0][:2], ranked[1][:2]} == {("l03", "l28"), ("l07", "l29")}, out
    assert ranked[0][2] == "1.00" and float(ranked[2][2]) < 0.5
    term.client.put("/api/v1/courses/rlhf-a/similarity/l03/l28/review", json={"mark": "concern"}, headers=term.instructor)
    out, err = ppo_grader("similarity", "rlhf-a", "--exercise", "kl-penalty", "--top", "1")
    assert "Comparing" not in err and out.count(" / ") == 1
    out, _ = ppo_grader("similarity", "rlhf-a", "--refresh")
    assert "concern" in out  # marks survive a new run
    # The API and the CLI read the same run.
    assert wait_run(term)["pairs_run"]["pairs_found"] > 0
    _, err = ppo_grader("similarity", "nope", code=2)
    assert "No course called 'nope'" in err
    _, err = ppo_grader("similarity", "rlhf-a", "--exercise", "gae", code=2)
    assert "not one of the exercises" in err


def test_migration_0010_upgrades_and_downgrades(settings: Settings) -> None:
    engine = make_engine(settings.DATABASE_URL)
    try:
        command.upgrade(alembic_config(engine), "head")
        tables = set(inspect(engine).get_table_names())
        assert {"similarity_runs", "similarity_pairs", "similarity_reviews"} <= tables
        command.downgrade(alembic_config(engine), "0006")
        tables = set(inspect(engine).get_table_names())
        assert not tables & {"similarity_runs", "similarity_pairs", "similarity_reviews"}
        assert "submissions" in tables
        command.upgrade(alembic_config(engine), "head")
        assert "similarity_pairs" in set(inspect(engine).get_table_names())
    finally:
        engine.dispose()


def test_child_processes_find_what_one_process_finds(term: Term) -> None:
    """SIMILARITY_PROCESSES > 1 compares exercises in spawned children: same pairs, same numbers."""
    from sqlalchemy import select

    from server.models import Course
    from server.similarity.service import compute

    small_course(term)
    with term.api.state.session_factory() as session:
        course_id = session.scalar(select(Course.id).where(Course.slug == "rlhf-a"))
        assert course_id is not None
        one = compute(session, course_id, ["kl-penalty", "gae"], processes=1)
        two = compute(session, course_id, ["kl-penalty", "gae"], processes=2)
    assert one.pairs and [(p.learner_a, p.learner_b, p.score) for p in one.pairs] == [
        (p.learner_a, p.learner_b, p.score) for p in two.pairs]
    assert (one.learners, one.submissions) == (two.learners, two.submissions) == (8, 8)
