"""``ppo-grader users``: add, list, issue (scoped), list, revoke and rotate tokens, import a roster."""

from __future__ import annotations

import csv
import sys
from typing import Annotated

import typer
from rich.table import Table

from server.cli import common
from server.terminal import plain
from server.vocabulary import Role

app = typer.Typer(help="Manage users and their tokens.", no_args_is_help=True)


@app.command("add")
@common.edge
def users_add(
    name: Annotated[str, typer.Argument(help="Login (a-z, 0-9, . _ - and one @: an email address or SIS id works).")],
    role: Annotated[Role, typer.Option(help="learner, instructor or admin.")] = Role.LEARNER,
    display_name: Annotated[str | None, typer.Option(help="Shown in listings; defaults to NAME.")] = None,
) -> None:
    """Create a user and print their API token (shown once; stored only hashed)."""
    from server.users.service import create_user

    settings = common.settings()
    with common.session() as session:
        created = create_user(session, name, role, settings.secret_bytes, display_name)
        token = created.token
    common.err.print(f"Created {role.value} {name!r}. Token (shown once):", highlight=False)
    # The token alone on stdout, so `TOKEN=$(ppo-grader users add bob)` works.
    print(token)


@app.command("list")
@common.edge
def users_list() -> None:
    """List users (never tokens)."""
    from server.times import local_time
    from server.users.service import list_users

    with common.session() as session:
        table = Table("id", "name", "display name", "role", "created")
        for user in list_users(session):
            table.add_row(
                *map(
                    plain,
                    (
                        str(user.id),
                        user.name,
                        user.display_name,
                        user.role,
                        local_time(user.created_at, "UTC", seconds=False),
                    ),
                )
            )
    common.out.print(table)


@app.command("token")
@common.edge
def users_token(
    name: Annotated[str, typer.Argument(help="Whose token to make.")],
    read_only: Annotated[bool, typer.Option("--read-only", help="Scope 'read': GET, HEAD and OPTIONS only.")] = False,
    course: Annotated[
        str | None, typer.Option(help="Limit it to this course (one NAME is in); default: every course.")
    ] = None,
    label: Annotated[str | None, typer.Option(help='What it is for ("laptop"), shown in `users tokens`.')] = None,
) -> None:
    """Make one more token for a user and print it (shown once); their other tokens stay valid.

    --read-only and --course narrow it (docs/security.md, "API tokens"): a read-only token changes
    nothing; a course-limited one reaches that course alone. Neither opens a web session.
    """
    from sqlalchemy import select

    from server.courses.service import course_role
    from server.errors import CourseNotFound
    from server.models import Course, TokenScope
    from server.users.service import issue_token, managed_user

    settings = common.settings()
    scope = TokenScope.READ if read_only else TokenScope.FULL
    with common.session() as session:
        user = managed_user(session, None, name)
        course_id = None
        if course is not None:
            found = session.scalar(select(Course).where(Course.slug == course))
            if found is None or course_role(session, user, found) is None:
                raise CourseNotFound(f"{name!r} is in no course {course[:64]!r} (`ppo-grader courses list`).")
            course_id = found.id
        token = issue_token(session, user, settings.secret_bytes, scope=scope, course_id=course_id, label=label)
    reach = f"course {course!r} only" if course else "every course"
    common.err.print(f"New {scope.value} token of {name!r} for {reach} (shown once):", highlight=False)
    print(token)


@app.command("tokens")
@common.edge
def users_tokens(name: Annotated[str, typer.Argument(help="Whose tokens to list.")]) -> None:
    """List a user's tokens, live and revoked: prefix, scope, course, label, created, revoked."""
    from server.times import local_time
    from server.users.service import list_tokens, managed_user

    with common.session() as session:
        table = Table("prefix", "scope", "course", "label", "created", "revoked")
        for listing in list_tokens(session, managed_user(session, None, name)):
            token = listing.token
            revoked = "" if token.revoked_at is None else local_time(token.revoked_at, "UTC", seconds=False)
            table.add_row(
                *map(
                    plain,
                    (
                        token.prefix,
                        token.scope,
                        listing.course or "(every course)",
                        token.label or "",
                        local_time(token.created_at, "UTC", seconds=False),
                        revoked,
                    ),
                )
            )
    common.out.print(table)


@app.command("revoke")
@common.edge
def users_revoke(
    name: Annotated[str, typer.Argument(help="Whose tokens to revoke.")],
    prefix: Annotated[
        str | None, typer.Option(help="Only the token with this prefix (as `users tokens` lists it).")
    ] = None,
) -> None:
    """Revoke every token of a user (they can no longer call the API), or with --prefix one."""
    from server.users.service import managed_user, revoke_token, revoke_tokens

    with common.session() as session:
        user = managed_user(session, None, name)
        if prefix is not None:
            revoke_token(session, user, prefix)
            common.err.print(f"Revoked the token {prefix[:16]!r} of {name!r}.", highlight=False)
            return
        revoked = revoke_tokens(session, user)
    common.err.print(f"Revoked {revoked} token(s) of {name!r}.", highlight=False)


@app.command("rotate")
@common.edge
def users_rotate(name: Annotated[str, typer.Argument(help="Whose token to rotate.")]) -> None:
    """Revoke every token of a user and print a new one (shown once)."""
    from server.users.service import managed_user, rotate_token

    settings = common.settings()
    with common.session() as session:
        token, revoked = rotate_token(session, managed_user(session, None, name), settings.secret_bytes)
    common.err.print(f"Revoked {revoked} token(s) of {name!r}. New token (shown once):", highlight=False)
    print(token)


@app.command("import")
@common.edge
def users_import(
    roster: Annotated[typer.FileText, typer.Argument(help="CSV with a header: name,display_name[,role][,course].")],
    course: Annotated[
        str | None, typer.Option(help="Enroll every row in this course (or use a 'course' column).")
    ] = None,
) -> None:
    """Create users from a CSV roster; print each new user's token once (CSV on stdout).

    With --course (or a 'course' column) every row's user is enrolled in that course, and
    users who exist already are enrolled instead of skipped. Logins may be email addresses or
    SIS ids (docs/instructors.md, "Logins"). Each row that is skipped (a duplicate, an invalid
    login or role) is listed on stderr with its line and reason, and the exit code is then 1;
    the other rows are imported.
    """
    roster_import(roster.read(), course)


def roster_import(text: str, course: str | None) -> None:
    """Create (or, with a course, enroll) a CSV roster's users; new tokens as CSV on stdout, once
    (``users import`` and ``courses enroll``); exit code 1 when any row was skipped
    (``server.users.roster_report``)."""
    from server.courses.service import roster_enroller
    from server.users.roster_report import TOKEN_HEADER, roster_lines
    from server.users.service import import_roster

    settings = common.settings()
    with common.session() as session:
        header = text.lstrip("\ufeff").split("\n", 1)[0].lower()
        enroller = roster_enroller(session, None, course) if course or "course" in header else None
        report = roster_lines(import_roster(session, text, settings.secret_bytes, None, enroller))
    csv.writer(sys.stdout).writerows([TOKEN_HEADER, *report.token_rows])
    for line in [*report.notes, *report.skipped, report.summary]:
        common.err.print(plain(line), highlight=False, soft_wrap=True)
    if report.failed:
        raise typer.Exit(1)
