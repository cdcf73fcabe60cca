"""``ppo-grader courses``: create, list, enroll a roster, print a gradebook (long, Canvas or Moodle),
add and remove staff, real names on the boards."""

from __future__ import annotations

import sys
from contextlib import nullcontext
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from server.cli import common, remote
from server.cli.users import roster_import
from server.terminal import plain

if TYPE_CHECKING:
    from server.courses.schemas import StaffAddedPublic, StaffRemovedPublic

app = typer.Typer(help="Courses: create, list, enroll a roster, export a gradebook.", no_args_is_help=True)
staff_app = typer.Typer(help="A course's staff: add or remove a TA or an instructor.", no_args_is_help=True)
app.add_typer(staff_app, name="staff")


@app.command("create")
@common.edge
def courses_create(
    slug: Annotated[str, typer.Argument(help="Short name, e.g. rlhf-fall-a (a-z, 0-9, . _ -).")],
    title: Annotated[str, typer.Option(help="Shown to learners.")] = "",
    time_zone: Annotated[
        str, typer.Option("--time-zone", help="IANA zone dates are shown in, e.g. Europe/Paris.")
    ] = "UTC",
    instructor: Annotated[
        list[str] | None, typer.Option("--instructor", help="Enroll this user as an instructor (repeatable).")
    ] = None,
) -> None:
    """Create a course (a term, or one section of it)."""
    from server.courses.service import INSTRUCTOR, create_course, enroll
    from server.courses.staff import tool_account

    with common.session() as session:
        course = create_course(session, slug, title, time_zone)
        for name in instructor or []:
            enroll(session, course, tool_account(session, name), INSTRUCTOR)
    common.err.print(f"Created course {slug!r} ({time_zone}).", highlight=False)


@app.command("list")
@common.edge
def courses_list() -> None:
    """List courses with their time zone, learners and published exercises."""
    from server.courses.service import LEARNER, members
    from server.courses.sets import entries
    from server.models import Course

    table = Table("slug", "title", "time zone", "learners", "exercises")
    with common.session() as session:
        for course in session.query(Course).order_by(Course.slug):
            table.add_row(
                *map(
                    plain,
                    (
                        course.slug,
                        course.title,
                        course.time_zone,
                        str(len(members(session, course, LEARNER))),
                        ", ".join(e.exercise for e in entries(session, course))
                        or ("(whole catalogue)" if course.is_default else ""),
                    ),
                ),
            )
    common.out.print(table)


@app.command("enroll")
@common.edge
def courses_enroll(
    course: Annotated[str, typer.Argument(help="Course slug.")],
    roster: Annotated[typer.FileText, typer.Argument(help="CSV with a header: name,display_name[,role].")],
) -> None:
    """Enroll a CSV roster in a course: new users are created (tokens printed once, CSV on
    stdout), existing ones enrolled. Same as `users import ROSTER --course COURSE`."""
    roster_import(roster.read(), course)


@app.command("gradebook")
@common.edge
def courses_gradebook(
    course: Annotated[str, typer.Argument(help="Course slug.")],
    format: Annotated[
        str, typer.Option("--format", help="long (a row per learner and exercise), canvas or moodle.")
    ] = "long",
    login_column: Annotated[
        str, typer.Option(help="canvas: where the logins go, sis-login-id or sis-user-id.")
    ] = "sis-login-id",
) -> None:
    """Print a course's gradebook as CSV: the long file (the score that counts, the raw best, which
    submission counted, whether it was late) or the file Canvas's or Moodle's import reads
    (docs/instructors.md, "Gradebooks and exports"); runs against a server with --server."""
    from server.gradebook.formats import check_export

    check_export(format, login_column)
    server = remote.target()
    if server is not None:
        # the API's file of each format (server/gradebook/router.py): the same service writes it
        canvas = login_column if format == "canvas" else None
        sys.stdout.write(server.text(_GRADEBOOKS[format], course=course, login_column=canvas))
        return
    from server.courses.service import find_course
    from server.gradebook.service import export_csv

    with common.session() as session:
        sys.stdout.write(export_csv(session, find_course(session, course), format, login_column))


#: The API's path of each gradebook ``--format``.
_GRADEBOOKS = {"long": "/gradebook.csv", "canvas": "/gradebook/canvas.csv", "moodle": "/gradebook/moodle.csv"}


@staff_app.command("add")
@common.edge
def courses_staff_add(
    course: Annotated[str, typer.Argument(help="Course slug.")],
    name: Annotated[str, typer.Argument(help="The staff member's login (created when there is none).")],
    role: Annotated[
        str, typer.Option(help="ta (this course's staff only) or instructor (also an instructor account).")
    ] = "ta",
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only check and say what it would do (no token); nothing is written.")
    ] = False,
) -> None:
    """Add a TA or an instructor to a course (server/courses/staff.py says what each may do);
    runs against a server with --server (an instructor's token: a TA may not change staff)."""
    from server.courses.schemas import StaffAddedPublic

    if role not in ("ta", "instructor"):
        raise typer.BadParameter("use ta or instructor", param_hint="--role")
    server = remote.target()
    if server is not None:
        added = StaffAddedPublic.model_validate(
            server.send(
                "POST",
                f"/courses/{remote.part(course)}/staff",
                {"name": name, "role": role},
                dry_run="true" if dry_run else None,
            )
        )
    else:
        added = _staff_here(course, name, role, dry_run)
    what = f"{'a TA' if role == 'ta' else 'an instructor'} of {plain(repr(course))}"
    if dry_run:
        common.err.print(
            f"Dry run: {plain(repr(name))} would become {what}"
            + (" (a new account, its token shown once)" if added.created else "")
            + (" (their account would become an instructor account)" if added.account_raised else "")
            + "; nothing changed.",
            highlight=False,
            soft_wrap=True,
        )
        return
    common.err.print(
        f"{plain(repr(name))} is now {what}"
        + (" (their account is now an instructor account)" if added.account_raised else "")
        + (". Token (shown once):" if added.token else "."),
        highlight=False,
        soft_wrap=True,
    )
    if added.token:
        # The token alone on stdout, as `users add` prints it.
        print(added.token)


def _staff_here(course: str, name: str, role: str, dry_run: bool) -> StaffAddedPublic:
    """``courses staff add`` on this installation's database, answered as the API answers it."""
    from server.courses.schemas import StaffAddedPublic
    from server.courses.service import find_course
    from server.courses.staff import add_staff
    from server.db import rolled_back

    settings = common.settings()
    with common.session() as session:
        where = find_course(session, course)
        with rolled_back(session) if dry_run else nullcontext():
            added = add_staff(session, where, name, role, settings.secret_bytes, actor=common.actor())  # type: ignore[arg-type]
            return StaffAddedPublic(
                course=where.slug,
                name=added.user.name,
                role=role,  # type: ignore[arg-type]
                token=None if dry_run else added.token,
                created=added.token is not None,
                account_raised=added.account_raised,
            )


@staff_app.command("remove")
@common.edge
def courses_staff_remove(
    course: Annotated[str, typer.Argument(help="Course slug.")],
    name: Annotated[str, typer.Argument(help="The staff member's login.")],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only check and say what it would do; nothing is written.")
    ] = False,
) -> None:
    """Take a TA or an instructor off a course's staff (their account, submissions and past
    actions in the audit log stay; a course keeps its last instructor); runs against a server
    with --server (an instructor's token: a TA may not change staff)."""
    from server.courses.schemas import StaffRemovedPublic

    server = remote.target()
    if server is not None:
        removed = StaffRemovedPublic.model_validate(
            server.delete(
                f"/courses/{remote.part(course)}/staff/{remote.part(name)}", dry_run="true" if dry_run else None
            )
        )
    else:
        removed = _staff_removed_here(course, name, dry_run)
    what = f"{'a TA' if removed.role == 'ta' else 'an instructor'} of {plain(repr(removed.course))}"
    common.err.print(
        f"Dry run: {plain(repr(removed.name))} would no longer be {what}; nothing changed."
        if dry_run
        else f"{plain(repr(removed.name))} is no longer {what}.",
        highlight=False,
        soft_wrap=True,
    )


def _staff_removed_here(course: str, name: str, dry_run: bool) -> StaffRemovedPublic:
    """``courses staff remove`` on this installation's database, answered as the API answers it."""
    from server.courses.schemas import StaffRemovedPublic
    from server.courses.service import find_course
    from server.courses.staff import remove_staff
    from server.db import rolled_back

    with common.session() as session:
        where = find_course(session, course)
        with rolled_back(session) if dry_run else nullcontext():
            removed = remove_staff(session, where, name, actor=common.actor())
            return StaffRemovedPublic(course=where.slug, name=removed.user.name, role=removed.role)


@app.command("real-names")
@common.edge
def courses_real_names(
    course: Annotated[str, typer.Argument(help="Course slug.")],
    show: Annotated[str, typer.Argument(help="on: learners see classmates' names on the boards; off: pseudonyms.")],
) -> None:
    """Whether a course's learners see real names on its boards (off by default; instructors always do)."""
    from server.courses.service import find_course

    if show not in ("on", "off"):
        raise typer.BadParameter("use on or off", param_hint="SHOW")
    with common.session() as session:
        find_course(session, course).board_real_names = show == "on"
    common.err.print(
        f"{course!r}: learners see {'display names' if show == 'on' else 'pseudonyms'} on the boards.", highlight=False
    )
