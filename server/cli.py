"""``ppo-grader``: serve the API, manage users, list exercises.

Errors are caught once, at the edge, and printed as one red line with exit code 2.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Annotated, ParamSpec, TypeVar

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table
from sqlalchemy.exc import SQLAlchemyError

from server.config import Settings
from server.db import make_engine, make_session_factory, transaction
from server.errors import GraderError
from server.migrations import upgrade_to_head
from server.models import Role

app = typer.Typer(help="ppo-grader: the autograder service.", no_args_is_help=True, add_completion=False)
users_app = typer.Typer(help="Manage users and their tokens.", no_args_is_help=True)
exercises_app = typer.Typer(help="Inspect the exercise catalog.", no_args_is_help=True)
app.add_typer(users_app, name="users")
app.add_typer(exercises_app, name="exercises")

out = Console()
err = Console(stderr=True)

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

    return wrapper


def _fail(message: str) -> None:
    err.print(f"[red]error:[/red] {message}", markup=True, highlight=False, soft_wrap=True)
    raise typer.Exit(code=2)


def _session_factory(settings: Settings):  # type: ignore[no-untyped-def]
    engine = make_engine(settings.DATABASE_URL)
    upgrade_to_head(engine)  # so `users add` works before the first `serve`
    return make_session_factory(engine)


@app.command()
@_edge
def serve(
    host: Annotated[str, typer.Option(help="Interface to listen on.", envvar="PPO_GRADER_HOST")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.", envvar="PPO_GRADER_PORT")] = 8000,
) -> None:
    """Start the API and the in-process grading workers (migrations are applied first)."""
    import logging

    import uvicorn

    from server.app import create_app

    from server.logging_setup import configure_logging

    settings = Settings()
    # JSON lines on stderr (PPO_GRADER_LOG_FORMAT=text for the human format), uvicorn's too.
    configure_logging()
    uvicorn.run(create_app(settings), host=host, port=port, log_level="info", log_config=None)
    logging.getLogger(__name__).info("server stopped")


@app.command()
@_edge
def worker(
    queue: Annotated[str, typer.Option(help="Which queue to serve: cpu or gpu (gpu grades on CUDA).")] = "cpu",
    concurrency: Annotated[int, typer.Option(min=1, max=64, help="Jobs graded at once (one warm jail each).")] = 1,
    metrics_port: Annotated[int | None, typer.Option(help="Serve this process's Prometheus metrics (and a health probe) on this port.", envvar="PPO_GRADER_METRICS_PORT")] = None,
) -> None:
    """Grade submissions from the procrastinate queue (QUEUE=procrastinate, PostgreSQL).

    Run as many as you like, on any machine that reaches the database; SIGTERM finishes
    the jobs in hand, then exits.
    """
    from server.grading.procrastinate_backend import QUEUES, run_worker
    from server.logging_setup import configure_logging

    if queue not in QUEUES:
        raise typer.BadParameter(f"use one of {', '.join(QUEUES)}", param_hint="--queue")
    settings = Settings()
    configure_logging()
    upgrade_to_head(make_engine(settings.DATABASE_URL))  # idempotent; the job tables must exist
    run_worker(settings, queue, concurrency, metrics_port)


@app.command()
@_edge
def migrate() -> None:
    """Apply pending database migrations, then exit (docker-compose's one-shot `migrate`)."""
    settings = Settings()
    upgrade_to_head(make_engine(settings.DATABASE_URL))
    err.print("database is at the latest migration", highlight=False)


@users_app.command("add")
@_edge
def users_add(
    name: Annotated[str, typer.Argument(help="Login name (a-z, 0-9, . _ -).")],
    role: Annotated[Role, typer.Option(help="learner, instructor or admin.")] = Role.LEARNER,
    display_name: Annotated[str | None, typer.Option(help="Shown in listings; defaults to NAME.")] = None,
) -> None:
    """Create a user and print their API token (shown once; stored only hashed)."""
    from server.users.service import create_user

    settings = Settings()
    with transaction(_session_factory(settings)) as session:
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

    settings = Settings()
    with transaction(_session_factory(settings)) as session:
        table = Table("id", "name", "display name", "role", "created")
        for user in list_users(session):
            table.add_row(str(user.id), user.name, user.display_name, user.role, f"{user.created_at:%Y-%m-%d %H:%M}")
    out.print(table)


@users_app.command("revoke")
@_edge
def users_revoke(name: Annotated[str, typer.Argument(help="Whose tokens to revoke.")]) -> None:
    """Revoke every token of a user (they can no longer call the API)."""
    from server.users.service import managed_user, revoke_tokens

    settings = Settings()
    with transaction(_session_factory(settings)) as session:
        revoked = revoke_tokens(session, managed_user(session, None, name))
    err.print(f"Revoked {revoked} token(s) of {name!r}.", highlight=False)


@users_app.command("rotate")
@_edge
def users_rotate(name: Annotated[str, typer.Argument(help="Whose token to rotate.")]) -> None:
    """Revoke every token of a user and print a new one (shown once)."""
    from server.users.service import managed_user, rotate_token

    settings = Settings()
    with transaction(_session_factory(settings)) as session:
        token, revoked = rotate_token(session, managed_user(session, None, name), settings.secret_bytes)
    err.print(f"Revoked {revoked} token(s) of {name!r}. New token (shown once):", highlight=False)
    print(token)


@users_app.command("import")
@_edge
def users_import(
    roster: Annotated[typer.FileText, typer.Argument(help="CSV with a header: name,display_name[,role].")],
) -> None:
    """Create users from a CSV roster; print each new user's token once (CSV on stdout).

    Duplicates and invalid rows are reported on stderr and skipped; the exit code is 0.
    """
    import csv
    import sys

    from server.users.service import import_roster

    settings = Settings()
    with transaction(_session_factory(settings)) as session:
        outcomes = import_roster(session, roster.read(), settings.secret_bytes)
    writer = csv.writer(sys.stdout)
    writer.writerow(["name", "display_name", "role", "token"])
    for o in outcomes:
        if o.token is not None:
            writer.writerow([o.name, o.display_name, o.role.value if o.role else "", o.token])
        else:
            err.print(f"[yellow]line {o.line}:[/yellow] skipped {o.name!r}: {o.error}", highlight=False)
    created = sum(o.token is not None for o in outcomes)
    err.print(f"Created {created} user(s); skipped {len(outcomes) - created}. Tokens are shown only now.", highlight=False)


@exercises_app.command("list")
@_edge
def exercises_list() -> None:
    """List the exercises this server grades."""
    from server.catalog.service import list_exercises

    table = Table("order", "slug", "function", "title")
    for exercise in list_exercises():
        table.add_row(str(exercise.order), exercise.slug, exercise.function, exercise.title)
    out.print(table)


@exercises_app.command("verify")
@_edge
def exercises_verify(
    slug: Annotated[str | None, typer.Argument(help="Only this exercise (default: all).")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="List every mutant.")] = False,
) -> None:
    """Grade each exercise's reference, starter and mutants in the real jail; print the table."""
    from rich.console import Console
    from rich.table import Table

    from exercises.judge import Judge
    from exercises.registry import all_exercises, get_exercise
    from exercises.verify import verify_exercise
    from server.grading.grader import sandbox_limits

    settings = Settings()
    exercises = [get_exercise(slug)] if slug else all_exercises()
    judge = Judge(secret=settings.secret_bytes(), limits=sandbox_limits(settings), pool_size=1)
    table = Table(title="Exercise verification")
    for col in ("exercise", "checks", "reference", "starter", "mutants killed / total", "named", "ok"):
        table.add_column(col)
    all_ok = True
    console = Console()
    try:
        for ex in exercises:
            row = verify_exercise(judge, ex)
            all_ok &= row.ok
            named = sum(m.named for m in row.mutants)
            table.add_row(row.slug, str(row.checks), f"{row.reference_score}", f"{row.starter_score}",
                          f"{row.killed} / {len(row.mutants)}", f"{named} / {len(row.mutants)}",
                          "[green]yes[/green]" if row.ok else "[red]NO[/red]")
            if verbose:
                for m in row.mutants:
                    mark = "killed" if m.killed else "SURVIVED"
                    console.print(f"  {row.slug}:{m.name}: {mark}, score {m.score}, named={m.named}")
    finally:
        judge.close()
    console.print(table)
    if not all_ok:
        raise typer.Exit(1)


if __name__ == "__main__":
    app()
