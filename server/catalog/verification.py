"""The pack gate on the server's side: verify results recorded by content version, and the
rule ``sets publish`` applies.

An exercise of a course's pack may be published only once ``ppo-grader exercises verify`` has
passed on it at its current content version. The built-in pack ships with its gate already run:
its exercises are held to the same criteria by the grader's own test suite (``tests/exercises``)
before a release, so they publish without a record.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from exercises.framework import Exercise
from exercises.packs import BUILTIN
from exercises.verify import Verification
from exercises.versions import content_version, grader_version
from server.catalog.versions import store_version
from server.errors import ExerciseNotVerified
from server.models import ExerciseVerification


def record_verification(session: Session, exercise: Exercise, verification: Verification) -> ExerciseVerification:
    """Store one exercise's verify result at its current content and grader version."""
    row = ExerciseVerification(
        exercise=exercise.slug,
        content_version=content_version(exercise),
        grader_version=grader_version(),
        pack=exercise.pack[:512],
        passed=verification.ok,
        summary=verification.summary(),
    )
    session.add(row)
    session.flush()
    if verification.ok and exercise.pack != BUILTIN:
        # The artifact the service grades with once it is published (server.catalog.versions).
        store_version(session, exercise)
    return row


def require_verified(session: Session, exercise: Exercise) -> None:
    """Refuse (409 ``ExerciseNotVerified``) a pack exercise with no passed verify at its content version."""
    if exercise.pack == BUILTIN:
        return
    version = content_version(exercise)
    rows = session.scalars(
        select(ExerciseVerification)
        .where(ExerciseVerification.exercise == exercise.slug)
        .order_by(ExerciseVerification.id.desc())
    ).all()
    if any(r.passed and r.content_version == version for r in rows):
        return
    same = next((r for r in rows if r.content_version == version), None)
    if same is not None:
        why = "its last verify at this version failed"
    elif rows:
        why = f"it was last verified at content version {rows[0].content_version}, and has changed since"
    else:
        why = "it has never been verified"
    raise ExerciseNotVerified(
        f"{exercise.slug!r} (pack {exercise.pack}) cannot be published: {why}. Run `ppo-grader exercises verify "
        f"--pack {exercise.pack}` and fix what it reports (content version {version})."
    )
