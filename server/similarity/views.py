"""Stored runs and pairs as wire types: one translation for the API, the CLI and the pages."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.models import SimilarityPair, SimilarityRun, Submission
from server.similarity.schemas import ExerciseSimilarity, PairPublic, RunPublic, SideBySide
from server.similarity.service import RankedPair


def run_public(run: SimilarityRun | None) -> RunPublic | None:
    """A run's state and what it compared."""
    if run is None:
        return None
    summary = run.summary or {}
    return RunPublic(
        id=run.id,
        status=run.status,  # type: ignore[arg-type]  # the column holds the enum's value; pydantic validates it
        reason=run.reason,  # type: ignore[arg-type]  # the column holds the enum's value; pydantic validates it
        requested_at=run.requested_at,
        finished_at=run.finished_at,
        exercises=list(summary.get("exercises", [])),
        learners=int(summary.get("learners", 0)),
        submissions=int(summary.get("submissions", 0)),
        pairs_found=int(summary.get("pairs_found", 0)),
        pairs_stored=int(summary.get("pairs_stored", 0)),
        message=run.message,
    )


def pair_public(ranked: RankedPair) -> PairPublic:
    """A ranked pair, its exercises most similar first."""
    pair = ranked.pair
    exercises = sorted(
        (
            ExerciseSimilarity(
                exercise=slug,
                similarity=float(m["similarity"]),
                submission_a=int(m["submission_a"]),
                submission_b=int(m["submission_b"]),
                shared=int(m["shared"]),
            )
            for slug, m in pair.exercises.items()
        ),
        key=lambda e: (-e.similarity, e.exercise),
    )
    return PairPublic(
        rank=ranked.rank,
        learner_a=ranked.learner_a.name,
        learner_b=ranked.learner_b.name,
        display_name_a=ranked.learner_a.display_name,
        display_name_b=ranked.learner_b.display_name,
        score=pair.score,
        similar_on=pair.similar_on,
        exercises=exercises,
        review=ranked.mark,  # type: ignore[arg-type]
    )


def side_by_side(session: Session, pair: SimilarityPair) -> list[SideBySide]:
    """Both sources of each exercise the pair is similar on, with the matching lines."""
    ids = {int(m[k]) for m in pair.exercises.values() for k in ("submission_a", "submission_b")}
    sources = (
        dict(session.execute(select(Submission.id, Submission.source).where(Submission.id.in_(ids))).tuples().all())
        if ids
        else {}
    )
    out = []
    for slug, m in sorted(pair.exercises.items(), key=lambda item: -float(item[1]["similarity"])):
        a, b = int(m["submission_a"]), int(m["submission_b"])
        out.append(
            SideBySide(
                exercise=slug,
                similarity=float(m["similarity"]),
                submission_a=a,
                submission_b=b,
                source_a=sources.get(a, ""),
                source_b=sources.get(b, ""),
                spans_a=[(int(x), int(y)) for x, y in m.get("spans_a", [])],
                spans_b=[(int(x), int(y)) for x, y in m.get("spans_b", [])],
            )
        )
    return out
