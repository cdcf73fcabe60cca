"""``ppo-grader users``: add, list, revoke and rotate tokens, import a roster."""

from __future__ import annotations

import csv
import sys
from typing import Annotated

import typer
from rich.table import Table

from server.cli import common
from server.models import Role
from server.terminal import plain

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


@app.command("revoke")
@common.edge
def users_revoke(name: Annotated[str, typer.Argument(help="Whose tokens to revoke.")]) -> None:
    """Revoke every token of a user (they can no longer call the API)."""
    from server.users.service import managed_user, revoke_tokens

    with common.session() as session:
        revoked = revoke_tokens(session, managed_user(session, None, name))
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
