"""Where the client finds its server URL and token.

Precedence, strongest first: the ``--server`` / ``--token`` options, the ``PPO_GRADER_URL``
/ ``PPO_GRADER_TOKEN`` environment variables (both read by the CLI's options), then the
file ``ppo-submit login`` writes: ``config.json`` in platformdirs'
``user_config_dir("ppo-submit")``, readable by its owner only (mode 0600).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from platformdirs import user_config_dir

from .api import NotLoggedIn, UsageError

APP_NAME = "ppo-submit"
FILE_NAME = "config.json"
LOGIN_HINT = "run `ppo-submit login --server URL --token TOKEN` (or set PPO_GRADER_URL and PPO_GRADER_TOKEN)"


@dataclass(frozen=True)
class Credentials:
    """A server URL and the token to present to it; either may be missing in a stored file."""

    server: str | None = None
    token: str | None = None
    #: The course submissions go to when ``--course`` is not given (``login --course``).
    course: str | None = None


def config_path() -> Path:
    """The config file's path for the current user (it may not exist)."""
    return Path(user_config_dir(APP_NAME)) / FILE_NAME


def load(path: Path | None = None) -> Credentials:
    """Read the stored credentials; an absent file gives empty ``Credentials``."""
    path = path or config_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Credentials()
    except OSError as exc:
        raise UsageError(f"cannot read the config file {path}: {exc.strerror or exc}") from exc
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"the config file {path} is not valid JSON; {LOGIN_HINT} again") from exc
    if not isinstance(data, dict):
        raise UsageError(f"the config file {path} is not a JSON object; {LOGIN_HINT} again")
    server, token, course = data.get("server"), data.get("token"), data.get("course")
    return Credentials(
        server=server if isinstance(server, str) and server else None,
        token=token if isinstance(token, str) and token else None,
        course=course if isinstance(course, str) and course else None,
    )


def save(credentials: Credentials, path: Path | None = None) -> Path:
    """Write ``credentials`` atomically to a file only its owner can read; return its path.

    The file is created with mode 0600 (never briefly wider) in a directory created 0700.
    """
    path = path or config_path()
    fields = {"server": credentials.server, "token": credentials.token}
    if credentials.course:
        fields["course"] = credentials.course
    body = json.dumps(fields, indent=2) + "\n"
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(body)
            os.chmod(tmp, 0o600)  # in case the file existed with a wider mode
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise UsageError(f"cannot write the config file {path}: {exc.strerror or exc}") from exc
    return path


def default_course(option: str | None) -> str | None:
    """The course to use: ``--course`` (which falls back to ``PPO_GRADER_COURSE``), else the
    stored default; None leaves the choice to the server (a learner in one course)."""
    return option or load().course


def clean_token(token: str) -> tuple[str, bool]:
    """``token`` without the whitespace a CRLF ``tokens.csv`` or a paste leaves around (or in)
    it, which HTTP headers refuse; and whether there was any (the caller says so)."""
    cleaned = "".join(token.split())
    return cleaned, cleaned != token


def resolve(server: str | None, token: str | None, stored: Credentials | None = None) -> Credentials:
    """Fill what the options/environment left out from the stored file; both must end up set.

    ``server`` and ``token`` are the values of the CLI options, which already fall back to
    the environment variables. Raises ``NotLoggedIn`` when either is still missing.
    """
    if not (server and token):
        stored = stored if stored is not None else load()
        server = server or stored.server
        token = token or stored.token
    if not server or not token:
        missing = "server URL" if not server else "token"
        raise NotLoggedIn(f"not logged in (no {missing}): {LOGIN_HINT}")
    return Credentials(server=server, token=token)
