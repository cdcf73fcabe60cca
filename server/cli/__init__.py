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

``common`` holds what they share: errors caught once, at the edge, and printed as one red line
with exit code 2; the consoles; and the one database guard every command passes. A command
calls services, never a router (``tests/server/test_import_graph.py``); it imports them inside
its function, so that ``ppo-grader --help`` does not load the catalogue (and torch).
"""

from __future__ import annotations

from typing import Annotated

import typer

from server.cli import (
    common,
    courses,
    exercises,
    extensions,
    lti,
    regrade,
    scores,
    serve,
    sets,
    similarity,
    submissions,
    users,
)

app = typer.Typer(help="ppo-grader: the autograder service.", no_args_is_help=True, add_completion=False)


@app.callback()
def _root(
    init: Annotated[
        bool, typer.Option("--init", help="Let an admin command create a new database where none is.")
    ] = False,
) -> None:
    """ppo-grader: the autograder service. Every command uses this installation's database
    (PPO_GRADER_DATABASE_URL for one process, else the one `serve --database` recorded in the
    data folder, else data/ppo-grader.db of this checkout) and says which."""
    common.INIT["init"] = init


app.add_typer(users.app, name="users")
app.add_typer(exercises.app, name="exercises")
app.add_typer(courses.app, name="courses")
app.add_typer(sets.app, name="sets")
app.add_typer(extensions.app, name="extensions")
app.add_typer(scores.app, name="scores")
app.add_typer(submissions.app, name="submissions")
app.command()(serve.serve)
app.command()(serve.worker)
app.command()(serve.migrate)
app.command()(similarity.similarity)
app.add_typer(regrade.app, name="regrade")
app.add_typer(lti.app, name="lti")
