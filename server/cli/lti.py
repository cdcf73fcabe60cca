"""``ppo-grader lti``: register platforms, rotate the tool's key, sync a roster, preview and
apply grades.

The commands work on the database, like the rest of ``ppo-grader``, and call the LMS
directly (``sync-roster``, ``grades preview`` and ``grades apply``); the tool's key is the one
the server signs with, read with the same SECRET_KEY. ``platforms`` shows each platform's last
failed call to its token or key set URL (``server.lti.platforms.service_failed``).
"""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.table import Table
from sqlalchemy import select
from sqlalchemy.orm import Session

from server.cli import common
from server.config import Settings
from server.models import Course, LtiContext, LtiPlatform
from server.terminal import plain


def _link(session: Session, course_slug: str) -> tuple[Course, LtiContext]:
    from server.courses.service import find_course
    from server.lti.errors import PlatformNotFound

    course = find_course(session, course_slug)
    link = session.scalar(select(LtiContext).where(LtiContext.course_id == course.id))
    if link is None:
        raise PlatformNotFound(
            f"The course {course_slug!r} is not linked to an LMS course: an instructor links it by opening "
            "ppo-grader from the LMS course once."
        )
    return course, link


def _published_key(settings: Settings) -> None:
    """Make (and commit) the tool's key before a command signs with it: the LMS checks the
    signature against /lti/jwks, which serves committed keys only."""
    from server.lti.keys import signing_key

    with common.session() as session:
        signing_key(session, settings.secret_bytes)


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


app = typer.Typer(help="LTI 1.3: LMS platforms, the tool's key, rosters and grades.", no_args_is_help=True)
grades_app = typer.Typer(help="Grades back to the LMS: preview, apply, automatic mode.", no_args_is_help=True)
app.add_typer(grades_app, name="grades")


@app.command("add-platform")
@common.edge
def add_platform_command(
    issuer: Annotated[str, typer.Option(help="The platform's issuer (iss), e.g. https://canvas.instructure.com.")],
    client_id: Annotated[str, typer.Option(help="The client id the LMS gave the tool.")],
    auth_login_url: Annotated[str, typer.Option(help="The LMS's OIDC authorization URL.")],
    auth_token_url: Annotated[str, typer.Option(help="The LMS's OAuth2 token URL.")],
    jwks_url: Annotated[str, typer.Option(help="The LMS's public key set (JWKS) URL.")],
    deployment_id: Annotated[
        list[str] | None, typer.Option(help="A deployment id to accept (repeat for several).")
    ] = None,
    name: Annotated[str, typer.Option(help="A name for people (defaults to the issuer).")] = "",
) -> None:
    """Register an LMS: launches from it (and only from its deployments) are accepted."""
    from server.lti.platforms import Registration, add_platform

    reg = Registration(name, issuer, client_id, auth_login_url, auth_token_url, jwks_url, tuple(deployment_id or ()))
    with common.session() as session:
        platform = add_platform(session, reg)
        summary = f"Registered {platform.name!r} (id {platform.id}) with {len(reg.deployment_ids)} deployment id(s)."
    common.err.print(plain(summary), highlight=False, soft_wrap=True)


@app.command("add-deployment")
@common.edge
def add_deployment_command(
    platform: Annotated[str, typer.Argument(help="The platform's name, issuer or id.")],
    deployment_id: Annotated[str, typer.Argument(help="The deployment id to accept.")],
) -> None:
    """Accept launches from one more deployment of a registered LMS."""
    from server.lti.platforms import add_deployment, platform_by_name

    with common.session() as session:
        added = add_deployment(session, platform_by_name(session, platform), deployment_id)
    common.err.print(
        plain(f"Deployment {deployment_id!r} " + ("added." if added else "was registered already.")),
        highlight=False,
    )


@app.command("platforms")
@common.edge
def platforms_command() -> None:
    """List the registered LMSes, their deployments, and the last failure of their token or key set URL."""
    from server.lti.platforms import deployments, failure_text, list_platforms
    from server.times import local_time

    table = Table("id", "name", "issuer", "client id", "deployments", "last failure")
    with common.session() as session:
        for p in list_platforms(session):
            failed = failure_text(p)
            shown = f"{local_time(p.failed_at, 'UTC')}: {failed}" if failed and p.failed_at else (failed or "none")
            cells = (str(p.id), p.name, p.issuer, p.client_id, ", ".join(deployments(session, p)), shown)
            table.add_row(*map(plain, cells))  # text as entered (or as the LMS answered), never Rich markup
    common.out.print(table)


@app.command("rotate-key")
@common.edge
def rotate_key_command() -> None:
    """Make a new tool signing key; the old one stays published at /lti/jwks for two days."""
    from server.lti.keys import rotate

    settings = Settings()
    with common.session() as session:
        new, retired = rotate(session, settings.secret_bytes)
    common.err.print(f"New signing key {new}; retired {', '.join(retired) or 'none'}.", highlight=False, soft_wrap=True)


@app.command("config")
@common.edge
def config_command(
    url: Annotated[str, typer.Option(help="The server's public address, e.g. https://grader.example.edu.")],
) -> None:
    """Print the tool's URLs and its Canvas configuration JSON (docs/lti.md)."""
    from server.lti.configuration import canvas_configuration

    base = url.rstrip("/")
    common.err.print(
        f"Login (OIDC initiation) URL: {base}/lti/login\nLaunch / redirect URL: {base}/lti/launch\n"
        f"Public key set (JWKS) URL: {base}/lti/jwks\nCanvas JSON (below) is also at {base}/lti/config.json",
        highlight=False,
        soft_wrap=True,
    )
    common.out.print_json(json.dumps(canvas_configuration(base)))


@app.command("sync-roster")
@common.edge
def sync_roster_command(course: Annotated[str, typer.Argument(help="Course slug.")]) -> None:
    """Pull the course's members and roles from the LMS; mark those it no longer lists as dropped."""
    from server.lti.roster import sync_roster

    settings = Settings()
    _published_key(settings)
    with common.sessions() as sessions:
        with sessions() as session:
            _, link = _link(session, course)
        done = sync_roster(sessions, link.id, settings.secret_bytes)  # no transaction held while the LMS answers
    names = {
        what: plain(", ".join(people) or "none") for what, people in vars(done).items() if isinstance(people, list)
    }
    common.err.print(
        f"Added {len(done.added)} ({names['added']}); roles changed {len(done.role_changed)} "
        f"({names['role_changed']}); dropped {len(done.dropped)} ({names['dropped']}); "
        f"{done.unchanged} unchanged, {done.skipped} skipped (no role in the course), "
        f"{done.invalid} left out (their id or roles are not valid text).",
        highlight=False,
        soft_wrap=True,
    )


@grades_app.command("preview")
@common.edge
def preview_command(course: Annotated[str, typer.Argument(help="Course slug.")]) -> None:
    """Per learner and exercise: the score that counts, what was last sent, what the LMS has, what apply does."""
    from server.lti.grades import Action, plan
    from server.lti.services import LmsClient

    settings = Settings()
    _published_key(settings)
    with common.sessions() as sessions, sessions() as session:
        _, link = _link(session, course)
        platform = session.get(LtiPlatform, link.platform_id)
        assert platform is not None
        with LmsClient(
            sessions, settings.secret_bytes, platform
        ) as client:  # writes (token outcomes) in its own transactions
            planned = plan(session, link, client=client)
    table = Table(
        "learner",
        "exercise",
        "counts",
        "last sent",
        "LMS has",
        "apply",
        title=plain(f"{course} → {platform.name}"),
    )
    for line in planned.lines:
        sent = "excused" if line.sent_excused else (_score(line.sent) if line.was_sent else "-")
        table.add_row(
            *map(
                plain,
                (
                    line.login,
                    line.exercise,
                    line.described,
                    sent,
                    "?" if planned.lms_error else _score(line.lms),
                    line.action,
                ),
            )
        )
    common.out.print(table)
    if planned.lms_error:
        common.err.print(
            f"[yellow]what the LMS has could not be read:[/yellow] {plain(planned.lms_error)}",
            highlight=False,
            soft_wrap=True,
        )
    common.err.print(
        f"{len(planned.to_send)} to send, {sum(ln.action == Action.UP_TO_DATE for ln in planned.lines)} up to date.",
        highlight=False,
        soft_wrap=True,
    )


@grades_app.command("apply")
@common.edge
def apply_command(course: Annotated[str, typer.Argument(help="Course slug.")]) -> None:
    """Send every score that counts which differs from what the LMS was last sent."""
    from server.lti.grades import apply

    settings = Settings()
    _published_key(settings)
    with common.sessions() as sessions:
        with sessions() as session:
            _, link = _link(session, course)
        done = apply(sessions, link.id, settings.secret_bytes)  # no transaction held while the LMS answers
    assert done is not None  # the link was read just above; only an admin's delete meanwhile removes it
    line = f"Sent {done.sent} score(s); {done.up_to_date} up to date; {done.held} held until due."
    if done.waiting:
        line += f" {done.waiting} wait for a column the LMS (or another job) is making: sent by the next apply."
    if done.overtaken:
        line += f" {done.overtaken} left to another apply running at once, which read them later."
    if done.error:
        common.err.print(  # the error quotes the LMS's answers: escaped, never read as Rich markup
            f"[red]error:[/red] {line} Stopped: {plain(done.error)} Nothing was lost: run apply again.",
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(code=2)
    common.err.print(line, highlight=False, soft_wrap=True)


@grades_app.command("auto")
@common.edge
def auto_command(
    course: Annotated[str, typer.Argument(help="Course slug.")],
    mode: Annotated[str, typer.Argument(help="on or off.")],
) -> None:
    """Automatic mode: every change of a score that counts is sent by a background job."""
    if mode not in ("on", "off"):
        raise typer.BadParameter("use on or off", param_hint="MODE")
    with common.session() as session:
        _, link = _link(session, course)
        link.auto_grades = mode == "on"
    common.err.print(f"Automatic grades for {course!r}: {mode}.", highlight=False, soft_wrap=True)
