"""Results of ``ppo-grader exercises verify``: the pack gate's record, by content version.

One row per exercise verified, passed or not; ``sets publish`` looks for a passed row at the
exercise's current content version (:func:`exercises.versions.content_version`), so an edit of
a pack's reference, checks or faults needs a new verify before the exercise can be published.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKeyConstraint, Index, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from server.models.base import Base, UTCDateTime, utcnow


class ExerciseVerification(Base):
    """One exercise through the gate: at which content and grader version, and whether it passed."""

    __tablename__ = "exercise_verifications"
    __table_args__ = (Index("ix_exercise_verifications_exercise_content_version", "exercise", "content_version"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    #: The exercise's id (its slug).
    exercise: Mapped[str] = mapped_column(String(64))
    content_version: Mapped[str] = mapped_column(String(16))
    grader_version: Mapped[str] = mapped_column(String(16))
    #: The pack it came from, for the instructor reading the record (display text).
    pack: Mapped[str] = mapped_column(String(512))
    passed: Mapped[bool] = mapped_column(default=False)
    verified_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    #: The gate's criteria with their problems (exercises.verify.Verification.summary; bounded).
    summary: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)


class ExerciseVersion(Base):
    """A verified exercise version, stored whole and never changed (issue 32): what the service,
    its workers and its regrades grade with, whatever the pack's folder holds now.

    Written when ``exercises verify`` passes; the verify records of the same
    ``(exercise, content_version)`` are its verify results.
    """

    __tablename__ = "exercise_versions"
    __table_args__ = (UniqueConstraint("exercise", "content_version"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    exercise: Mapped[str] = mapped_column(String(64))
    content_version: Mapped[str] = mapped_column(String(16))
    #: The pack it was verified from (display text) and the exercise folder's name.
    pack: Mapped[str] = mapped_column(String(512))
    folder: Mapped[str] = mapped_column(String(255))
    #: Every Python file of the exercise folder (starter included), by path relative to it.
    files: Mapped[dict[str, str]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class ServedVersion(Base):
    """The stored, verified version of a pack exercise that grades wherever no set pins one:
    the default course's open exercises, and sets published before versions were stored
    (issue 32). It is the version the service first served, verified then (``serve`` runs the
    gate on a folder's version it sees for the first time; a first passing ``exercises verify``
    records it too), and nothing moves it afterwards: a later version reaches learners only
    through ``sets publish`` (the default course's set included), never through the folder.
    """

    __tablename__ = "served_versions"
    __table_args__ = (
        ForeignKeyConstraint(
            ["exercise", "content_version"], ["exercise_versions.exercise", "exercise_versions.content_version"]
        ),
    )

    #: The exercise's id (its slug): one served version each.
    exercise: Mapped[str] = mapped_column(String(64), primary_key=True)
    content_version: Mapped[str] = mapped_column(String(16))
    recorded_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class ServiceSetting(Base):
    """One setting of the service that every command reads from the database it uses, so that
    no command depends on a variable in its shell (issue 32): ``exercise_packs`` (the pack
    folders ``serve`` was configured with)."""

    __tablename__ = "service_settings"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[Any] = mapped_column(JSON, nullable=True)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, onupdate=utcnow)
