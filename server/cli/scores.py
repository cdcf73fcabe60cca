"""``ppo-grader scores``: the score that counts; override, excuse, take back (recorded who, when, why)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from server.cli import common, remote
from server.terminal import columns, plain

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from server.courses.score_schemas import CourseScores
    from server.models import Course

app = typer.Typer(
    help="The score that counts: list it; override, excuse, take back (recorded who, when, why).", no_args_is_help=True
)


#: ``--by`` of the corrections: the staff account the learner reads beside the score.
_BY = typer.Option(
    "--by",
    help="The staff account making the correction (a course instructor or TA; the learner reads it). "
    "Default: the owner of PPO_GRADER_TOKEN.",
)


def _author(session: Session, course: Course, by: str | None) -> str:
    """The staff login a correction made here is signed with (``server.courses.staff``)."""
    from server.courses.staff import correction_author

    return correction_author(session, course, by, common.settings().secret_bytes)


@app.command("list")
@common.edge
def scores_list(
    course: Annotated[str, typer.Argument(help="Course slug.")],
    learner: Annotated[str | None, typer.Option(help="Only this learner.")] = None,
) -> None:
    """Every learner's score that counts per exercise, as the pages, boards and gradebooks show it
    (runs against a server with --server)."""
    from server.courses.score_schemas import CourseScores

    server = remote.target()
    if server is not None:
        book = CourseScores.model_validate(server.get(f"/courses/{remote.part(course)}/scores", learner=learner))
    else:
        book = _local_scores(course, learner)
    # Plain columns, not a Rich table: a course of 200 learners is 2,000 rows and more, which
    # Rich measured and wrapped cell by cell (over a second, most of the command's time).
    table = columns(
        ("learner", "exercise", "counts", "how it counts"),
        (
            (
                r.learner,
                r.exercise,
                "excused" if r.excused else ("-" if r.counted_score is None else f"{r.counted_score:g}"),
                r.described,
            )
            for r in book.scores
        ),
        title=f"{course} (times in {book.time_zone})",
    )
    common.out.print(table, markup=False, highlight=False, soft_wrap=True)


def _local_scores(course: str, learner: str | None) -> CourseScores:
    """What ``GET /courses/{course}/scores`` answers an instructor, from this installation's database."""
    from server.courses.corrections import course_learner
    from server.courses.score_schemas import CourseScores
    from server.courses.score_views import scores_of
    from server.courses.service import find_course, members

    with common.session() as session:
        where = find_course(session, course)
        people = members(session, where) if learner is None else [course_learner(session, where, learner)]
        return CourseScores(course=where.slug, time_zone=where.time_zone, scores=scores_of(session, where, people))


def _one_score(session: Session, course: Course, learner: str, exercise: str) -> str:
    """The learner's score that counts on ``exercise``, in the words every view uses."""
    from server.courses.corrections import course_learner
    from server.courses.counted import course_scores, describe

    user_id = course_learner(session, course, learner).id
    return describe(course_scores(session, course, [user_id], [exercise]).get((user_id, exercise)), course.time_zone)


@app.command("override")
@common.edge
def scores_override(
    course: Annotated[str, typer.Argument(help="Course slug.")],
    learner: Annotated[str, typer.Argument(help="The learner's login name.")],
    exercise: Annotated[str, typer.Argument(help="Exercise slug.")],
    score: Annotated[float, typer.Argument(min=0, max=100, help="The score that counts, 0-100.")],
    reason: Annotated[str, typer.Option(help="Why (the learner reads it beside the score).")],
    by: Annotated[str | None, _BY] = None,
) -> None:
    """Set a learner's score that counts on one exercise by hand (replaces any earlier override)."""
    from server.courses.corrections import override
    from server.courses.service import find_course

    with common.session() as session:
        where = find_course(session, course)
        override(session, where, learner, exercise, score, reason, _author(session, where, by))
        now = _one_score(session, where, learner, exercise)
    common.err.print(f"Overrode {learner!r} on {exercise!r} in {course!r}: now {plain(now)}.", highlight=False)


@app.command("excuse")
@common.edge
def scores_excuse(
    course: Annotated[str, typer.Argument(help="Course slug.")],
    learner: Annotated[str, typer.Argument(help="The learner's login name.")],
    exercise: Annotated[str, typer.Argument(help="Exercise slug.")],
    reason: Annotated[str, typer.Option(help="Why (the learner reads it).")],
    by: Annotated[str | None, _BY] = None,
) -> None:
    """Take one exercise out of a learner's average (gradebooks: EX in Canvas's, no score elsewhere; not ranked)."""
    from server.courses.corrections import excuse
    from server.courses.service import find_course

    with common.session() as session:
        where = find_course(session, course)
        excuse(session, where, learner, exercise, reason, _author(session, where, by))
        now = _one_score(session, where, learner, exercise)
    common.err.print(f"Excused {learner!r} from {exercise!r} in {course!r}: now {plain(now)}.", highlight=False)


@app.command("undo")
@common.edge
def scores_undo(
    course: Annotated[str, typer.Argument(help="Course slug.")],
    learner: Annotated[str, typer.Argument(help="The learner's login name.")],
    exercise: Annotated[str, typer.Argument(help="Exercise slug.")],
    kind: Annotated[str, typer.Argument(help="override or excuse: which correction to take back.")],
    by: Annotated[str | None, _BY] = None,
) -> None:
    """Take an override or an excuse back (it stays on record as revoked); the graded score counts again."""
    from server.courses.corrections import take_back
    from server.courses.service import find_course
    from server.models import CorrectionKind

    if kind not in ("override", "excuse"):
        raise typer.BadParameter("use override or excuse", param_hint="KIND")
    with common.session() as session:
        where = find_course(session, course)
        undone = take_back(session, where, learner, exercise, CorrectionKind(kind), _author(session, where, by))
        now = _one_score(session, where, learner, exercise)
    if not undone.revoked:
        common.fail(f"{learner!r} has no {kind} in force on {exercise!r} in {course!r} (the score is {now})")
    common.err.print(
        f"Took back the {kind} of {learner!r} on {exercise!r} in {course!r}: now {plain(now)}.", highlight=False
    )
