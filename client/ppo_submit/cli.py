"""The ``ppo-submit`` commands.

``ppo-submit FILE ...`` is short for ``ppo-submit submit FILE ...``: ``main()`` rewrites the
arguments (see ``route``) before Typer parses them.

Exit codes: 0 when the score is 100 (or a ``--no-wait`` submit was accepted); 1 when graded
below 100 or for any other verdict but ``internal_error``; 2 for ``internal_error`` (the
grader's fault) and for usage, connection, auth and server errors, which print one red line
on stderr. ``ClientError``, ``SourceError`` (notebook_format) and click's usage errors are caught
once, in ``_Edge``.
"""

import json
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, cast

import typer
from typer.core import TyperGroup

from notebook_format.errors import SourceError

from . import __version__
from .api import (
    LONG_POLL_SECONDS,
    CatalogueChanged,
    Client,
    ClientError,
    ExerciseWindow,
    Interrupted,
    LateNotConfirmed,
    Submission,
    UsageError,
    normalise_server,
)
from .lazy import lazy_import
from .source import is_notebook, match_exercise, read_source
from .terminal import plain_output

if TYPE_CHECKING:
    import httpx

    from . import catalogue_cache, config, locations, notebook_file, render
    from . import courses as course_view
else:  # Rich and platformdirs load when a command first prints or reads the stored login
    catalogue_cache = lazy_import("ppo_submit.catalogue_cache")
    render = lazy_import("ppo_submit.render")
    config = lazy_import("ppo_submit.config")
    course_view = lazy_import("ppo_submit.courses")
    locations = lazy_import("ppo_submit.locations")
    notebook_file = lazy_import("ppo_submit.notebook_file")

try:  # Typer >= 0.20 vendors click
    from typer._click.exceptions import UsageError as _ClickUsageError
except ImportError:  # pragma: no cover - older Typer on the real click
    from click.exceptions import UsageError as _ClickUsageError  # type: ignore[assignment]  # the same class, from click itself

GRADER_FAULT = (
    "the grader failed on its side (internal_error): this is not your code's fault "
    "and does not count against you; try again later or tell your instructor"
)


@dataclass
class Runtime:
    """What commands share: injectable collaborators (tests pass one as ``obj=``) and the
    global ``--server`` / ``--token`` values."""

    transport: "httpx.BaseTransport | None" = None
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    server: str | None = field(default=None, init=False)
    token: str | None = field(default=None, init=False)

    def client(self, server: str | None = None, token: str | None = None) -> Client:
        """A client for the given server and token, or for the configured ones (whitespace
        taken out of the token, with a note on stderr saying so)."""
        if server is None or token is None:
            creds = config.resolve(self.server, self.token)
            server, token = server or creds.server, token or creds.token
        assert server is not None and token is not None
        token = _clean(token)
        return Client(server, token, transport=self.transport, sleep=self.sleep, clock=self.clock)


def _clean(token: str) -> str:
    """The token without whitespace; a note on stderr when it had some."""
    cleaned, changed = config.clean_token(token)
    if changed:
        render.stderr_console().print(
            "note: removed whitespace (spaces, tabs or line ends) from the token; "
            "check where it came from (a CRLF tokens.csv, a paste)",
            highlight=False,
            soft_wrap=True,
        )
    return cleaned


def _fail(message: str, code: int = 2) -> NoReturn:
    """Print ``message`` as one red line on stderr and exit with ``code``."""
    render.error_line(message)
    raise typer.Exit(code)


@contextmanager
def _one_line_errors() -> Iterator[None]:
    """Turn the client's errors and click's usage errors into one red line and an exit code."""
    try:
        yield
    except (ClientError, SourceError) as exc:  # SourceError: a file or notebook notebook_format refused
        _fail(exc.message, exc.exit_code)
    except _ClickUsageError as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # help was printed already
            raise
        where = exc.ctx.command_path if exc.ctx is not None else "ppo-submit"
        _fail(f"{exc.format_message()} (see `{where} --help`)", exc.exit_code)


class _Edge(TyperGroup):
    """The root group: the one place where errors become a red line and an exit code."""

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any) -> Any:
        with _one_line_errors():
            return super().make_context(info_name, args, parent, **extra)

    def invoke(self, ctx: Any) -> Any:
        with _one_line_errors():
            return super().invoke(ctx)


app = typer.Typer(
    cls=_Edge,
    name="ppo-submit",
    help="Submit solutions to a ppo-grader server and read their per-check feedback.\n\n"
    "`ppo-submit FILE` is short for `ppo-submit submit FILE`.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"ppo-submit {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    server: Annotated[
        str | None,
        typer.Option("--server", envvar="PPO_GRADER_URL", help="Grader URL; overrides the stored login."),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            "--token", envvar="PPO_GRADER_TOKEN", help="API token; overrides the stored login.", show_envvar=True
        ),
    ] = None,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    runtime = ctx.ensure_object(Runtime)
    runtime.server, runtime.token = server, token


def _runtime(ctx: typer.Context) -> Runtime:
    return ctx.ensure_object(Runtime)


# --------------------------------------------------------------------------- commands


@app.command()
def login(
    ctx: typer.Context,
    server: Annotated[str | None, typer.Option("--server", help="Grader URL, e.g. http://localhost:8000.")] = None,
    token: Annotated[str | None, typer.Option("--token", help="Your API token (asked for when omitted).")] = None,
    course: Annotated[
        str | None, typer.Option("--course", help="Default course for later commands (when you are in several).")
    ] = None,
) -> None:
    """Check a server URL and token with the grader and store them for later commands."""
    runtime = _runtime(ctx)
    server = server or runtime.server
    if not server:
        raise UsageError("pass --server URL (the grader's address, e.g. http://localhost:8000)")
    token = _clean(token or runtime.token or typer.prompt("Token", hide_input=True, err=True))
    server = normalise_server(server)
    with runtime.client(server, token) as client:
        me = client.me()
        if course is not None:
            course_view.pick_courses(client.courses() or [], course)  # refuse a course you are not in
    path = config.save(config.Credentials(server=server, token=token, course=course))
    who = me.get("display_name") or me.get("name") or "?"
    render.stdout_console().print(
        f"Logged in to {server} as {who} ({me.get('name', '?')}, {me.get('role', '?')}); saved to {path}",
        markup=False,
        soft_wrap=True,
    )


CourseOption = Annotated[
    str | None,
    typer.Option(
        "--course", envvar="PPO_GRADER_COURSE", help="Course slug (default: the stored login's, or your only course)."
    ),
]


@app.command()
def exercises(ctx: typer.Context, course: CourseOption = None) -> None:
    """List the exercises per course: what is open, due dates, time left, attempts."""
    with _runtime(ctx).client() as client:
        mine = client.courses()
        if mine is None:  # a server from before courses: the flat catalogue
            render.print_out(render.exercises_table(client.exercises()))
            return
        chosen = course_view.pick_courses(mine, course)
        listings = [client.course_exercises(str(c.get("slug"))) for c in chosen]
    console = render.stdout_console()
    console.print(course_view.exercises_tables(listings, console.width), soft_wrap=True)


@app.command()
def board(
    ctx: typer.Context,
    slug: Annotated[
        str | None, typer.Argument(metavar="[SLUG]", help="One exercise's board (omit for overall).")
    ] = None,
    course: CourseOption = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=500, help="At most this many learners.")] = 50,
) -> None:
    """Show your course's board, overall or of one exercise: learners by pseudonym unless the
    course shows names, your own row marked."""
    with _runtime(ctx).client() as client:
        where = course_view.board_course(client, config.default_course(course))
        found = client.board(where, slug, limit)
    console = render.stdout_console()
    console.print(course_view.board_lines(found), soft_wrap=True)


@app.command()
def starter(
    ctx: typer.Context,
    slug: Annotated[str, typer.Argument(help="Exercise slug, e.g. actor-loss.")],
    notebook: Annotated[
        bool,
        typer.Option(
            "--notebook",
            help="Write a Jupyter notebook instead (`> gae.ipynb`): the contract, "
            "the function, the self-tests and a cell that submits.",
        ),
    ] = False,
) -> None:
    """Print an exercise's starter file, and nothing else, to stdout (`> file.py`)."""
    with _runtime(ctx).client() as client:
        found = client.exercise(slug)
    text = str(found.get("starter") or "")
    if notebook:
        from notebook_format.starter import starter_notebook

        text = starter_notebook(text, str(found.get("function") or ""))
    sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")


@app.command()
def submit(
    ctx: typer.Context,
    file: Annotated[
        Path,
        typer.Argument(
            metavar="FILE",
            help="The Python file or Jupyter notebook (.ipynb) to grade; `-` reads the source from stdin.",
            show_default=False,
        ),
    ],
    exercise: Annotated[
        str | None,
        typer.Option("--exercise", "-e", help="Exercise slug; found from the functions FILE defines when omitted."),
    ] = None,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print one JSON object on stdout, and nothing else.")
    ] = False,
    no_wait: Annotated[bool, typer.Option("--no-wait", help="Print the submission id and exit at once.")] = False,
    timeout: Annotated[
        float, typer.Option("--timeout", min=1, help="Seconds to wait for the verdict before giving up.")
    ] = 600.0,
    verbose: Annotated[
        bool,
        typer.Option("--verbose", "-v", help="Show every failed check in full, with its case, seed and traceback."),
    ] = False,
    course: CourseOption = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Send a late submission without asking.")] = False,
    show_source: Annotated[
        bool, typer.Option("--show-source", help="Print exactly what would be sent, and send nothing.")
    ] = False,
) -> None:
    """Submit FILE for grading, wait for the verdict and show the checks.

    A notebook sends only the exercise's function and the helpers, imports and constants it
    uses; IPython magics and shell escapes are left out (and listed). After the due date it
    says so (and what the late policy costs) and asks before sending.
    """
    runtime = _runtime(ctx)
    locator = None
    named = exercise is not None  # else matched in the catalogue (and its version sent)
    if str(file) == "-":
        source = _read_stdin()
        file = Path(STDIN_NAME)
    elif is_notebook(file):
        with runtime.client() as client:
            module = _catalogue(client).match(
                lambda exercises: notebook_file.notebook_module(
                    file, exercises, exercise=exercise, commands=_command_names()
                )
            )
        _notes_on(module)
        source, exercise = module.source, module.exercise
        locator = locations.CellLocator(file.name, module.line_map, described=str(file))
    else:
        source = read_source(file, commands=_command_names())
    if show_source:
        sys.stdout.write(source)
        return

    def find(exercises: list[Any]) -> str:
        return match_exercise(source, exercises, filename=str(file))

    with runtime.client() as client:
        book = None if named else _catalogue(client)  # a notebook's: kept by its match above
        slug = exercise if exercise is not None else (book or _catalogue(client)).match(find)
        sending = _Sending(client, source, file.name, config.default_course(course), yes=yes, json_output=json_output)
        sending.wait_for = 0.0 if no_wait else min(LONG_POLL_SECONDS, timeout)
        created = sending.send(slug, book, match=find)
        if no_wait:
            typer.echo(_to_json(created) if json_output else str(created.get("id")))
            return
        final = created
        if created.get("status") != "done":
            try:
                with render.live_status(enabled=not json_output) as status:
                    final = client.wait(created, timeout=timeout, on_update=status.update, start=sending.started)
            except KeyboardInterrupt:
                sub_id = created.get("id")
                raise Interrupted(
                    f"stopped waiting; submission {sub_id} is still graded: see `ppo-submit show {sub_id}`"
                ) from None
    _report(final, json_output, verbose=verbose, local_path=str(file), locator=locator)


def _catalogue(client: Client) -> "catalogue_cache.Catalogue":
    """The catalogue this command matches in: the one kept for this server and token, or the server's."""
    return catalogue_cache.Catalogue(client, catalogue_cache.entry_key(client.server, client.token or ""))


class _Sending:
    """One submit's ``POST /submissions``: the verdict waited for inside it (``wait``), the late
    question answered from its 409 ``LateNotConfirmed`` (the warning, then "Send it late?"), a
    stale kept catalogue from its 409 ``CatalogueChanged`` (matched again, sent again)."""

    def __init__(
        self, client: Client, source: str, filename: str, course: str | None, *, yes: bool, json_output: bool
    ) -> None:
        self.client, self.source, self.filename, self.course = client, source, filename, course
        self.yes, self.json_output = yes, json_output
        #: Seconds the POST holds for the verdict (0: answer at once).
        self.wait_for = 0.0
        #: When the first POST was sent (the client's clock): where ``--timeout`` counts from.
        self.started = client.now()

    def send(
        self,
        slug: str,
        book: "catalogue_cache.Catalogue | None",
        *,
        match: Callable[[list[Any]], str],
    ) -> Submission:
        """The stored submission, as the POST answered it (its verdict, when it came in time)."""
        late = "ask"
        for _ in range(3):  # at most one late question and one stale catalogue
            try:
                return self._post(slug, late, book.version if book is not None else None)
            except LateNotConfirmed as refused:
                _confirm_late(refused.course, refused.window, self.yes)
                late = "send"
            except CatalogueChanged:
                if book is None:
                    raise
                slug = match(book.refresh())
        raise UsageError("the server refused the submission again; try again")  # pragma: no cover - a server bug

    def _post(self, slug: str, late: str, catalogue: str | None) -> Submission:
        try:
            with render.live_status(enabled=not self.json_output and self.wait_for > 0):
                return self.client.submit(
                    slug,
                    self.source,
                    filename=self.filename,
                    course=self.course,
                    wait=self.wait_for,
                    late=late,
                    catalogue=catalogue,
                )
        except KeyboardInterrupt:
            raise Interrupted("stopped; the submission may be stored and graded: see `ppo-submit history`") from None


#: The file name a submission read from stdin (``ppo-submit -``) is shown and stored under.
STDIN_NAME = "stdin.py"


def _read_stdin() -> str:
    """The source piped in for ``ppo-submit -``; a usage error for a terminal or non-UTF-8 input."""
    if sys.stdin is None or sys.stdin.isatty():
        raise UsageError("`ppo-submit -` reads the source from stdin: pipe a file in (`cat gae.py | ppo-submit -`)")
    try:
        data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read().encode()
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError("stdin is not UTF-8 text") from None


#: Dropped notebook lines listed one by one, at most; the rest are counted.
_MAX_NOTES = 8


def _notes_on(module: "notebook_file.NotebookModule") -> None:
    """Say on stderr what of the notebook is not sent: IPython syntax, cells that do not parse."""
    from rich.markup import escape

    console = render.stderr_console()
    for dropped in module.dropped[:_MAX_NOTES]:
        console.print(
            f"[dim]not sent (IPython syntax):[/dim] {escape(dropped.describe())}", highlight=False, soft_wrap=True
        )
    if len(module.dropped) > _MAX_NOTES:
        console.print(f"[dim]not sent: {len(module.dropped) - _MAX_NOTES} more IPython lines[/dim]", highlight=False)
    for cell, line in module.unparsable:
        console.print(
            f"[dim]not sent:[/dim] {cell.label} has a syntax error (line {line}), so nothing it defines is sent",
            highlight=False,
            soft_wrap=True,
        )


@app.command()
def show(
    ctx: typer.Context,
    submission_id: Annotated[str, typer.Argument(metavar="ID", help="Submission id.")],
    json_output: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")] = False,
    verbose: Annotated[
        bool,
        typer.Option("--verbose", "-v", help="Show every failed check in full, with its case, seed and traceback."),
    ] = False,
) -> None:
    """Show one of your submissions, as `ppo-submit FILE` does (same exit codes), with the
    course staff's comments on its lines and the answers to your review requests."""
    with _runtime(ctx).client() as client:
        sub = client.submission(submission_id)
        review = client.review(submission_id)  # the staff's comments and answers (None: an older server)
        # A regrade's or a comment's time is read in the submission's course's zone, as `history` prints it.
        zone = (
            next(
                (
                    str(c.get("time_zone") or "UTC")
                    for c in (client.courses() or [])
                    if c.get("slug") == sub.get("course")
                ),
                "UTC",
            )
            if sub.get("regrades") or review
            else "UTC"
        )
    if review is not None and json_output:
        sub = cast(Submission, {**sub, "review": review})
    notes = render.version_lines(sub, zone) + render.review_lines(review, zone)
    _report(sub, json_output, verbose=verbose, notes=notes)


@app.command()
def token(
    ctx: typer.Context,
    submission_id: Annotated[str, typer.Argument(metavar="ID", help="Submission id.")],
    json_output: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")] = False,
    verbose: Annotated[
        bool,
        typer.Option("--verbose", "-v", help="Show every failed check in full, with its case, seed and traceback."),
    ] = False,
) -> None:
    """Spend one of today's feedback tokens on a submission (exercises with a tokens:N policy),
    then show its report. Viewing never spends a token; spending twice on one submission costs one."""
    with _runtime(ctx).client() as client:
        sub = client.spend_token(submission_id)
    _report(sub, json_output, verbose=verbose)


@app.command("review")
def request_review(
    ctx: typer.Context,
    submission_id: Annotated[str, typer.Argument(metavar="ID", help="Submission id.")],
    message: Annotated[str, typer.Argument(help="What the staff should look at (at most 1000 characters).")],
    json_output: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")] = False,
) -> None:
    """Ask your course's staff to review one of your graded submissions; `ppo-submit show ID`
    shows their answer. One request per submission is open at a time."""
    with _runtime(ctx).client() as client:
        asked = client.request_review(submission_id, message)
    if json_output:
        typer.echo(json.dumps(asked, indent=2))
        return
    render.print_out(
        f"Review request {asked.get('id')} sent for submission {asked.get('submission')}; "
        f"`ppo-submit show {asked.get('submission')}` shows the answer once the staff give it."
    )


@app.command()
def history(
    ctx: typer.Context,
    exercise: Annotated[str | None, typer.Option("--exercise", "-e", help="Only this exercise.")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="At most this many submissions.")] = 20,
    json_output: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print one JSON object on stdout: the submissions and the scores that count (times in ISO UTC).",
        ),
    ] = False,
) -> None:
    """List your submissions (raw score, late mark, the score that counts; times in each
    course's zone), then the score that counts per exercise, corrections included."""
    with _runtime(ctx).client() as client:
        items = client.submissions(exercise=exercise, limit=limit)
        mine = client.courses() or []
        scores = [client.course_scores(str(c.get("slug")), exercise) for c in mine if c.get("role") == "learner"]
    if json_output:
        typer.echo(json.dumps({"submissions": items, "scores": [s for s in scores if s is not None]}, indent=2))
        return
    zones = {str(c.get("slug")): str(c.get("time_zone") or "UTC") for c in mine}
    render.print_out(render.history_table(items, zones))
    lines = course_view.scores_lines([s for s in scores if s is not None])
    if lines is not None:
        render.print_out(lines)


# --------------------------------------------------------------------------- results


def exit_code(sub: Submission) -> int:
    """0 for a full score (or a submission not finished yet, or one whose verdict a feedback
    policy holds back until the due date), 2 for ``internal_error``, else 1."""
    if sub.get("status") != "done" or (sub.get("feedback_view") == "hidden" and sub.get("verdict") is None):
        return 0
    verdict = sub.get("verdict")
    if verdict == "internal_error":
        return 2
    score = sub.get("score")
    if verdict == "graded" and score is not None and float(score) >= 100 - 1e-9:
        return 0
    return 1


def _confirm_late(course: str, window: ExerciseWindow, yes: bool) -> None:
    """Warn (stderr) before a submission past its due date is sent; ask unless ``--yes``. The
    server said it is late (409 ``LateNotConfirmed``, with the exercise's window)."""
    warning = course_view.late_warning(course, window)
    if warning is not None:
        render.stderr_console().print(f"[yellow]warning:[/yellow] {warning}", highlight=False, soft_wrap=True)
    if yes:
        return
    try:
        send = typer.confirm("Send it late?", default=False, err=True)
    except typer.Abort:  # no answer (stdin closed): do not send
        send = False
    if not send:
        raise UsageError("not sent (late); pass --yes to send a late submission without asking")


def _to_json(sub: Submission) -> str:
    return json.dumps(sub, indent=2)


def _report(
    sub: Submission,
    json_output: bool,
    *,
    verbose: bool = False,
    local_path: str | None = None,
    locator: "locations.Locator | None" = None,
    notes: Sequence[Any] = (),
) -> None:
    """Show ``sub`` (JSON or the summary and tables) and exit with its code.

    ``local_path`` is the file as given on the command line, shown in place of its base name;
    ``locator`` shows places otherwise (a notebook's cells); ``notes`` are lines printed after
    the result (``show``: the versions that graded it, its regrades).
    """
    if json_output:
        typer.echo(_to_json(sub))
    else:
        render.print_out(render.submission_result(sub, verbose=verbose, local_path=local_path, locator=locator))
        for line in notes:
            render.print_out(line)
    note = course_view.late_note(sub)
    if note is not None:
        render.stderr_console().print(f"[yellow]late:[/yellow] {note}", highlight=False, soft_wrap=True)
    code = exit_code(sub)
    if sub.get("verdict") == "internal_error":
        render.error_line(GRADER_FAULT)
    raise typer.Exit(code)


# --------------------------------------------------------------------------- entry point

#: Root options that take a value, skipped when looking for the first positional argument.
_GLOBAL_VALUE_OPTIONS = ("--server", "--token")


def _command_names() -> list[str]:
    """The subcommands' names, as Typer registers them."""
    return [info.name or info.callback.__name__ for info in app.registered_commands if info.callback]


def route(args: Sequence[str]) -> list[str]:
    """Make ``submit`` the default command: ``[opts] FILE ...`` -> ``[opts] submit FILE ...``.

    Global options (``--server URL``, ``--token=T``) are skipped; if the next argument is
    neither an option nor a known subcommand, ``submit`` is inserted before it.
    """
    args = list(args)
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in _GLOBAL_VALUE_OPTIONS:
            i += 2
        elif arg.startswith(tuple(f"{opt}=" for opt in _GLOBAL_VALUE_OPTIONS)):
            i += 1
        else:
            break
    positional = i < len(args) and (args[i] == "-" or not args[i].startswith("-"))  # `-`: the source on stdin
    if positional and args[i] not in _command_names():
        args.insert(i, "submit")
    return args


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point."""
    # httpx's package imports its own command-line tool (click, Pygments, Rich's syntax
    # highlighting) when it finds it installed. ppo-submit never runs that tool, and importing
    # it was a sixth of a command's start-up; a None entry makes httpx take its fallback.
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
    # help in a pipe or under NO_COLOR is click's plain text, like every other output
    app.rich_markup_mode = None if plain_output() else "rich"
    app(args=route(sys.argv[1:] if argv is None else argv), prog_name="ppo-submit")
