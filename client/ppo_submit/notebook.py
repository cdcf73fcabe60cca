"""Submit from inside a Jupyter or Colab kernel.

::

    from ppo_submit import notebook          # or: %load_ext ppo_submit
    notebook.submit(compute_gae)             # or: %ppo_submit compute_gae

sends the function as the kernel has it now, with the helpers, imports and constants it uses
(``kernel.py``), waits for the verdict with the long poll while a line in the output cell
shows the queue, then shows the feedback there as HTML (``html.py``; the terminal's text
beside it for front ends without HTML). Feedback places are the learner's cells: "cell 7,
line 3", the cell's ``In [7]``.

Login, strongest first: the ``token=`` / ``server=`` arguments, ``PPO_GRADER_TOKEN`` /
``PPO_GRADER_URL``, then the login ``ppo-submit login`` stored. Every failure is one sentence
in the output cell, never a traceback; ``submit`` then returns None and sends nothing.

IPython is imported only when these functions run: ``import ppo_submit`` costs nothing more.
"""

from __future__ import annotations

import argparse
import os
import shlex
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from notebook_format.errors import SourceError

from .api import LONG_POLL_SECONDS, CatalogueChanged, Client, ClientError, LateNotConfirmed, Submission, UsageError

__all__ = ["Result", "load_ipython_extension", "source", "submit"]

#: The file name sent (and shown) when the kernel does not know its notebook's.
DEFAULT_FILENAME = "notebook.ipynb"
#: Columns of the plain-text feedback published beside the HTML.
TEXT_WIDTH = 100


@dataclass(frozen=True)
class Result:
    """The graded submission; its feedback is already in the output cell above."""

    submission: Submission

    @property
    def id(self) -> Any:
        return self.submission.get("id")

    @property
    def verdict(self) -> str | None:
        return self.submission.get("verdict")

    @property
    def score(self) -> float | None:
        return self.submission.get("score")

    def __repr__(self) -> str:
        score = self.score
        shown = "-" if score is None else f"{float(score):g}"
        return f"<ppo-submit submission {self.id} · {self.submission.get('exercise')} · {self.verdict} · {shown} / 100>"


def _shell() -> Any:
    try:
        from IPython import get_ipython
    except ImportError:
        raise UsageError(
            "notebook.submit runs inside a Jupyter kernel (IPython is not installed); "
            "from a terminal, use `ppo-submit FILE`"
        ) from None
    shell = get_ipython()
    if shell is None:
        raise UsageError("notebook.submit runs inside a Jupyter kernel; from a terminal, use `ppo-submit FILE`")
    return shell


class _Cell:
    """The output cell's one display, updated in place (progress, then the feedback)."""

    def __init__(self) -> None:
        self._handle: Any = None

    def show(self, html: str, text: str) -> None:
        try:
            from IPython import get_ipython
            from IPython.display import display
        except ImportError:
            get_ipython = None
        if get_ipython is None or get_ipython() is None:  # a plain interpreter: the text
            print(text.rstrip("\n"))
            return
        data = {"text/html": html, "text/plain": text}
        if self._handle is None:
            self._handle = display(data, raw=True, display_id=True)
        else:
            self._handle.update(data, raw=True)

    def message(self, text: str, kind: str = "error") -> None:
        from . import html

        self.show(html.message_html(text, kind=kind), f"{kind}: {text}" if kind in ("error", "warning") else text)


def _notebook_name(shell: Any) -> str:
    """The notebook's file name where the front end tells the kernel (JupyterLab, VS Code)."""
    for key in ("__session__", "__vsc_ipynb_file__"):
        value = shell.user_ns.get(key)
        if isinstance(value, str) and value.endswith(".ipynb"):
            return PurePath(value).name
    return DEFAULT_FILENAME


def _exercise_for(function: str, catalogue: list[Any]) -> str:
    """The slug of the exercise whose function is ``function``; a sentence otherwise."""
    from notebook_format.functions import suggest

    functions = {str(e.get("function")): str(e.get("slug")) for e in catalogue}
    if function in functions:
        return functions[function]
    near = suggest(function, functions)
    if near:
        raise UsageError(
            f"{function} is not an exercise's function: did you mean {near} (exercise "
            f'{functions[near]})? Rename it, or pass exercise="{functions[near]}"'
        )
    raise UsageError(
        f'{function} is none of the exercise functions ({", ".join(sorted(functions))}); pass exercise="SLUG"'
    )


def _send(
    client: Client,
    book: Any,
    function: str,
    slug: str,
    source: str,
    filename: str,
    course: str | None,
    *,
    timeout: float,
    yes: bool,
) -> Submission:
    """One ``POST /submissions`` holding up to ``LONG_POLL_SECONDS`` for the verdict, as
    ``ppo-submit FILE`` sends it: ``late=ask`` unless ``yes`` (the server's 409
    ``LateNotConfirmed`` is the caller's to show), the kept catalogue's version (``book``, a
    ``catalogue_cache.Catalogue``; None for a named exercise); a 409 ``CatalogueChanged`` reads
    the catalogue again and sends once more."""
    for _ in range(2):  # at most one stale catalogue
        try:
            return client.submit(
                slug,
                source,
                filename=filename,
                course=course,
                wait=min(LONG_POLL_SECONDS, timeout),
                late="send" if yes else "ask",
                catalogue=book.version if book is not None else None,
            )
        except CatalogueChanged:
            if book is None:
                raise
            slug = _exercise_for(function, book.refresh())
    raise UsageError("the server refused the submission again; try again")


def source(function: Any) -> str:
    """Exactly what ``submit(function)`` would send, sending nothing (no server is needed)."""
    from .kernel import kernel_module

    return kernel_module(_shell(), function)[1].source


def submit(
    function: Any,
    *,
    exercise: str | None = None,
    server: str | None = None,
    token: str | None = None,
    course: str | None = None,
    timeout: float = 600.0,
    yes: bool = False,
) -> Result | None:
    """Send ``function`` (a function defined in a cell, or its name) and show the feedback.

    ``exercise`` is found from the function's name unless given; ``yes`` sends late work
    without asking. Returns the graded submission, or None when nothing was graded (the
    reason is one sentence in the output cell).
    """
    cell = _Cell()
    try:
        return _submit(
            cell, function, exercise=exercise, server=server, token=token, course=course, timeout=timeout, yes=yes
        )
    except (ClientError, SourceError) as exc:
        cell.message(exc.message)
        return None


def _submit(
    cell: _Cell,
    function: Any,
    *,
    exercise: str | None,
    server: str | None,
    token: str | None,
    course: str | None,
    timeout: float,
    yes: bool,
) -> Result | None:
    from . import catalogue_cache, config, html, render
    from . import courses as course_view
    from .kernel import kernel_module
    from .locations import CellLocator

    shell = _shell()
    name, built = kernel_module(shell, function)
    creds = config.resolve(server or os.environ.get("PPO_GRADER_URL"), token or os.environ.get("PPO_GRADER_TOKEN"))
    filename = _notebook_name(shell)
    locator = CellLocator(filename, built.line_map)
    assert creds.server is not None
    with Client(creds.server, creds.token) as client:
        course = config.default_course(course or os.environ.get("PPO_GRADER_COURSE"))

        def progress(sub: Submission, elapsed: float) -> None:
            line = f"Submission {sub.get('id', '?')} ({slug}): {render.status_text(sub, elapsed)}"
            cell.show(html.progress_html(line), line)

        # The terminal's one request: the exercise matched in the kept catalogue (none read when
        # named), the verdict waited for inside the POST, the late question answered by the
        # server's 409 (LateNotConfirmed) and ``yes``, a stale catalogue by its 409 (CatalogueChanged).
        book: catalogue_cache.Catalogue | None = None
        if exercise:
            slug = exercise
        else:
            book = catalogue_cache.Catalogue(client, catalogue_cache.entry_key(client.server, client.token or ""))
            slug = book.match(lambda exercises: _exercise_for(name, exercises))
        waiting_line = f"Submission ({slug}): sent, waiting for the verdict…"
        cell.show(html.progress_html(waiting_line), waiting_line)  # the POST itself may hold a few seconds
        started = client.now()
        try:
            created = _send(client, book, name, slug, built.source, filename, course, timeout=timeout, yes=yes)
        except LateNotConfirmed as refused:
            warning = (
                course_view.late_warning(refused.course, refused.window) or "This submission is past its due date."
            )
            cell.message(f"{warning} Not sent: pass yes=True (or --yes) to send it late.", kind="warning")
            return None
        except KeyboardInterrupt:
            cell.message("stopped; the submission may be stored and graded: see `ppo-submit history`", kind="note")
            return None
        final = created
        if created.get("status") != "done":
            try:
                final = client.wait(created, timeout=timeout, on_update=progress, start=started)
            except KeyboardInterrupt:
                cell.message(
                    f"stopped waiting; submission {created.get('id')} is still graded: see "
                    f"`ppo-submit show {created.get('id')}`",
                    kind="note",
                )
                return None
    page = html.submission_html(final, locator=locator)
    text = render.plain_text(render.submission_result(final, locator=locator), TEXT_WIDTH)
    note = course_view.late_note(final)
    if note is not None:
        page += html.message_html(note, kind="warning")
        text += f"late: {note}\n"
    cell.show(page, text)
    return Result(final)


# --------------------------------------------------------------------------- %ppo_submit


class _UsageExit(Exception):
    """A magic line argparse cannot read (raised instead of exiting the kernel's process)."""


class _MagicParser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse would print and call sys.exit
        raise _UsageExit(message)


def _magic_parser() -> argparse.ArgumentParser:
    parser = _MagicParser(prog="%ppo_submit", add_help=False)
    parser.add_argument("function")
    parser.add_argument("--exercise", "-e")
    parser.add_argument("--server")
    parser.add_argument("--token")
    parser.add_argument("--course")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--yes", "-y", action="store_true")
    parser.add_argument("--show-source", action="store_true")
    return parser


def ppo_submit_magic(line: str) -> None:
    """``%ppo_submit compute_gae [--exercise SLUG] [--course C] [--yes] [--show-source]``."""
    try:
        args = _magic_parser().parse_args(shlex.split(line))
    except (_UsageExit, argparse.ArgumentError, ValueError) as exc:
        _Cell().message(f"{exc}; usage: %ppo_submit FUNCTION [--exercise SLUG] [--course C] [--yes] [--show-source]")
        return
    if args.show_source:
        try:
            print(source(args.function), end="")
        except (ClientError, SourceError) as exc:
            _Cell().message(exc.message)
        return
    submit(
        args.function,
        exercise=args.exercise,
        server=args.server,
        token=args.token,
        course=args.course,
        timeout=args.timeout,
        yes=args.yes,
    )


def load_ipython_extension(shell: Any) -> None:
    """``%load_ext ppo_submit``: registers ``%ppo_submit``."""
    shell.register_magic_function(ppo_submit_magic, magic_kind="line", magic_name="ppo_submit")
