"""The gradebook files there are, by the names ``ppo-grader courses gradebook`` takes, and the check
of those names: a rule of its arguments, so that the command refuses a wrong name before it
reads a database or calls a server (and a command run from a laptop loads no table for it)."""

from __future__ import annotations

from typing import Literal

from server.errors import InvalidExport

#: The files ``gradebook.service.export_csv`` writes, by the name the CLI takes.
FORMATS = ("long", "canvas", "moodle")
#: Where the Canvas file puts our login: the Canvas column whose values the logins are.
LoginColumn = Literal["sis-login-id", "sis-user-id"]
LOGIN_COLUMNS: dict[str, str] = {"sis-login-id": "SIS Login ID", "sis-user-id": "SIS User ID"}


def check_export(format: str, login_column: str) -> None:
    """Refuse a file name or a login column there is none of (``InvalidExport``), as
    ``ppo-grader courses gradebook`` names them, on the host and against a server alike."""
    if format not in FORMATS:
        raise InvalidExport(f"--format is one of {', '.join(FORMATS)}, not {format[:40]!r}.")
    if login_column not in LOGIN_COLUMNS:
        raise InvalidExport(f"--login-column is one of {', '.join(LOGIN_COLUMNS)}, not {login_column[:40]!r}.")
