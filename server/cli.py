"""``ppo-grader``: serve the API, manage users, list exercises.

Errors are caught once, at the edge, and printed as one red line with exit code 2. Stored
text (names, titles, messages) is printed through ``server.terminal.plain``, never as Rich
markup or raw control characters.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn, ParamSpec, TypeVar

import typer
from pydantic import ValidationError
from rich.table import Table
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from exercises.packs import PackError
from server.config import Settings
from server.db import make_engine, make_session_factory, transaction
from server.errors import GraderError
from server.lti.cli import build_lti_app
from server.migrations import upgrade_to_head
from server.models import Role
from server.terminal import err, out, plain

if TYPE_CHECKING:
    from exercises.framework import Exercise
    from exercises.verify import Verification
    from server.location import Located

app = typer.Typer(help="ppo-grader: the autograder service.", no_args_is_help=True, add_completion=False)
users_app = typer.Typer(help="Manage users and their tokens.", no_args_is_help=True)
exercises_app = typer.Typer(help="Inspect the exercise catalog.", no_args_is_help=True)
courses_app = typer.Typer(help="Courses: create, list, enroll a roster, export a gradebook.", no_args_is_help=True)
sets_app = typer.Typer(
    help="Exercise sets: publish an exercise in a course with its dates and late policy.", no_args_is_help=True
)
extensions_app = typer.Typer(help="Extensions: a later due date for one learner on one exercise.", no_args_is_help=True)
app.add_typer(users_app, name="users")
app.add_typer(exercises_app, name="exercises")
app.add_typer(courses_app, name="courses")
app.add_typer(sets_app, name="sets")
app.add_typer(extensions_app, name="extensions")
scores_app = typer.Typer(
    help="The score that counts: list it; override, excuse, take back (recorded who, when, why).", no_args_is_help=True
)
submissions_app = typer.Typer(help="Submissions: export a course's sources and scores.", no_args_is_help=True)
app.add_typer(scores_app, name="scores")
app.add_typer(submissions_app, name="submissions")

P = ParamSpec("P")
R = TypeVar("R")


def _edge(command: Callable[P, R]) -> Callable[P, R]:
    """Turn expected failures into one red line and exit code 2, without a traceback."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except GraderError as exc:
            _fail(exc.detail)
        except ValidationError as exc:
            # Settings refused (e.g. the default secret in production): show pydantic's messages.
            _fail("invalid settings: " + "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors()))
        except SQLAlchemyError as exc:
            _fail(f"database error: {exc.__class__.__name__}: {str(exc).splitlines()[0]}")
        except OSError as exc:
            _fail(str(exc))
        except PackError as exc:
            _fail(str(exc))

    return wrapper


def _fail(message: str) -> NoReturn:
    # the message may quote what a user or an LMS sent ("[/x]", ESC): escaped, never read as markup
    err.print(f"[red]error:[/red] {plain(message)}", markup=True, highlight=False, soft_wrap=True)
    raise typer.Exit(code=2)


#: The root options of this invocation (``ppo-grader --init ...``), set by ``_root``.
_INIT = {"init": False}


@app.callback()
def _root(
    init: Annotated[
        bool, typer.Option("--init", help="Let an admin command create a new database where none is.")
    ] = False,
) -> None:
    """ppo-grader: the autograder service. Every command uses this installation's database
    (PPO_GRADER_DATABASE_URL for one process, else the one `serve --database` recorded in the
    data folder, else data/ppo-grader.db of this checkout) and says which."""
    _INIT["init"] = init


def _settings() -> Settings:
    """The settings, with the database found as ``serve`` finds it (``server.location``)."""
    from server.location import locate

    return Settings().model_copy(update={"DATABASE_URL": locate().url})


def _database(*, create: bool = False) -> Located:
    """The located database through the one guard every command passes (``server.location.guarded``):
    a recorded database that is gone is refused; one never set up is refused unless ``create``
    (serve, migrate, worker) or ``--init``."""
    from server.location import guarded

    return guarded(create=create or _INIT["init"])


@contextmanager
def _session(settings: Settings) -> Iterator[Session]:
    """One transaction on the located, migrated database, named on stderr; a database that
    does not exist yet is refused unless ``--init`` (an admin command run from the wrong
    folder must not make a new one and print a token the real server rejects). The engine
    is closed afterwards, so that a command run in-process (tests) leaves no connection behind."""
    where = _database()  # whatever settings the caller built, the database is the one located
    settings = settings.model_copy(update={"DATABASE_URL": where.url})
    engine = make_engine(settings.DATABASE_URL)
    try:
        upgrade_to_head(engine)
        with transaction(make_session_factory(engine)) as session:
            from exercises import registry
            from server.catalog.packs_config import recorded_packs

            registry.serve_folders(recorded_packs(session))  # the service's packs, not the shell's
            yield session
    finally:
        engine.dispose()
    # Said once the command has worked (a failure stays one red line, as every error is).
    err.print(f"[dim]database: {where.shown} (from {where.source})[/dim]", highlight=False, soft_wrap=True)


def _served_packs(url: str) -> list[str]:
    """Hand the pack folders recorded in the database at ``url`` to the catalogue (every command
    sees the packs the service serves, whatever its shell holds); the folders."""
    from exercises import registry
    from server.catalog.packs_config import recorded_packs

    engine = make_engine(url)
    try:
        upgrade_to_head(engine)
        with make_session_factory(engine)() as session:
            folders = recorded_packs(session)
    finally:
        engine.dispose()
    registry.serve_folders(folders)
    return folders


def _served_packs_if_any() -> None:
    """:func:`_served_packs` of the located database when there is one (an author's laptop
    without a server lists and verifies what its own process sees); a recorded one that is gone
    is refused, as everywhere."""
    from server.location import guarded, is_initialised, locate

    where = locate()
    if where.recorded or is_initialised(where.url):
        _served_packs(guarded(create=False).url)


def _packs_line(catalogue: list[Exercise]) -> str:
    """The banner's line of packs: each with its exercises, in catalogue order."""
    by_pack: dict[str, list[str]] = {}
    for exercise in catalogue:
        by_pack.setdefault(exercise.pack, []).append(exercise.slug)
    return "packs: " + "; ".join(
        f"{pack} ({len(slugs)} exercise{'s' if len(slugs) != 1 else ''}"
        + ("" if pack == "built-in" else ": " + ", ".join(slugs))
        + ")"
        for pack, slugs in by_pack.items()
    )


@app.command()
@_edge
def serve(
    host: Annotated[str, typer.Option(help="Interface to listen on.", envvar="PPO_GRADER_HOST")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.", envvar="PPO_GRADER_PORT")] = 8000,
    database: Annotated[
        str | None,
        typer.Option(
            "--database",
            help="Use this database URL from now on: recorded in this installation's data folder, so every "
            "command of this checkout finds it (PPO_GRADER_DATABASE_URL instead: this process only).",
        ),
    ] = None,
    pack: Annotated[
        list[Path] | None,
        typer.Option(
            "--pack",
            help="Serve this exercise pack folder (repeatable): recorded in the database, so every command "
            "(worker, admin, verify) sees the same packs. Without it: the packs recorded before.",
        ),
    ] = None,
) -> None:
    """Start the API and the in-process grading workers (migrations are applied first)."""
    import logging
    import os

    import uvicorn

    from exercises import registry
    from exercises.packs import env_packs, path_pack
    from server.app import create_app
    from server.catalog.packs_config import record_packs
    from server.location import ENV_URL, Located, absolute, remember
    from server.logging_setup import configure_logging

    if database is not None:
        if os.environ.get(ENV_URL):
            _fail(f"give the database once: --database or {ENV_URL}, not both")
        written = remember(database)
        where = Located(absolute(database), "--database" + (f", recorded in {written}" if written else ""), True)
    else:
        where = _database(create=True)
    settings = Settings().model_copy(update={"DATABASE_URL": where.url})
    given = [str(p.expanduser().resolve()) for p in pack or []] + [str(p.root) for p in env_packs()]
    for folder in given:
        path_pack(folder)  # a folder given that is none: said as such, before anything is recorded
    if not given:
        _served_packs(where.url)  # the packs recorded before
    # Every pack now: one that fails stops the service here, with one line (and is not recorded).
    catalogue = registry.load(served=list(dict.fromkeys(given)) if given else None)
    if given:  # loaded whole: the service's packs from now on, for every command on this database
        engine = make_engine(where.url)
        try:
            upgrade_to_head(engine)
            with transaction(make_session_factory(engine)) as session:
                record_packs(session, registry.served_folders())
        finally:
            engine.dispose()
    # The banner, before any log line: which database, which packs (issue 32: it used to be one
    # line after the installer's output, and a server on the wrong database went unnoticed).
    err.print(f"database: {where.shown} (from {where.source})", highlight=False, soft_wrap=True)
    err.print(_packs_line(catalogue), highlight=False, soft_wrap=True)
    # JSON lines on stderr (PPO_GRADER_LOG_FORMAT=text for the human format), uvicorn's too.
    configure_logging()
    uvicorn.run(create_app(settings), host=host, port=port, log_level="info", log_config=None)
    logging.getLogger(__name__).info("server stopped")


@app.command()
@_edge
def worker(
    queue: Annotated[str, typer.Option(help="Which queue to serve: cpu or gpu (gpu grades on CUDA).")] = "cpu",
    concurrency: Annotated[int, typer.Option(min=1, max=64, help="Jobs graded at once (one warm jail each).")] = 1,
    metrics_port: Annotated[
        int | None,
        typer.Option(
            help="Serve this process's Prometheus metrics (and a health probe) on this port.",
            envvar="PPO_GRADER_METRICS_PORT",
        ),
    ] = None,
) -> None:
    """Grade submissions from the procrastinate queue (QUEUE=procrastinate, PostgreSQL).

    Run as many as you like, on any machine that reaches the database; SIGTERM finishes
    the jobs in hand, then exits.
    """
    from server.grading.procrastinate_backend import QUEUES, run_worker
    from server.logging_setup import configure_logging

    if queue not in QUEUES:
        raise typer.BadParameter(f"use one of {', '.join(QUEUES)}", param_hint="--queue")
    from exercises import registry

    settings = Settings().model_copy(update={"DATABASE_URL": _database(create=True).url})
    _served_packs(settings.DATABASE_URL)
    registry.load()  # the same packs as the API's (recorded in the database), or no worker
    configure_logging()
    upgrade_to_head(make_engine(settings.DATABASE_URL))  # idempotent; the job tables must exist
    run_worker(settings, queue, concurrency, metrics_port)


@app.command()
@_edge
def migrate() -> None:
    """Apply pending database migrations, then exit (docker-compose's one-shot `migrate`)."""
    where = _database(create=True)
    upgrade_to_head(make_engine(where.url))
    err.print(f"database {where.shown} (from {where.source}) is at the latest migration", highlight=False)


@users_app.command("add")
@_edge
def users_add(
    name: Annotated[str, typer.Argument(help="Login name (a-z, 0-9, . _ -).")],
    role: Annotated[Role, typer.Option(help="learner, instructor or admin.")] = Role.LEARNER,
    display_name: Annotated[str | None, typer.Option(help="Shown in listings; defaults to NAME.")] = None,
) -> None:
    """Create a user and print their API token (shown once; stored only hashed)."""
    from server.users.service import create_user

    settings = _settings()
    with _session(settings) as session:
        created = create_user(session, name, role, settings.secret_bytes, display_name)
        token = created.token
    err.print(f"Created {role.value} {name!r}. Token (shown once):", highlight=False)
    # The token alone on stdout, so `TOKEN=$(ppo-grader users add bob)` works.
    print(token)


@users_app.command("list")
@_edge
def users_list() -> None:
    """List users (never tokens)."""
    from server.users.service import list_users

    settings = _settings()
    with _session(settings) as session:
        table = Table("id", "name", "display name", "role", "created")
        for user in list_users(session):
            cells = (str(user.id), user.name, user.display_name, user.role, f"{user.created_at:%Y-%m-%d %H:%M}")
            table.add_row(*map(plain, cells))
    out.print(table)


@users_app.command("revoke")
@_edge
def users_revoke(name: Annotated[str, typer.Argument(help="Whose tokens to revoke.")]) -> None:
    """Revoke every token of a user (they can no longer call the API)."""
    from server.users.service import managed_user, revoke_tokens

    settings = _settings()
    with _session(settings) as session:
        revoked = revoke_tokens(session, managed_user(session, None, name))
    err.print(f"Revoked {revoked} token(s) of {name!r}.", highlight=False)


@users_app.command("rotate")
@_edge
def users_rotate(name: Annotated[str, typer.Argument(help="Whose token to rotate.")]) -> None:
    """Revoke every token of a user and print a new one (shown once)."""
    from server.users.service import managed_user, rotate_token

    settings = _settings()
    with _session(settings) as session:
        token, revoked = rotate_token(session, managed_user(session, None, name), settings.secret_bytes)
    err.print(f"Revoked {revoked} token(s) of {name!r}. New token (shown once):", highlight=False)
    print(token)


@users_app.command("import")
@_edge
def users_import(
    roster: Annotated[typer.FileText, typer.Argument(help="CSV with a header: name,display_name[,role][,course].")],
    course: Annotated[
        str | None, typer.Option(help="Enroll every row in this course (or use a 'course' column).")
    ] = None,
) -> None:
    """Create users from a CSV roster; print each new user's token once (CSV on stdout).

    With --course (or a 'course' column) every row's user is enrolled in that course, and
    users who exist already are enrolled instead of skipped. Duplicates and invalid rows are
    reported on stderr and skipped; the exit code is 0.
    """
    _import_roster(roster.read(), course)


def _import_roster(text: str, course: str | None) -> None:
    import csv
    import sys

    from server.courses.service import roster_enroller
    from server.users.service import import_roster

    settings = _settings()
    with _session(settings) as session:
        header = text.lstrip("\ufeff").split("\n", 1)[0].lower()
        enroller = roster_enroller(session, None, course) if course or "course" in header else None
        outcomes = import_roster(session, text, settings.secret_bytes, None, enroller)
    writer = csv.writer(sys.stdout)
    writer.writerow(["name", "display_name", "role", "token"])
    for o in outcomes:
        if o.token is not None:
            writer.writerow([o.name, o.display_name, o.role.value if o.role else "", o.token])
        elif o.course is not None:
            err.print(
                f"line {o.line}: enrolled existing user {plain(repr(o.name))} in {plain(repr(o.course))}",
                highlight=False,
            )
        else:
            err.print(
                f"[yellow]line {o.line}:[/yellow] skipped {plain(repr(o.name))}: {plain(o.error)}", highlight=False
            )
    created = sum(o.token is not None for o in outcomes)
    enrolled = sum(o.token is None and o.course is not None for o in outcomes)
    skipped = len(outcomes) - created - enrolled
    err.print(
        f"Created {created} user(s); enrolled {enrolled} existing; skipped {skipped}. Tokens are shown only now.",
        highlight=False,
    )


@exercises_app.command("list")
@_edge
def exercises_list() -> None:
    """List the exercises this server grades (the packs recorded in its database)."""
    from server.catalog.service import list_exercises

    _served_packs_if_any()
    table = Table("order", "slug", "function", "title")
    for exercise in list_exercises():
        table.add_row(*map(plain, (str(exercise.order), exercise.slug, exercise.function, exercise.title)))
    out.print(table)


@exercises_app.command("versions")
@_edge
def exercises_versions(slug: Annotated[str, typer.Argument(help="The exercise's slug.")]) -> None:
    """An exercise's versions: stored and verified ones, the pack folder's, and which course's
    set serves which (learners are graded by the version their set serves, nothing else)."""
    from exercises.registry import UnknownExercise, get_exercise
    from server.catalog.versions import versions_of

    with _session(_settings()) as session:
        try:
            exercise = get_exercise(slug)
        except UnknownExercise:
            exercise = None  # known only from its stored versions (its pack is not visible here)
        lines = versions_of(session, exercise, slug)
    if not lines:
        _fail(f"no exercise {slug!r} here and no stored version of it; `ppo-grader exercises list`")
    # One line per version (a table would cut the hashes at 80 columns): newest first.
    print(f"{slug}: {len(lines)} version(s), newest first")
    for line in lines:
        print(
            f"  {line.version}  verify {line.verified}"
            + (f" {line.verified_at}" if line.verified != "never" else "")
            + f"  grader {line.grader_version}  {'stored' if line.stored else 'not stored'}"
            + f"  serves: {', '.join(line.serves) or '-'}"
            + ("  (the pack folder's)" if line.in_folder else "")
        )
    for line in lines:
        if line.in_folder and line.verified != "passed" and any(o.serves for o in lines):
            out.print(
                f"{slug}: the pack folder's version {line.version} is not verified: nothing a learner sees "
                "changes until it passes `exercises verify` and is published",
                highlight=False,
                soft_wrap=True,
            )


@exercises_app.command("new")
@_edge
def exercises_new(
    slug: Annotated[str, typer.Argument(help="The new exercise's slug (lower-case words joined by hyphens).")],
    pack: Annotated[Path, typer.Option("--pack", help="The pack folder to write it into (created if needed).")],
) -> None:
    """Write a working exercise (spec, starter, reference, faulty reference, checks) to change."""
    from exercises.scaffold import ScaffoldError, new_exercise

    try:
        folder = new_exercise(slug, pack)
    except ScaffoldError as exc:
        _fail(str(exc))
    err.print(
        f"Wrote {folder}/ (it passes verify as written). Next: edit reference.py, faulty.py, checks.py "
        f"and starter.py, then `ppo-grader exercises verify --pack {pack}`.",
        highlight=False,
        soft_wrap=True,
    )


@exercises_app.command("verify")
@_edge
def exercises_verify(
    slug: Annotated[str | None, typer.Argument(help="Only this exercise (default: all, or all of --pack).")] = None,
    pack: Annotated[Path | None, typer.Option("--pack", help="Verify the exercises of this pack folder.")] = None,
    seeds: Annotated[int, typer.Option(min=1, max=100, help="Seeds graded per source (the gate asks for 20).")] = 20,
) -> None:
    """The gate before learners see an exercise: grade its reference, starter, a zeros stub and
    every fault through the real jail on every seed, check its starter and cases; print a table
    per exercise, record the result by content version (``sets publish`` needs a pass), and exit
    1 when anything fails."""
    from exercises import registry
    from exercises.judge import Judge
    from exercises.packs import path_pack
    from exercises.verify import SEEDS, verify_exercise
    from server.catalog.verification import record_verification
    from server.grading.grader import sandbox_limits
    from server.location import is_initialised, locate

    settings = _settings()
    _served_packs_if_any()
    extra = path_pack(pack) if pack is not None else None
    catalogue = registry.load([extra] if extra else [])
    chosen = [e for e in catalogue if extra is None or e.pack == extra.name]
    if slug is not None:
        chosen = [e for e in chosen if e.slug == slug]
        if not chosen:
            _fail(f"no exercise {slug!r}" + (f" in pack {pack}" if pack else "") + "; `ppo-grader exercises list`")
    judge = Judge(secret=settings.secret_bytes, limits=sandbox_limits(settings), pool_size=1)
    results = []
    try:
        for ex in chosen:
            result = verify_exercise(judge, ex, SEEDS[:seeds] if seeds <= len(SEEDS) else range(1, seeds + 1))
            results.append((ex, result))
            _print_verification(result)
    finally:
        judge.close()
    where = locate()
    if _INIT["init"] or is_initialised(where.url) or where.recorded:  # a recorded one that is gone: one red line
        with _session(settings) as session:
            for ex, result in results:
                record_verification(session, ex, result)
    else:  # an author's laptop: the gate still answers, but `sets publish` reads the server's record
        err.print(
            f"not recorded: no ppo-grader database at {where.shown} (from {where.source}); `sets publish` "
            "needs the record in the server's database (run verify where it finds it, or pass --init)",
            highlight=False,
            soft_wrap=True,
        )
    failed = [r.slug for _, r in results if not r.ok]
    out.print(
        f"{len(results) - len(failed)} of {len(results)} exercise(s) pass verify"
        + (f"; failing: {', '.join(failed)}" if failed else ""),
        highlight=False,
        soft_wrap=True,
    )
    if failed:
        raise typer.Exit(1)


def _print_verification(result: Verification) -> None:
    """One exercise's table, then each problem on a line of its own (never cut mid-sentence)."""
    table = Table("criterion", "result", title=plain(f"{result.slug} (pack {result.pack})"), title_justify="left")
    for c in result.criteria:
        table.add_row(plain(c.name), "[green]ok[/green]" if c.ok else f"[red]FAIL[/red] ({len(c.found)})")
    out.print(table)
    for problem in result.problems():
        out.print(f"  [red]x[/red] {plain(result.slug)}: {plain(problem)}", highlight=False, soft_wrap=True)


# --- Courses, exercise sets, extensions ------------------------------------------------


def _when(value: str | None, course, option: str):  # type: ignore[no-untyped-def]
    """An ISO date-time from the command line, in UTC; without an offset it is read in the
    course's time zone ("2026-12-07 09:00" is 9 am where the course is taught)."""
    from datetime import datetime

    from server.courses.service import read_time

    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise typer.BadParameter(
            f"not an ISO date-time: {value!r} (e.g. 2026-12-07T09:00)", param_hint=option
        ) from None
    return read_time(moment, course)


@courses_app.command("create")
@_edge
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
    from server.users.service import managed_user

    settings = _settings()
    with _session(settings) as session:
        course = create_course(session, slug, title, time_zone)
        for name in instructor or []:
            enroll(session, course, managed_user(session, None, name), INSTRUCTOR)
    err.print(f"Created course {slug!r} ({time_zone}).", highlight=False)


@courses_app.command("list")
@_edge
def courses_list() -> None:
    """List courses with their time zone, learners and published exercises."""
    from server.courses.service import LEARNER, members
    from server.courses.sets import entries
    from server.models import Course

    settings = _settings()
    table = Table("slug", "title", "time zone", "learners", "exercises")
    with _session(settings) as session:
        for course in session.query(Course).order_by(Course.slug):
            cells = (
                course.slug,
                course.title,
                course.time_zone,
                str(len(members(session, course, LEARNER))),
                ", ".join(e.exercise for e in entries(session, course))
                or ("(whole catalogue)" if course.is_default else ""),
            )
            table.add_row(*map(plain, cells))
    out.print(table)


@courses_app.command("enroll")
@_edge
def courses_enroll(
    course: Annotated[str, typer.Argument(help="Course slug.")],
    roster: Annotated[typer.FileText, typer.Argument(help="CSV with a header: name,display_name[,role].")],
) -> None:
    """Enroll a CSV roster in a course: new users are created (tokens printed once, CSV on
    stdout), existing ones enrolled. Same as `users import ROSTER --course COURSE`."""
    _import_roster(roster.read(), course)


@courses_app.command("gradebook")
@_edge
def courses_gradebook(course: Annotated[str, typer.Argument(help="Course slug.")]) -> None:
    """Print a course's gradebook as CSV (for the LMS): the score that counts, the raw best,
    which submission counted and whether it was late."""
    import sys

    from server.courses.service import find_course
    from server.gradebook.service import gradebook_csv

    settings = _settings()
    with _session(settings) as session:
        sys.stdout.write(gradebook_csv(session, find_course(session, course)))


@sets_app.command("publish")
@_edge
def sets_publish(
    course: Annotated[str, typer.Argument(help="Course slug.")],
    exercise: Annotated[str, typer.Argument(help="Exercise slug (ppo-grader exercises list).")],
    release: Annotated[
        str | None, typer.Option(help="Opens at (ISO; course's zone unless an offset is given). Default: now.")
    ] = None,
    due: Annotated[str | None, typer.Option(help="Due at; later submissions are accepted and flagged late.")] = None,
    close: Annotated[str | None, typer.Option(help="Hard close; later submissions are refused.")] = None,
    penalty: Annotated[
        float, typer.Option(min=0, max=100, help="Percent of the score off per started --per late (0: only flag).")
    ] = 0.0,
    per: Annotated[str, typer.Option(help="day or hour.")] = "day",
    attempts: Annotated[int | None, typer.Option(min=1, help="At most this many attempts per learner.")] = None,
    feedback: Annotated[
        str,
        typer.Option(
            help="What learners see of a verdict: full, score (score and check names), hidden-until-due "
            "(released at the due date) or tokens:N (N full reports a day; the others score)."
        ),
    ] = "full",
    version: Annotated[
        str | None,
        typer.Option(
            "--version",
            help="Serve this stored, verified content version (`exercises versions SLUG`); default: the "
            "pack folder's current one, which must have passed verify.",
        ),
    ] = None,
) -> None:
    """Publish an exercise in a course with its dates, late and feedback policies (or replace them)."""
    from server.courses.service import find_course, shown
    from server.courses.sets import publish

    settings = _settings()
    with _session(settings) as session:
        where = find_course(session, course)
        entry = publish(
            session,
            where,
            exercise,
            release_at=_when(release, where, "--release"),
            due_at=_when(due, where, "--due"),
            close_at=_when(close, where, "--close"),
            penalty_percent=penalty,
            penalty_unit=per,
            max_attempts=attempts,
            feedback_policy=feedback,
            version=version,
        )
        dates = ", ".join(
            f"{label} {shown(moment, where)}"
            for label, moment in (("opens", entry.release_at), ("due", entry.due_at), ("closes", entry.close_at))
            if moment is not None
        )
        policy = entry.feedback_policy
        pinned = entry.content_version
    err.print(
        f"Published {exercise!r} in {course!r}"
        + (f": {dates}" if dates else " (open, no dates)")
        + f"; feedback: {policy}"
        + (f"; graded with version {pinned} from now on (running workers too)." if pinned else "."),
        highlight=False,
        soft_wrap=True,
    )


@sets_app.command("list")
@_edge
def sets_list(course: Annotated[str, typer.Argument(help="Course slug.")]) -> None:
    """A course's exercise set, one line per exercise: dates (in the course's zone), policies."""
    from server.courses.service import find_course, shown
    from server.courses.sets import entries

    settings = _settings()
    with _session(settings) as session:
        where = find_course(session, course)
        lines = []
        for e in entries(session, where):
            dates = "; ".join(
                f"{label} {shown(m, where) if m else '-'}"
                for label, m in (("opens", e.release_at), ("due", e.due_at), ("closes", e.close_at))
            )
            late = (
                f"{e.penalty_percent:g}% off per {e.penalty_unit} late" if e.penalty_percent else "late: flagged only"
            )
            lines.append(
                f"{e.exercise}: {dates}; {late}; attempts: {e.max_attempts or 'no limit'}; "
                f"feedback: {e.feedback_policy}"
            )
    print("\n".join(lines) if lines else f"{course}: no exercise published yet")


@sets_app.command("remove")
@_edge
def sets_remove(
    course: Annotated[str, typer.Argument(help="Course slug.")],
    exercise: Annotated[str, typer.Argument(help="Exercise slug.")],
) -> None:
    """Take an exercise out of a course's set (its submissions and scores are kept)."""
    from server.courses.service import find_course
    from server.courses.sets import unpublish

    settings = _settings()
    with _session(settings) as session:
        unpublish(session, find_course(session, course), exercise)
    err.print(f"Removed {exercise!r} from {course!r}.", highlight=False)


@extensions_app.command("grant")
@_edge
def extensions_grant(
    course: Annotated[str, typer.Argument(help="Course slug.")],
    user: Annotated[str, typer.Argument(help="The learner's login name.")],
    exercise: Annotated[str, typer.Argument(help="Exercise slug.")],
    due: Annotated[
        str, typer.Option(help="The learner's new due date (ISO; course's zone unless an offset is given).")
    ],
) -> None:
    """Give one learner a later due date on one exercise (an earlier hard close moves with it)."""
    from server.courses.service import find_course, shown
    from server.courses.sets import grant_extension

    settings = _settings()
    with _session(settings) as session:
        where = find_course(session, course)
        granted = grant_extension(session, where, user, exercise, _when(due, where, "--due"))
        when = shown(granted.extension.due_at, where)
    err.print(
        f"{user!r} may hand in {exercise!r} in {course!r} until {when}; {_recomputed(granted.recomputed)}.",
        highlight=False,
    )


def _recomputed(count: int) -> str:
    """What an extension did to the submissions already made, in one phrase."""
    if not count:
        return "no earlier submission changed"
    return f"recomputed the late penalty of {count} earlier submission{'s' if count != 1 else ''}"


def _actor() -> str:
    """Who a correction made from this CLI is recorded as: ``cli:<the operating-system user>``."""
    import getpass

    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):
        return "cli"


@scores_app.command("list")
@_edge
def scores_list(
    course: Annotated[str, typer.Argument(help="Course slug.")],
    learner: Annotated[str | None, typer.Option(help="Only this learner.")] = None,
) -> None:
    """Every learner's score that counts per exercise, as the pages, boards and gradebooks show it."""
    from server.courses.corrections import course_learner
    from server.courses.score_router import scores_of
    from server.courses.service import find_course, members

    settings = _settings()
    with _session(settings) as session:
        where = find_course(session, course)
        people = members(session, where) if learner is None else [course_learner(session, where, learner)]
        rows = scores_of(session, where, people)
    table = Table(
        "learner", "exercise", "counts", "how it counts", title=plain(f"{course} (times in {where.time_zone})")
    )
    for r in rows:
        counts = "excused" if r.excused else ("-" if r.counted_score is None else f"{r.counted_score:g}")
        table.add_row(*map(plain, (r.learner, r.exercise, counts, r.shown)))
    out.print(table)


def _one_score(session: Session, course, learner: str, exercise: str) -> str:  # type: ignore[no-untyped-def]
    from server.courses.corrections import course_learner
    from server.courses.counted import course_scores, describe

    user_id = course_learner(session, course, learner).id
    return describe(course_scores(session, course, [user_id], [exercise]).get((user_id, exercise)), course.time_zone)


@scores_app.command("override")
@_edge
def scores_override(
    course: Annotated[str, typer.Argument(help="Course slug.")],
    learner: Annotated[str, typer.Argument(help="The learner's login name.")],
    exercise: Annotated[str, typer.Argument(help="Exercise slug.")],
    score: Annotated[float, typer.Argument(min=0, max=100, help="The score that counts, 0-100.")],
    reason: Annotated[str, typer.Option(help="Why (the learner reads it beside the score).")],
) -> None:
    """Set a learner's score that counts on one exercise by hand (replaces any earlier override)."""
    from server.courses.corrections import override
    from server.courses.service import find_course

    with _session(_settings()) as session:
        where = find_course(session, course)
        override(session, where, learner, exercise, score, reason, _actor())
        now = _one_score(session, where, learner, exercise)
    err.print(f"Overrode {learner!r} on {exercise!r} in {course!r}: now {plain(now)}.", highlight=False)


@scores_app.command("excuse")
@_edge
def scores_excuse(
    course: Annotated[str, typer.Argument(help="Course slug.")],
    learner: Annotated[str, typer.Argument(help="The learner's login name.")],
    exercise: Annotated[str, typer.Argument(help="Exercise slug.")],
    reason: Annotated[str, typer.Option(help="Why (the learner reads it).")],
) -> None:
    """Take one exercise out of a learner's average (the gradebooks leave it empty; boards add nothing)."""
    from server.courses.corrections import excuse
    from server.courses.service import find_course

    with _session(_settings()) as session:
        where = find_course(session, course)
        excuse(session, where, learner, exercise, reason, _actor())
        now = _one_score(session, where, learner, exercise)
    err.print(f"Excused {learner!r} from {exercise!r} in {course!r}: now {plain(now)}.", highlight=False)


@scores_app.command("undo")
@_edge
def scores_undo(
    course: Annotated[str, typer.Argument(help="Course slug.")],
    learner: Annotated[str, typer.Argument(help="The learner's login name.")],
    exercise: Annotated[str, typer.Argument(help="Exercise slug.")],
    kind: Annotated[str, typer.Argument(help="override or excuse: which correction to take back.")],
) -> None:
    """Take an override or an excuse back (it stays on record as revoked); the graded score counts again."""
    from server.courses.corrections import take_back
    from server.courses.service import find_course
    from server.models import CorrectionKind

    if kind not in ("override", "excuse"):
        raise typer.BadParameter("use override or excuse", param_hint="KIND")
    with _session(_settings()) as session:
        where = find_course(session, course)
        undone = take_back(session, where, learner, exercise, CorrectionKind(kind), _actor())
        now = _one_score(session, where, learner, exercise)
    if not undone.revoked:
        _fail(f"{learner!r} has no {kind} in force on {exercise!r} in {course!r} (the score is {now})")
    err.print(f"Took back the {kind} of {learner!r} on {exercise!r} in {course!r}: now {plain(now)}.", highlight=False)


@submissions_app.command("export")
@_edge
def submissions_export(
    course: Annotated[str, typer.Argument(help="Course slug.")],
    exercise: Annotated[str | None, typer.Option(help="Only this exercise.")] = None,
    out: Annotated[
        str | None, typer.Option(help="Where to write the zip (default: COURSE-submissions.zip here).")
    ] = None,
) -> None:
    """Write a zip of each learner's latest and counted sources, with a manifest CSV
    (learner, exercise, submission, raw and counted score, late, time)."""
    from pathlib import Path

    from server.courses.service import find_course
    from server.submissions.export import export_zip

    target = Path(out or f"{course}{'-' + exercise if exercise else ''}-submissions.zip")
    with _session(_settings()) as session:
        where = find_course(session, course)
        with open(target, "wb") as handle:
            done = export_zip(session, where, handle, exercise)
    err.print(
        f"Wrote {target}: {done.files} source file(s) of {done.learners} learner(s), and manifest.csv.", highlight=False
    )


@courses_app.command("real-names")
@_edge
def courses_real_names(
    course: Annotated[str, typer.Argument(help="Course slug.")],
    show: Annotated[str, typer.Argument(help="on: learners see classmates' names on the boards; off: pseudonyms.")],
) -> None:
    """Whether a course's learners see real names on its boards (off by default; instructors always do)."""
    from server.courses.service import find_course

    if show not in ("on", "off"):
        raise typer.BadParameter("use on or off", param_hint="SHOW")
    with _session(_settings()) as session:
        find_course(session, course).board_real_names = show == "on"
    err.print(
        f"{course!r}: learners see {'display names' if show == 'on' else 'pseudonyms'} on the boards.", highlight=False
    )


@app.command()
@_edge
def similarity(
    course: Annotated[str, typer.Argument(help="Course slug.")],
    exercise: Annotated[
        str | None, typer.Option(help="Rank by this exercise alone (default: over the course).")
    ] = None,
    top: Annotated[int, typer.Option(min=1, max=100, help="How many pairs to print.")] = 20,
    refresh: Annotated[bool, typer.Option("--refresh", help="Compute a new run now, in this process, first.")] = False,
) -> None:
    """Print the pairs of learners whose code is most alike, from the newest finished run
    (computed after a due date or on request; with --refresh, or when there is none yet,
    computed here first). For instructors: review each pair before acting on it."""
    from server.courses.service import find_course
    from server.similarity import service
    from server.similarity.views import pair_public

    settings = Settings().model_copy(update={"DATABASE_URL": _database().url})  # the one guard: no new database
    engine = make_engine(settings.DATABASE_URL)
    try:
        upgrade_to_head(engine)
        sessions = make_session_factory(engine)
        with transaction(sessions) as session:
            where = find_course(session, course)
            needed = refresh or service.latest_done_run(session, where) is None
            run_id = service.request_run(session, where)[0].id if needed else None
        if run_id is not None:
            err.print(f"Comparing the submissions of {course!r}...", highlight=False)
            service.run_similarity(sessions, run_id, processes=settings.SIMILARITY_PROCESSES)
        with sessions() as session:
            where = find_course(session, course)
            run = service.latest_done_run(session, where)
            if run is None:
                latest = service.latest_run(session, where)
                _fail(
                    f"no finished similarity run for {course!r}"
                    + (f": {latest.message}" if latest and latest.message else "")
                )
                return
            pairs = [pair_public(p) for p in service.ranked_pairs(session, run, exercise, top)]
            summary = run.summary
    finally:
        engine.dispose()
    title = (
        f"{course}"
        + (f" · {exercise}" if exercise else "")
        + f" · run {run.id} of {run.finished_at:%Y-%m-%d %H:%M} UTC"
    )
    table = Table("rank", "learners", "score", "similar on", "exercises (similarity)", "review", title=plain(title))
    for p in pairs:
        shown = [e for e in p.exercises if exercise is None or e.exercise == exercise]
        cells = (
            str(p.rank),
            f"{p.learner_a} / {p.learner_b}",
            f"{p.score:.2f}",
            str(p.similar_on),
            ", ".join(f"{e.exercise} {e.similarity:.2f}" for e in shown),
            p.review or "",
        )
        table.add_row(*map(plain, cells))
    out.print(table)
    err.print(
        f"{summary.get('learners', 0)} learners, {summary.get('submissions', 0)} submissions, "
        f"{summary.get('pairs_found', 0)} similar pair(s). Nothing here changes a score.",
        highlight=False,
    )


def _register_regrade() -> None:
    """``ppo-grader regrade ...`` (server/regrades/commands.py), with this module's edge."""
    from server.regrades.commands import build_regrade_app

    app.add_typer(build_regrade_app(_edge, _session), name="regrade")


_register_regrade()
app.add_typer(build_lti_app(_edge, _session), name="lti")  # ppo-grader lti ... (server/lti/cli.py)


if __name__ == "__main__":
    app()
