"""LTI 1.3: the platforms (LMSes) this tool is registered with, the tool's own signing keys,
one-time login states, and what links the LMS's people, courses and gradebook columns to ours.

A platform is identified by its issuer and the client id it gave this tool; a launch is
accepted only for one of its registered deployment ids. An LMS course (its ``context``, within
one deployment) is linked to one of our courses; an LMS user (``sub``, per platform) to one of
our users. Nothing here is keyed by an email or a name the LMS sends: those are display text.

The tool's private keys are stored encrypted under a key derived from SECRET_KEY
(``server.lti.keys``); the database alone cannot sign as the tool.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import CheckConstraint, Float, ForeignKey, Index, String, Text, UniqueConstraint, false
from sqlalchemy.orm import Mapped, mapped_column

from server.models.base import Base, UTCDateTime, utcnow

#: Longest URL kept from a registration or a launch claim.
MAX_URL_CHARS = 2000
#: Longest error text kept about a failed call to an LMS (shown on the dashboard).
MAX_ERROR_CHARS = 500


class LtiToolKey(Base):
    """One RSA key the tool signs with (its client assertions and deep-linking responses).

    The newest unretired key signs; retired keys stay published in ``/lti/jwks`` for a while,
    so a platform that cached the old set still verifies what was signed just before a rotation.
    """

    __tablename__ = "lti_tool_keys"

    id: Mapped[int] = mapped_column(primary_key=True)
    kid: Mapped[str] = mapped_column(String(128), unique=True)
    #: The private JWK as JSON, encrypted (a compact JWE, ``dir`` + A256GCM).
    private_key: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    retired_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class LtiPlatform(Base):
    """An LMS registration: who it is (issuer, the client id it gave us) and its endpoints.

    ``jwks`` caches the platform's key set (refreshed when a launch names an unknown key id,
    its signature fails with the cached key, or ``jwks_fetched_at`` is older than the
    ``LTI_JWKS_MAX_AGE_SECONDS`` setting); ``jwks_miss_at`` is when a refresh last failed to
    find one, so an attacker's made-up key ids or bad signatures cannot make the tool fetch the
    set on every request.
    """

    __tablename__ = "lti_platforms"
    __table_args__ = (UniqueConstraint("issuer", "client_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    issuer: Mapped[str] = mapped_column(String(MAX_URL_CHARS))
    client_id: Mapped[str] = mapped_column(String(255))
    #: The OIDC authorization endpoint (the browser is sent there from ``/lti/login``).
    auth_login_url: Mapped[str] = mapped_column(String(MAX_URL_CHARS))
    #: The OAuth2 token endpoint (client credentials, for NRPS and AGS).
    auth_token_url: Mapped[str] = mapped_column(String(MAX_URL_CHARS))
    jwks_url: Mapped[str] = mapped_column(String(MAX_URL_CHARS))
    jwks: Mapped[str | None] = mapped_column(Text)
    jwks_fetched_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    jwks_miss_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    #: The last failed call to one of the platform's own services (``token``: its OAuth2 token
    #: URL, ``jwks``: its key set URL), when, and why (capped); cleared by that service's next
    #: success (``server.lti.platforms.service_failed``). Shown by ``ppo-grader lti platforms``
    #: and on the course's LMS page.
    failed_service: Mapped[str | None] = mapped_column(String(16))
    failed_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    failure: Mapped[str | None] = mapped_column(String(MAX_ERROR_CHARS))


class LtiDeployment(Base):
    """A deployment id of a platform: a launch naming any other is refused."""

    __tablename__ = "lti_deployments"
    __table_args__ = (UniqueConstraint("platform_id", "deployment_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    platform_id: Mapped[int] = mapped_column(ForeignKey("lti_platforms.id", ondelete="CASCADE"))
    deployment_id: Mapped[str] = mapped_column(String(255))


class LtiLogin(Base):
    """One OIDC login spent: the nonce of a launch whose id_token verified (``state``: a digest
    of the signed state it came with), recorded in one ``INSERT ... ON CONFLICT DO NOTHING`` so
    it is used at most once. ``/lti/login`` stores nothing (``server.lti.launch``)."""

    __tablename__ = "lti_logins"

    id: Mapped[int] = mapped_column(primary_key=True)
    state: Mapped[str] = mapped_column(String(64), unique=True)
    nonce: Mapped[str] = mapped_column(String(64), unique=True)
    platform_id: Mapped[int] = mapped_column(ForeignKey("lti_platforms.id", ondelete="CASCADE"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)
    used_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class LtiUser(Base):
    """An LMS user (their ``sub`` on one platform) and the account made for them here."""

    __tablename__ = "lti_users"

    platform_id: Mapped[int] = mapped_column(ForeignKey("lti_platforms.id", ondelete="CASCADE"), primary_key=True)
    sub: Mapped[str] = mapped_column(String(255), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    email: Mapped[str | None] = mapped_column(String(255))


class LtiContext(Base):
    """An LMS course (a context of the platform) linked to one of our courses, with the
    service endpoints its launches named and the state of its grade sync. ``deployment_id`` is
    the installation whose launch made the link; another installation's launches from the same
    LMS course use it too (``server.lti.accounts.linked_context``).

    ``auto_grades``: every change of a score that counts is sent by a background job
    (``server.lti.jobs``); off, an instructor previews and applies. ``sync_error`` says why the
    last sync failed (shown on the course's LTI page) and ``next_sync_at`` when it is retried.
    """

    __tablename__ = "lti_contexts"
    __table_args__ = (UniqueConstraint("platform_id", "deployment_id", "context_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    platform_id: Mapped[int] = mapped_column(ForeignKey("lti_platforms.id", ondelete="CASCADE"))
    deployment_id: Mapped[str] = mapped_column(String(255))
    context_id: Mapped[str] = mapped_column(String(255))
    course_id: Mapped[int] = mapped_column(ForeignKey("courses.id", ondelete="CASCADE"), unique=True)
    title: Mapped[str] = mapped_column(String(200))
    memberships_url: Mapped[str | None] = mapped_column(String(MAX_URL_CHARS))
    lineitems_url: Mapped[str | None] = mapped_column(String(MAX_URL_CHARS))
    #: The AGS scopes the platform granted in the last launch (space-separated).
    ags_scopes: Mapped[str] = mapped_column(String(1000), default="")
    auto_grades: Mapped[bool] = mapped_column(default=False, server_default=false())
    roster_synced_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    grades_synced_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    sync_error: Mapped[str | None] = mapped_column(String(MAX_ERROR_CHARS))
    sync_failed_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    sync_attempts: Mapped[int] = mapped_column(default=0, server_default="0")
    next_sync_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    #: An instructor asked (the LTI page's button) to send what the preview shows.
    send_requested_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class LtiMember(Base):
    """A person of a linked course as the LMS last said (a launch or the roster service):
    their LMS roles and whether they are still in it. A learner the LMS no longer lists is
    marked ``dropped``, never deleted: their submissions and scores stay."""

    __tablename__ = "lti_members"
    __table_args__ = (CheckConstraint("status IN ('active', 'dropped')", name="status"),)

    context_id: Mapped[int] = mapped_column(ForeignKey("lti_contexts.id", ondelete="CASCADE"), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    #: The LMS's role URIs, space-separated (capped).
    roles: Mapped[str] = mapped_column(String(1000))
    status: Mapped[str] = mapped_column(String(16), default="active")
    seen_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class LtiLineItem(Base):
    """The LMS's gradebook column for one exercise of a linked course (its AGS line item URL),
    found by resource id and tag, or created once (``server.lti.lineitems``).

    ``url`` None: no column known yet. With ``claimed_at`` None, a deep-linking answer asked
    the LMS to make it; with ``claimed_at`` set, a job is creating it at the LMS since then
    (its claim, taken and given up by compare-and-set on this row)."""

    __tablename__ = "lti_line_items"
    __table_args__ = (UniqueConstraint("context_id", "exercise"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    context_id: Mapped[int] = mapped_column(ForeignKey("lti_contexts.id", ondelete="CASCADE"))
    exercise: Mapped[str] = mapped_column(String(64))
    url: Mapped[str | None] = mapped_column(String(MAX_URL_CHARS))
    claimed_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class LtiTask(Base):
    """An instructor's request that the background job ask the LMS (the course's LMS page:
    ``roster``, sync the roster; ``compare``, read what its gradebook has), and how it went.
    One row per course link and kind, reused: ``queued`` -> ``running`` -> ``done`` or
    ``failed`` (``server.lti.tasks``); the page reads it. ``outcome`` says what the job did or
    why it failed (capped); ``lms_results`` is a comparison's reading of the LMS's gradebook
    (JSON, capped)."""

    __tablename__ = "lti_tasks"
    __table_args__ = (
        UniqueConstraint("context_id", "kind"),
        CheckConstraint("kind IN ('roster', 'compare')", name="kind"),
        CheckConstraint("state IN ('queued', 'running', 'done', 'failed')", name="state"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    context_id: Mapped[int] = mapped_column(ForeignKey("lti_contexts.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(16))
    state: Mapped[str] = mapped_column(String(16))
    requested_at: Mapped[datetime] = mapped_column(UTCDateTime())
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    outcome: Mapped[str | None] = mapped_column(String(MAX_ERROR_CHARS))
    lms_results: Mapped[str | None] = mapped_column(Text)


class LtiScoreSent(Base):
    """What was last sent to the LMS for one learner and exercise (and accepted): a new
    score is sent only when the score that counts differs from this."""

    __tablename__ = "lti_scores_sent"

    context_id: Mapped[int] = mapped_column(ForeignKey("lti_contexts.id", ondelete="CASCADE"), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    exercise: Mapped[str] = mapped_column(String(64), primary_key=True)
    #: The score sent (out of 100); None with ``excused``.
    score: Mapped[float | None] = mapped_column(Float)
    excused: Mapped[bool] = mapped_column(default=False)
    submitted_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    sent_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class LtiTicket(Base):
    """A one-time pass from a launch to a signed-in page: the launch answers inside the LMS's
    frame or on a cross-site POST, where the site's SameSite=Strict session cookie cannot be
    set or sent; opening ``/lti/continue/<token>`` (same site, top level) sets it once."""

    __tablename__ = "lti_tickets"
    __table_args__ = (Index("ix_lti_tickets_expires_at", "expires_at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    token: Mapped[str] = mapped_column(String(64), unique=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    api_token_id: Mapped[int] = mapped_column(ForeignKey("api_tokens.id", ondelete="CASCADE"))
    destination: Mapped[str] = mapped_column(String(MAX_URL_CHARS))
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
    used_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class LtiDeepLink(Base):
    """A deep-linking request waiting for the instructor's choice: where to send the answer
    (``return_url``), the platform's opaque ``data``, and who asked. Used at most once."""

    __tablename__ = "lti_deep_links"
    __table_args__ = (Index("ix_lti_deep_links_expires_at", "expires_at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    token: Mapped[str] = mapped_column(String(64), unique=True)
    context_id: Mapped[int] = mapped_column(ForeignKey("lti_contexts.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    return_url: Mapped[str] = mapped_column(String(MAX_URL_CHARS))
    #: The platform's opaque ``data`` as JSON, given back in the answer.
    data: Mapped[str | None] = mapped_column(String(2000))
    #: The deployment (installation) the request came from, named by the answer (None: the
    #: link's; a course launched from two installations is one link: ``server.lti.accounts``).
    deployment_id: Mapped[str | None] = mapped_column(String(255))
    accept_multiple: Mapped[bool] = mapped_column(default=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
    used_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
