"""What LTI answers when it cannot do what was asked; each carries a message safe to show.

Tree (every class a ``server.errors.GraderError``, so the API and the CLI print it as they
print any other; the launch pages show ``title`` and ``detail`` on a short page)::

    LtiError
    ├── LaunchRefused            400/401/403  a login or launch that fails validation (forged,
    │                                          replayed, expired, unknown key, unregistered deployment,
    │                                          not a member of the course): ``title`` names why;
    │                            503           too many launches waiting on the LMS's key set
    │                                          (``retry_after``: sent as ``Retry-After``)
    ├── PlatformNotFound         404  no registration for that issuer (and client id)
    ├── PlatformAlreadyExists    409
    ├── InvalidRegistration      422  what an administrator entered: a URL that is not https
    │                                  (loopback aside), a missing field
    ├── LmsUnreachable           502  a call to the LMS failed (network, status, bad answer, a URL
    │                                  the LMS named that is not https): nothing is lost, the
    │                                  sync is retried and shown on the dashboard
    └── ToolKeyUnreadable        500  the stored tool key cannot be decrypted (SECRET_KEY changed)
"""

from __future__ import annotations

from server.errors import GraderError


class LtiError(GraderError):
    """Base of the LTI errors."""


class LaunchRefused(LtiError):
    """A login or launch refused: ``title`` is the page's heading, ``detail`` what to do."""

    def __init__(self, title: str, detail: str, status_code: int = 400, *, retry_after: int | None = None) -> None:
        """``retry_after``: seconds after which the same launch may work (a 503), sent as ``Retry-After``."""
        headers = {"Retry-After": str(retry_after)} if retry_after is not None else None
        super().__init__(detail, status_code=status_code, headers=headers)
        self.title = title


class PlatformNotFound(LtiError):
    status_code = 404


class PlatformAlreadyExists(LtiError):
    status_code = 409


class InvalidRegistration(LtiError):
    status_code = 422


class LmsUnreachable(LtiError):
    """``status``: the HTTP status the LMS answered with, when it answered (None: no answer,
    or an answer that could not be used)."""

    status_code = 502

    def __init__(self, detail: str, *, status: int | None = None) -> None:
        super().__init__(detail)
        self.status = status


class ToolKeyUnreadable(LtiError):
    """The stored key cannot be decrypted with this SECRET_KEY."""

    status_code = 500

    def __init__(self) -> None:
        super().__init__(
            "The LTI tool key cannot be read with this SECRET_KEY (it changed since the key was made): "
            "run `ppo-grader lti rotate-key`; platforms fetch the new key from /lti/jwks by themselves."
        )
