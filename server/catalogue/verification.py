"""The pack gate on the server's side: verify results recorded by content version, the rule
``sets publish`` applies, and the gate ``serve`` runs on a pack exercise it sees first.

An exercise of a course's pack may be published only once ``ppo-grader exercises verify`` has
passed on it at its current content version. The built-in pack ships with its gate already run:
its exercises are held to the same criteria by the grader's own test suite (``tests/exercises``)
before a release, so they publish without a record.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import select
from sqlalchemy.orm import Session

from exercises.packs import BUILTIN
from exercises.versions import content_version, grader_version
from server.catalogue.versions import newest_verified, passed, record_served, served_version, store_version, stored
from server.errors import ExerciseNotVerified
from server.models import ExerciseVerification

if TYPE_CHECKING:  # types only: `sets publish` and the admin commands must not import torch for them
    from exercises.framework import Exercise
    from exercises.verify import Verification


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
        # The artifact the service grades with once it is published (server.catalogue.versions);
        # the first verified version is also what grades where no set pins one.
        store_version(session, exercise)
        record_served(session, exercise.slug, row.content_version)
    return row


def first_seen(session: Session, exercises: list[Exercise]) -> list[tuple[Exercise, bool]]:
    """The pack exercises with no served version yet (the service sees them first), each with
    whether a verify passed at the folder's version already (else ``serve`` runs the gate)."""
    return [
        (e, passed(session, e.slug, content_version(e)))
        for e in exercises
        if e.pack != BUILTIN and served_version(session, e.slug) is None
    ]


def serve_first(session: Session, exercise: Exercise, verification: Verification | None) -> str:
    """Record the served version of a pack exercise the service sees first: the folder's version,
    verified now (``verification``, recorded here) or before (None); when that fails, the newest
    verified version stored, if any. One sentence for the serve log saying which."""
    version = content_version(exercise)
    if verification is not None:
        record_verification(session, exercise, verification)
    if passed(session, exercise.slug, version):
        store_version(session, exercise)  # a pass recorded before versions were stored had none
        record_served(session, exercise.slug, version)
        how = "verified now" if verification is not None else "verified before"
        return (
            f"exercise {exercise.slug}: first served at content version {version} ({how}); it grades wherever "
            "no set pins a version, and an edit of its folder changes nothing until verified and published"
        )
    fallback = newest_verified(session, exercise.slug)
    if fallback is not None:
        record_served(session, exercise.slug, fallback)
        return (
            f"exercise {exercise.slug}: the pack folder's content version {version} fails verify; it grades with "
            f"{fallback}, the newest verified version stored, wherever no set pins a version"
        )
    return (
        f"exercise {exercise.slug}: the pack folder's content version {version} fails verify and no verified version "
        "of it is stored: nothing grades it (submissions are refused) until one passes `ppo-grader exercises verify`"
    )


def publishable(session: Session, exercise: Exercise) -> bool:
    """Whether ``sets publish`` takes ``exercise`` as it is now (no version named): built in, or
    a pack exercise verified and stored at its content version (what :func:`require_verified`
    and ``server.catalogue.versions.pin`` ask). Reads only; says nothing of why not."""
    if exercise.pack == BUILTIN:
        return True
    version = content_version(exercise)
    return passed(session, exercise.slug, version) and stored(session, exercise.slug, version) is not None


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
