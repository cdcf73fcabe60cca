"""All tables; importing this module registers them on ``Base.metadata``."""

from exercises.report import Verdict
from server.models.base import Base, utcnow
from server.models.best_score import BestScore
from server.models.course import (
    DEFAULT_COURSE_ID,
    DEFAULT_COURSE_SLUG,
    Course,
    Enrollment,
    Extension,
    FeedbackToken,
    SetEntry,
)
from server.models.similarity import ReviewMark, RunStatus, SimilarityPair, SimilarityReview, SimilarityRun
from server.models.submission import CheckResult, Status, Submission
from server.models.user import ApiToken, Role, User

__all__ = [
    "DEFAULT_COURSE_ID",
    "DEFAULT_COURSE_SLUG",
    "ApiToken",
    "Base",
    "BestScore",
    "CheckResult",
    "Course",
    "Enrollment",
    "Extension",
    "FeedbackToken",
    "ReviewMark",
    "Role",
    "RunStatus",
    "SetEntry",
    "SimilarityPair",
    "SimilarityReview",
    "SimilarityRun",
    "Status",
    "Submission",
    "User",
    "Verdict",
    "utcnow",
]
