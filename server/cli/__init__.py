"""``ppo-grader``: the service's command line, one module per sub-app.

- ``serve``: ``serve``, ``worker``, ``migrate`` (the service itself)
- ``users``: ``users add | list | revoke | rotate | import``
- ``exercises``: ``exercises list | versions | new | verify``
- ``courses``: ``courses create | list | enroll | gradebook | staff add | real-names``
- ``sets``: ``sets publish | list | remove``
- ``extensions``: ``extensions grant``
- ``scores``: ``scores list | override | excuse | undo``
- ``submissions``: ``submissions export``
- ``similarity``: ``similarity COURSE``
- ``regrade``: ``regrade status | preview | show | apply | cancel | list``
- ``lti``: ``lti add-platform | add-deployment | platforms | rotate-key | config | sync-roster | grades ...``

``remote`` runs the course commands it lists against a server's API (``--server URL``), each
with the one output its command prints on the host.

``common`` holds what they share: errors caught once, at the edge, and printed as one red line
with exit code 2; the consoles; and the one database guard every command passes. A command
calls services, never a router (``tests/server/test_import_graph.py``).

Each invocation loads only the sub-app its command line names: :class:`_Root` imports a
sub-app's module, and builds its commands, when it is asked for it (``ppo-grader scores list``
loads ``scores``, ``ppo-grader --help`` all of them, for their one-line help). Importing a
sub-app's module loads nothing heavy either: each command imports the services, the tables
and SQLAlchemy inside its function, and the catalogue (torch) only where it grades
(``tests/server/test_admin_work.py`` counts what each command imports).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from types import ModuleType
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

from server.cli import common, remote

if TYPE_CHECKING:  # click's classes, as the installed typer vendors them
    from typer._click import Command, Context


def _users() -> ModuleType:
    from server.cli import users

    return users


def _exercises() -> ModuleType:
    from server.cli import exercises

    return exercises


def _courses() -> ModuleType:
    from server.cli import courses

    return courses


def _sets() -> ModuleType:
    from server.cli import sets

    return sets


def _extensions() -> ModuleType:
    from server.cli import extensions

    return extensions


def _scores() -> ModuleType:
    from server.cli import scores

    return scores


def _submissions() -> ModuleType:
    from server.cli import submissions

    return submissions


def _serve() -> ModuleType:
    from server.cli import serve

    return serve


def _similarity() -> ModuleType:
    from server.cli import similarity

    return similarity


def _regrade() -> ModuleType:
    from server.cli import regrade

    return regrade


def _lti() -> ModuleType:
    from server.cli import lti

    return lti


#: Every command of the root, in the order ``--help`` lists them (typer's: the commands, then the
#: sub-apps): what it is (a sub-app's ``app``, or a command function), its module imported when
#: asked. One import statement per module, inside a function, so that the import-order test
#: sees each.
COMMANDS: dict[str, Callable[[], Any]] = {
    "serve": lambda: _serve().serve,
    "worker": lambda: _serve().worker,
    "migrate": lambda: _serve().migrate,
    "similarity": lambda: _similarity().similarity,
    "users": lambda: _users().app,
    "exercises": lambda: _exercises().app,
    "courses": lambda: _courses().app,
    "sets": lambda: _sets().app,
    "extensions": lambda: _extensions().app,
    "scores": lambda: _scores().app,
    "submissions": lambda: _submissions().app,
    "regrade": lambda: _regrade().app,
    "lti": lambda: _lti().app,
}


def _build(name: str) -> Command:
    """The click command ``name`` is, its module imported now."""
    found = COMMANDS[name]()
    if isinstance(found, typer.Typer):
        group = typer.main.get_group(found)
        group.name = name
        return group
    one = typer.Typer(add_completion=False)
    one.command(name)(found)
    return typer.main.get_command(one)


class _Loaded(MutableMapping[str, "Command"]):
    """The root's commands by name: every name known at once (for ``--help`` and the
    did-you-mean of a typo), each command built on first use."""

    def __init__(self, built: MutableMapping[str, Command]) -> None:
        self._built = dict(built)

    def __getitem__(self, name: str) -> Command:
        if name not in self._built:
            if name not in COMMANDS:
                raise KeyError(name)
            self._built[name] = _build(name)
        return self._built[name]

    def __setitem__(self, name: str, command: Command) -> None:
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        del self._built[name]

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*COMMANDS, *self._built]))

    def __len__(self) -> int:
        return len(set(COMMANDS) | set(self._built))


class _Root(TyperGroup):
    """The root group, its sub-apps loaded on demand (:class:`_Loaded`)."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = _Loaded(self.commands)

    def list_commands(self, ctx: Context) -> list[str]:
        return list(self.commands)  # the names, without building each command

    def resolve_command(self, ctx: Context, args: list[str]) -> tuple[str | None, Command | None, list[str]]:
        """The command, as click finds it; the command line it names (``scores list``) is kept
        for the root's callback, which runs next and decides where it runs (``remote.choose``)."""
        name, command, rest = super().resolve_command(ctx, args)
        words = [name] if name else []
        group: Command | None = command
        for word in rest:  # down the sub-apps it names (``courses staff add``), to its command
            if word.startswith("-") or not isinstance(group, TyperGroup):
                break
            words.append(word)
            group = group.get_command(ctx, word)
        ctx.meta[_COMMAND_LINE] = None if "--help" in rest else " ".join(words)  # help runs anywhere
        return name, command, rest


#: Where :meth:`_Root.resolve_command` leaves the command line's name for the root's callback.
_COMMAND_LINE = "ppo-grader.command"


app = typer.Typer(help="ppo-grader: the autograder service.", no_args_is_help=True, add_completion=False, cls=_Root)


@app.callback()
def _root(
    ctx: typer.Context,
    init: Annotated[
        bool, typer.Option("--init", help="Let an admin command create a new database where none is.")
    ] = False,
    server: Annotated[
        str | None,
        typer.Option(
            "--server",
            help="Run a course command against this server's API (env PPO_GRADER_URL), signed in with "
            "PPO_GRADER_TOKEN: " + ", ".join(remote.REMOTE_COMMANDS) + ".",
        ),
    ] = None,
) -> None:
    """ppo-grader: the autograder service. Every command uses this installation's database
    (PPO_GRADER_DATABASE_URL for one process, else the one `serve --database` recorded in the
    data folder, else data/ppo-grader.db of this checkout) and says which; the course commands
    of --server run against a server's API instead (docs/instructors.md, "From your laptop")."""
    common.INIT["init"] = init
    remote.choose(server, ctx.meta.get(_COMMAND_LINE))
