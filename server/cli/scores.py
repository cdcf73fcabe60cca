"""``ppo-grader scores``: the score that counts; override, excuse, take back (recorded who, when, why)."""

from __future__ import annotations

from contextlib import nullcontext
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


#: ``--dry-run`` of the corrections.
_DRY_RUN = typer.Option(
    "--dry-run", help="Only say what the score that counts would become (same refusals); nothing is written."
)


def _signed_remotely(server: remote.Server, by: str | None) -> None:
    """On a server a correction is signed by the token's owner (the API never signs for someone
    else): ``--by`` may only name that account, as it may only name staff on the host."""
    if by is None:
        return
    owner = str(server.get("/me").get("name", ""))
    if by != owner:
        common.fail(
            f"with --server a correction is signed by the owner of {remote.TOKEN_ENV} ({owner!r}); "
            f"--by {by[:64]!r} names another account (leave --by out, or use that person's own token)."
        )


def _correction_path(course: str, learner: str, exercise: str, kind: str) -> str:
    """The API's path of one correction (``PUT`` sets it, ``DELETE`` takes it back)."""
    return f"/courses/{remote.part(course)}/scores/{remote.part(learner)}/{remote.part(exercise)}/{kind}"


def _correct(
    course: str, learner: str, exercise: str, kind: str, by: str | None, dry_run: bool, body: dict[str, object]
) -> str:
    """Set an override or an excuse (``body``: what ``PUT`` of its API path takes) on the server
    or on the database; the score that counts it leaves, in the words every view uses."""
    from server.courses.score_schemas import ScorePublic

    server = remote.target()
    if server is not None:
        _signed_remotely(server, by)
        answer = server.send(
            "PUT", _correction_path(course, learner, exercise, kind), body, dry_run="true" if dry_run else None
        )
        return ScorePublic.model_validate(answer).described
    from server.courses.corrections import excuse, override
    from server.courses.service import find_course
    from server.db import rolled_back

    reason = str(body["reason"])
    with common.session() as session:
        where = find_course(session, course)
        author = _author(session, where, by)
        with rolled_back(session) if dry_run else nullcontext():
            if kind == "override":
                override(session, where, learner, exercise, float(str(body["score"])), reason, author)
            else:
                excuse(session, where, learner, exercise, reason, author)
            return _one_score(session, where, learner, exercise)


@app.command("override")
@common.edge
def scores_override(
    course: Annotated[str, typer.Argument(help="Course slug.")],
    learner: Annotated[str, typer.Argument(help="The learner's login name.")],
    exercise: Annotated[str, typer.Argument(help="Exercise slug.")],
    score: Annotated[float, typer.Argument(min=0, max=100, help="The score that counts, 0-100.")],
    reason: Annotated[str, typer.Option(help="Why (the learner reads it beside the score).")],
    by: Annotated[str | None, _BY] = None,
    dry_run: Annotated[bool, _DRY_RUN] = False,
) -> None:
    """Set a learner's score that counts on one exercise by hand (replaces any earlier override);
    runs against a server with --server."""
    now = _correct(course, learner, exercise, "override", by, dry_run, {"score": score, "reason": reason})
    what = f"{learner!r} on {exercise!r} in {course!r}"
    common.err.print(
        f"Dry run: overriding {what} would make it {plain(now)}; nothing changed."
        if dry_run
        else f"Overrode {what}: now {plain(now)}.",
        highlight=False,
    )


@app.command("excuse")
@common.edge
def scores_excuse(
    course: Annotated[str, typer.Argument(help="Course slug.")],
    learner: Annotated[str, typer.Argument(help="The learner's login name.")],
    exercise: Annotated[str, typer.Argument(help="Exercise slug.")],
    reason: Annotated[str, typer.Option(help="Why (the learner reads it).")],
    by: Annotated[str | None, _BY] = None,
    dry_run: Annotated[bool, _DRY_RUN] = False,
) -> None:
    """Take one exercise out of a learner's average (gradebooks: EX in Canvas's, no score elsewhere;
    not ranked); runs against a server with --server."""
    now = _correct(course, learner, exercise, "excuse", by, dry_run, {"reason": reason})
    what = f"{learner!r} from {exercise!r} in {course!r}"
    common.err.print(
        f"Dry run: excusing {what} would make it {plain(now)}; nothing changed."
        if dry_run
        else f"Excused {what}: now {plain(now)}.",
        highlight=False,
    )


@app.command("undo")
@common.edge
def scores_undo(
    course: Annotated[str, typer.Argument(help="Course slug.")],
    learner: Annotated[str, typer.Argument(help="The learner's login name.")],
    exercise: Annotated[str, typer.Argument(help="Exercise slug.")],
    kind: Annotated[str, typer.Argument(help="override or excuse: which correction to take back.")],
    by: Annotated[str | None, _BY] = None,
    dry_run: Annotated[bool, _DRY_RUN] = False,
) -> None:
    """Take an override or an excuse back (it stays on record as revoked); the graded score counts
    again. Runs against a server with --server."""
    if kind not in ("override", "excuse"):
        raise typer.BadParameter("use override or excuse", param_hint="KIND")
    revoked, now = _take_back(course, learner, exercise, kind, by, dry_run)
    if not revoked:
        common.fail(f"{learner!r} has no {kind} in force on {exercise!r} in {course!r} (the score is {now})")
    what = f"the {kind} of {learner!r} on {exercise!r} in {course!r}"
    common.err.print(
        f"Dry run: taking back {what} would make it {plain(now)}; nothing changed."
        if dry_run
        else f"Took back {what}: now {plain(now)}.",
        highlight=False,
    )


def _take_back(course: str, learner: str, exercise: str, kind: str, by: str | None, dry_run: bool) -> tuple[int, str]:
    """``scores undo`` on the server or on the database: how many corrections it took back, and
    the score that counts it leaves."""
    from server.courses.score_schemas import TakenBack

    server = remote.target()
    if server is not None:
        _signed_remotely(server, by)
        answer = server.delete(_correction_path(course, learner, exercise, kind), dry_run="true" if dry_run else None)
        undone = TakenBack.model_validate(answer)
        return undone.revoked, undone.score.described
    from server.courses.corrections import take_back
    from server.courses.service import find_course
    from server.db import rolled_back
    from server.models import CorrectionKind

    with common.session() as session:
        where = find_course(session, course)
        author = _author(session, where, by)
        with rolled_back(session) if dry_run else nullcontext():
            revoked = take_back(session, where, learner, exercise, CorrectionKind(kind), author).revoked
            return revoked, _one_score(session, where, learner, exercise)
