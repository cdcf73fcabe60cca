"""A course's submissions out, for archives and offline review: a zip of each learner's
latest and counted sources per exercise, with a manifest CSV.

Layout: ``<learner>/<exercise>/latest-<id>.py`` and ``<learner>/<exercise>/counted-<id>.py``
(one file when the latest submission is the one that counts), and ``manifest.csv`` with
one row per file: learner, exercise, submission, role (``latest``/``counted``), raw score,
counted score (the score that counts for the exercise: ``server.courses.counted``), late,
submitted at (ISO UTC), path. Learner logins and exercise slugs are restricted to safe
characters by their own rules, so they are safe as path parts.
"""

from __future__ import annotations

import csv
import io
import zipfile
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from server.courses.counted import course_scores
from server.leaderboard.service import learner_ids
from server.models import Course, Submission, User, aware_utc

MANIFEST = ["learner", "exercise", "submission", "role", "raw_score", "counted_score", "late", "submitted_at", "path"]


@dataclass(frozen=True)
class Exported:
    """What went into the zip."""

    learners: int
    files: int


def export_zip(
    session: Session, course: Course, out: io.BufferedIOBase | io.BytesIO, exercise: str | None = None
) -> Exported:
    """Write the course's zip (only ``exercise`` when given) to ``out``."""
    S = Submission
    where = [S.course_id == course.id, S.user_id.in_(learner_ids(course.id))]
    if exercise is not None:
        where.append(S.exercise == exercise)
    latest_ids = select(func.max(S.id)).where(*where).group_by(S.user_id, S.exercise)
    scores = course_scores(session, course, exercises=None if exercise is None else [exercise])
    counted_ids = {s.counting.submission_id for s in scores.values() if s.counting is not None}
    # The columns the zip needs, not whole rows: a submission's stdout, stderr and timings (JSON)
    # are most of its bytes, and building thousands of ORM objects was most of the export's time.
    wanted = (
        session.execute(
            select(S.id, S.user_id, S.exercise, S.source, S.score, S.late_seconds, S.created_at, User.name)
            .join(User, User.id == S.user_id)
            .where(*where, S.id.in_(latest_ids) | S.id.in_(list(counted_ids)))
            .order_by(User.name, S.exercise, S.id)
        )
        .tuples()
        .all()
    )
    latest = set(session.scalars(latest_ids))
    manifest = io.StringIO()
    writer = csv.writer(manifest, lineterminator="\r\n")
    writer.writerow(MANIFEST)
    files = 0
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for sid, user_id, slug, source, raw, late_seconds, created_at, name in wanted:
            score = scores.get((user_id, slug))
            counted = "" if score is None or score.counted is None else f"{score.counted:g}"
            roles = [r for r, inside in (("latest", sid in latest), ("counted", sid in counted_ids)) if inside]
            role = "+".join(roles)
            path = f"{name}/{slug}/{role.replace('+', '-')}-{sid}.py"
            archive.writestr(path, source)
            at = aware_utc(created_at)
            writer.writerow(
                [
                    name,
                    slug,
                    sid,
                    role,
                    "" if raw is None else f"{raw:g}",
                    counted,
                    "yes" if late_seconds is not None else "no",
                    at.isoformat() if at else "",
                    path,
                ]
            )
            files += 1
        archive.writestr("manifest.csv", manifest.getvalue())
    return Exported(len({row[-1] for row in wanted}), files)
