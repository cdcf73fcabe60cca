"""What every ``ppo-grader`` command shares: the error edge, the consoles, the root's
``--init``, and the one database guard.

Every command reaches the database through :func:`session` or :func:`sessions` (the service's
own commands, ``serve``, ``worker`` and ``migrate``, through :func:`database` with
``create=True``), and all of them through ``server.location.guarded``: a recorded database that
is gone is refused, and one never set up is refused unless the command is one that creates it or
``--init`` is given. No command builds an engine on a URL of its own, so none can make a new,
empty database by being run from the wrong folder.
"""

from __future__ import annotations

import functools
import getpass
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, NoReturn, ParamSpec, TypeVar, overload

import typer

from server.errors import GraderError
from server.terminal import err, plain
from server.terminal import out as out  # re-exported: the sub-apps print through common.out

if TYPE_CHECKING:  # types only: `scores --help` or `exercises new` import no SQLAlchemy nor tables through here
    from sqlalchemy.orm import Session

    from server.config import Settings
    from server.db import SessionFactory
    from server.location import Located
    from server.models import Course

P = ParamSpec("P")
R = TypeVar("R")

#: The root options of this invocation (``ppo-grader --init ...``), set by the root callback.
INIT = {"init": False}


def edge(command: Callable[P, R]) -> Callable[P, R]:
    """Turn expected failures into one red line and exit code 2, without a traceback."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except GraderError as exc:
            fail(exc.detail)
        except OSError as exc:
            fail(str(exc))
        except Exception as exc:
            message = _expected(exc)
            if message is None:
                raise
            fail(message)

    return wrapper


def _expected(exc: Exception) -> str | None:
    """The line an expected failure of a library is shown as (None: a bug, shown as one).

    Each library is asked only when this process has imported it: an exception of a class
    whose module was never loaded cannot have been raised, and a command that needs neither
    the settings nor the database (``exercises new``, ``--help``) does not import them here."""
    validation = getattr(sys.modules.get("pydantic"), "ValidationError", None)
    database = getattr(sys.modules.get("sqlalchemy.exc"), "SQLAlchemyError", None)
    pack = getattr(sys.modules.get("exercises.packs"), "PackError", None)
    if validation is not None and isinstance(exc, validation):
        # Settings refused (e.g. the default secret in production): show pydantic's messages.
        return "invalid settings: " + "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors())
    if database is not None and isinstance(exc, database):
        return f"database error: {exc.__class__.__name__}: {str(exc).splitlines()[0]}"
    if pack is not None and isinstance(exc, pack):
        return str(exc)
    return None


def fail(message: str) -> NoReturn:
    """One red line on stderr, exit code 2."""
    # the message may quote what a user or an LMS sent ("[/x]", ESC): escaped, never read as markup
    err.print(f"[red]error:[/red] {plain(message)}", markup=True, highlight=False, soft_wrap=True)
    raise typer.Exit(code=2)


def settings() -> Settings:
    """The settings, with the database found as ``serve`` finds it (``server.location``)."""
    from server.config import Settings
    from server.location import locate

    return Settings().model_copy(update={"DATABASE_URL": locate().url})


def database(*, create: bool = False) -> Located:
    """The located database through the one guard every command passes (``server.location.guarded``):
    a recorded database that is gone is refused; one never set up is refused unless ``create``
    (serve, migrate, worker) or ``--init``."""
    from server.location import guarded

    return guarded(create=create or INIT["init"])


@contextmanager
def sessions() -> Iterator[SessionFactory]:
    """Sessions on the located, migrated database, named on stderr once the command has worked;
    the catalogue serves the packs recorded in it (the service's, not the shell's). A database
    that does not exist yet is refused unless ``--init`` (an admin command run from the wrong
    folder must not make a new one and print a token the real server rejects). The engine is
    closed afterwards, so that a command run in-process (tests) leaves no connection behind.
    The settings are checked first (production refuses the default secret), whatever the
    command reads of them."""
    from exercises import registry  # no exercise is loaded here: the catalogue is built on first use
    from server.catalogue.packs_config import recorded_packs
    from server.config import Settings
    from server.db import make_engine, make_session_factory
    from server.migrations import upgrade_to_head

    Settings()
    where = database()
    engine = make_engine(where.url)
    try:
        upgrade_to_head(engine)
        factory = make_session_factory(engine)
        with factory() as first:
            registry.serve_folders(recorded_packs(first))
        yield factory
    finally:
        engine.dispose()
    # Said once the command has worked (a failure stays one red line, as every error is).
    err.print(f"[dim]database: {where.redacted} (from {where.source})[/dim]", highlight=False, soft_wrap=True)


@contextmanager
def session() -> Iterator[Session]:
    """One transaction through :func:`sessions`: committed when the command's block ends."""
    from server.db import transaction

    with sessions() as factory, transaction(factory) as one:
        yield one


def served_packs(url: str) -> list[str]:
    """Hand the pack folders recorded in the database at ``url`` (already guarded) to the
    catalogue, so that every command sees the packs the service serves, whatever its shell
    holds; the folders."""
    from exercises import registry  # as in sessions()
    from server.catalogue.packs_config import recorded_packs
    from server.db import make_engine, make_session_factory
    from server.migrations import upgrade_to_head

    engine = make_engine(url)
    try:
        upgrade_to_head(engine)
        with make_session_factory(engine)() as one:
            folders = recorded_packs(one)
    finally:
        engine.dispose()
    registry.serve_folders(folders)
    return folders


def served_packs_if_any() -> None:
    """:func:`served_packs` of the located database when there is one (an author's laptop
    without a server lists and verifies what its own process sees); a recorded one that is gone
    is refused, as everywhere."""
    from server.location import guarded, is_initialised, locate

    where = locate()
    if where.recorded or is_initialised(where.url):
        served_packs(guarded(create=False).url)


@overload
def when(value: str, course: Course, option: str) -> datetime: ...
@overload
def when(value: None, course: Course, option: str) -> None: ...
@overload
def when(value: str | None, course: Course, option: str) -> datetime | None: ...


def when(value: str | None, course: Course, option: str) -> datetime | None:
    """An ISO date-time from the command line, in UTC; without an offset it is read in the
    course's time zone ("2026-12-07 09:00" is 9 am where the course is taught). None stays None."""
    from server.courses.service import read_time

    if value is None:
        return None
    read = read_time(iso_time(value, option), course)
    assert read is not None  # a time in, a time out
    return read


def iso_time(value: str, option: str) -> datetime:
    """An ISO date-time from the command line as written (naive without an offset: the server
    reads it in the course's zone); refused, naming ``option``, when it is none."""
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        raise typer.BadParameter(
            f"not an ISO date-time: {value!r} (e.g. 2026-12-07T09:00)", param_hint=option
        ) from None


def actor() -> str:
    """Who runs this command, as the services record it: ``cli:<operating-system user>``."""
    try:
        name = getpass.getuser()
    except (KeyError, OSError):  # no passwd entry and no LOGNAME/USER (a bare container)
        name = "unknown"
    return f"cli:{name}"
