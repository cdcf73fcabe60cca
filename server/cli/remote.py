"""``ppo-grader --server URL``: the course commands from a laptop, through a server's HTTP API.

A staff member with no shell on the server host runs the same commands with ``--server URL``
(or ``PPO_GRADER_URL``) and their own token in ``PPO_GRADER_TOKEN`` (an instructor's or a TA's;
``ppo-grader users token --scope read`` makes one that may only read). The commands of
:data:`REMOTE_COMMANDS` then ask the API instead of the database, and print the same lines with
the same exit codes: each command has one implementation of its output, fed the same wire
types (``server.courses.schemas``, ``server.regrades.schemas``) by the database on the host
and by the API here.

- ``--server`` with any other command is refused, naming those that run remotely.
- ``PPO_GRADER_URL`` (with ``PPO_GRADER_TOKEN``) sends the commands of :data:`REMOTE_COMMANDS`
  to that server; the others keep using this installation's database, as before.
- A refusal of the server (403 outside the token's scope, 404, 422...) is one red line and
  exit code 2, as every error of a command is (``common.fail``).

This module imports httpx only when a command calls the server: the host's commands never do.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from server.cli import common

if TYPE_CHECKING:
    import httpx

#: The commands that run against a server, as typed after ``ppo-grader``.
REMOTE_COMMANDS = (
    "courses gradebook",
    "courses staff add",
    "courses staff remove",
    "extensions grant",
    "regrade apply",
    "regrade cancel",
    "regrade list",
    "regrade preview",
    "regrade show",
    "regrade status",
    "scores excuse",
    "scores list",
    "scores override",
    "scores undo",
    "sets hold",
    "sets list",
    "sets publish",
    "sets release",
    "sets remove",
    "similarity",
)
URL_ENV = "PPO_GRADER_URL"
TOKEN_ENV = "PPO_GRADER_TOKEN"
API_PREFIX = "/api/v1"
#: How long one request may take (a gradebook of a large course is one request).
TIMEOUT_SECONDS = 120.0


@dataclass(frozen=True)
class Server:
    """The server a command runs against, and the token it signs in with."""

    url: str
    token: str

    def get(self, path: str, **params: str | None) -> Any:
        """``GET`` the API's ``path`` (``None`` parameters left out); its JSON."""
        return self._call("GET", path, params).json()

    def text(self, path: str, **params: str | None) -> str:
        """``GET`` a file of the API (a gradebook's CSV); its text."""
        return self._call("GET", path, params).text

    def send(self, method: str, path: str, body: dict[str, Any], **params: str | None) -> Any:
        """``PUT`` or ``POST`` a JSON body; the answer's JSON."""
        return self._call(method, path, params, body).json()

    def delete(self, path: str, **params: str | None) -> Any:
        """``DELETE`` the API's ``path``; the answer's JSON."""
        return self._call("DELETE", path, params).json()

    def _call(
        self, method: str, path: str, params: dict[str, str | None], body: dict[str, Any] | None = None
    ) -> httpx.Response:
        import httpx

        query = {key: value for key, value in params.items() if value is not None}
        try:
            with httpx.Client(
                base_url=self.url + API_PREFIX,
                headers={"Authorization": f"Bearer {self.token}", "Accept": "application/json"},
                timeout=TIMEOUT_SECONDS,
            ) as http:
                answer = http.request(method, path, params=query, json=body)
        except httpx.HTTPError as exc:
            common.fail(f"cannot reach the server {self.url}: {exc.__class__.__name__}: {exc}")
        if answer.status_code >= 400:
            common.fail(refusal(answer))
        return answer


def refusal(answer: httpx.Response) -> str:
    """A refused request in one line: what the server said, its status and error name."""
    try:
        wire = answer.json()
    except ValueError:
        wire = None
    if isinstance(wire, dict) and isinstance(wire.get("detail"), str):
        name = wire.get("error")
        detail = wire["detail"]
    else:
        name, detail = None, answer.text[:300] or answer.reason_phrase
    said = " ".join(str(detail).split())
    return f"the server refused this ({answer.status_code}{' ' + name if isinstance(name, str) else ''}): {said}"


#: The server of this invocation (None: the database), set by the root before the command runs.
CHOSEN: dict[str, Server | None] = {"server": None}


def choose(explicit: str | None, command: str | None) -> None:
    """Decide where ``command`` (``"scores list"``) runs: on ``explicit`` (``--server``), on
    ``PPO_GRADER_URL`` when it and ``PPO_GRADER_TOKEN`` are set and the command runs remotely,
    else on the database. ``--server`` with a command that does not run remotely is refused.
    ``command`` None: a command's ``--help``, which runs anywhere."""
    CHOSEN["server"] = None
    if command is None:
        return
    remote = command in REMOTE_COMMANDS
    if explicit is not None and not remote:
        common.fail(
            f"`ppo-grader {command or ''}` does not run against a server (--server); these do: "
            + ", ".join(REMOTE_COMMANDS)
            + ". Run it on the server's host."
        )
    token = os.environ.get(TOKEN_ENV, "").strip()
    url = explicit if explicit is not None else (os.environ.get(URL_ENV, "").strip() if remote and token else "")
    if not url:
        return
    if not token:
        common.fail(f"--server needs your token in {TOKEN_ENV} (an instructor's or a TA's).")
    CHOSEN["server"] = Server(_normalised(url), token)


def _normalised(url: str) -> str:
    """The server's address as given, without a trailing slash nor the API's prefix; refused
    when it is no http(s) address."""
    base = url.strip().rstrip("/").removesuffix(API_PREFIX)
    if not base.startswith(("http://", "https://")):
        common.fail(f"--server is an http:// or https:// address, not {url[:80]!r}.")
    return base


def target() -> Server | None:
    """The server this command runs against, or None for this installation's database."""
    return CHOSEN["server"]


def part(value: str) -> str:
    """One segment of an API path (a course's or a learner's name), quoted."""
    return quote(value, safe="")
