"""Reading a learner's file and finding which exercise it answers, without executing it (the
rules for that are shared with the server's upload form: ``notebook_format.functions``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from notebook_format.functions import NOTEBOOK_SUFFIX, defined_functions, match_functions, suggest

from .api import ExerciseSummary, UsageError


def is_notebook(path: Path) -> bool:
    """Whether ``path`` names a notebook (by its suffix, as Jupyter does). Here, not in
    ``notebook_file``, so that sending a ``.py`` file never imports the notebook machinery."""
    return path.suffix.lower() == NOTEBOOK_SUFFIX


def read_source(path: Path, *, commands: Iterable[str] = ()) -> str:
    """Return the text of ``path``; raise ``UsageError`` when it cannot be submitted.

    ``commands`` are the CLI's subcommand names, used to hint at a mistyped command when
    ``path`` does not exist (``ppo-submit exercize`` is dispatched as a file).
    """
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        hint = ""
        if path.suffix == "" and len(path.parts) == 1 and commands:
            near = suggest(str(path), commands)
            hint = (
                f" and no command of that name: did you mean `ppo-submit {near}`?"
                if near
                else f" (and not a command: {', '.join(sorted(commands))})"
            )
        raise UsageError(f"no such file: {path}{hint}") from exc
    except IsADirectoryError as exc:
        raise UsageError(f"{path} is a directory; pass the Python file to submit") from exc
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path} is not UTF-8 text") from exc
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from exc


def match_exercise(source: str, exercises: Sequence[ExerciseSummary], *, filename: str = "the file") -> str:
    """The slug of the one exercise whose ``function`` ``source`` defines.

    Raises ``SourceError`` (telling the user to pass ``--exercise``) when none or several match.
    """
    names, error_line = defined_functions(source)
    return match_functions(
        names, exercises, filename=filename, syntax_error=None if error_line is None else f"line {error_line}"
    )
