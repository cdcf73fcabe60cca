"""Similarity fixtures: the course fixtures (an app with a settable clock on SQLite and
PostgreSQL) and the planted corpus of hand-written kl-penalty solutions."""

from __future__ import annotations

from pathlib import Path

from tests.server.courses.conftest import *  # noqa: F403  (term, clock, settings, grader, db_backend...)

CORPUS = Path(__file__).resolve().parent / "corpus" / "kl_penalty"


def corpus() -> dict[str, str]:
    """learner name -> source: l01..l27 wrote their own; l28, l29, l30 copied (see file names)."""
    return {path.name.split("_")[0].removesuffix(".py"): path.read_text() for path in sorted(CORPUS.glob("*.py"))}


#: The planted pairs (the original's author, the copier).
PLANTED = {("l03", "l28"), ("l07", "l29"), ("l12", "l30")}
